"""The folders are the layers: `lint-imports` on a copy of the tree fails when one upward import is planted.

Each case copies synbench and the two plugin packages beside pyproject.toml's contracts into a temporary folder,
adds one import line to one module and runs `lint-imports` there, so the check reads the copy (the current folder
comes first on the path), not the installed tree. The untouched copy keeps every contract: the plant alone breaks it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
PACKAGES = {
    "synbench": ROOT / "synbench",
    "synbench_example_generator": ROOT / "plugins" / "synbench-example-generator" / "synbench_example_generator",
    "synbench_invisibleink": ROOT / "plugins" / "synbench-invisibleink" / "synbench_invisibleink",
}
ROOT_LAYERS = "The layers of docs/architecture.md: core, job, text and data, the plugin families, the tasks, the CLI"
JOB_LAYERS = "The job's own order: the lifecycle over its parts, the release policy under the results writer"
CORE_LAYERS = "The core's own order: the registry over the schema and atomic files over the types and contracts"
PLUGINS_THROUGH_API = "Plugin packages import SynBench only through synbench.api (and the synbench.testing kit)"
REPORT_READS_RESULTS = "The report reads results.json files only: no plugin classes, no job machinery"


def lint_copy(tmp_path: Path, module: str | None = None, planted: str = "") -> subprocess.CompletedProcess[str]:
    """`lint-imports` over a copy of the packages and the contracts, with `planted` appended to `module` (a path
    relative to the copy) when given."""
    for name, source in PACKAGES.items():
        shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    if module is not None:
        path = tmp_path / module
        path.write_text(path.read_text(encoding="utf-8") + planted + "\n", encoding="utf-8")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "400", "PYTHONPATH": str(tmp_path)},  # one contract a line, the copy first
    )


def test_the_untouched_copy_keeps_every_contract(tmp_path: Path) -> None:
    proc = lint_copy(tmp_path)
    assert proc.returncode == 0 and " 0 broken" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        # the core reaching up into the job layer
        ("synbench/core/errors.py", "from synbench.job import spec  # noqa", ROOT_LAYERS),
        # the job layer reaching up into a plugin family, under TYPE_CHECKING (a type hint is a dependency)
        (
            "synbench/job/results.py",
            "if TYPE_CHECKING:\n    from synbench.generators.copy import CopyGenerator",
            ROOT_LAYERS,
        ),
        # inside the job: the release policy importing the results writer above it
        ("synbench/job/release.py", "from synbench.job import results  # noqa", JOB_LAYERS),
        # inside the core: the corpus importing the registry above it
        ("synbench/core/corpus.py", "from synbench.core import registry  # noqa", CORE_LAYERS),
        # a plugin package reaching past the API into an internal package it was never told about
        ("synbench_example_generator/generator.py", "from synbench.core import files  # noqa", PLUGINS_THROUGH_API),
        # the report reaching for the job machinery, and for a module no list names (the wildcard forbids it)
        ("synbench/report/summary.py", "from synbench.job import lifecycle  # noqa", REPORT_READS_RESULTS),
        ("synbench/report/summary.py", "from synbench.core import schema  # noqa", REPORT_READS_RESULTS),
    ],
)
def test_a_planted_upward_import_breaks_its_contract(tmp_path: Path, module: str, planted: str, broken: str) -> None:
    proc = lint_copy(tmp_path, module, planted)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert f"{broken} BROKEN" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_the_report_contract_forbids_all_of_synbench_but_what_the_report_uses() -> None:
    """The report's contract is a wildcard with an allow-list, and each allowed module is one the report imports:
    the list says what the report reads, no more."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    report = next(contract for contract in contracts if contract["name"] == REPORT_READS_RESULTS)
    assert report["forbidden_modules"] == ["synbench.*"]
    allowed = {expression.split(" -> ")[1] for expression in report["ignore_imports"]}
    assert {expression.split(" -> ")[0] for expression in report["ignore_imports"]} == {"**"}
    graph = grimp.build_graph("synbench", exclude_type_checking_imports=False)
    reporting = graph.find_descendants("synbench.report") | {"synbench.report"}
    imported = {module for importer in reporting for module in graph.find_modules_directly_imported_by(importer)}
    assert allowed <= imported, sorted(allowed - imported)


def test_the_architecture_page_lists_the_layers_of_the_contract() -> None:
    """docs/architecture.md's table of layers is the root layers contract, top to bottom, and names no other."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(contract for contract in contracts if contract["name"] == ROOT_LAYERS)["layers"]
    page = (ROOT / "docs" / "architecture.md").read_text().split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ")[0] for line in page.splitlines() if line.startswith("| `")]
    assert [row.strip("| ").replace("`", "").replace("\\|", "|") for row in rows] == layers
