"""The front door and the docs site: README stays short and its links resolve; `mkdocs build --strict` fails on a
broken link, so CI (`make check`) catches one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

LINK = re.compile(r"\[[^\]]*\]\(([^)#\s]+)(?:#[^)]*)?\)")
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', re.M)  # a generated file a docs page includes (pymdownx.snippets)


def test_readme_is_a_short_front_door_whose_links_resolve() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert not re.search(r"\bissue\s*#?\d+|#\d{2,}\b", readme, re.I), "README refers to an issue number"
    targets = [t for t in LINK.findall(readme) if not re.match(r"[a-z]+://", t)]
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if not (REPO / t).exists()]
    assert missing == [], f"README links to files that do not exist: {missing}"


def test_the_readme_table_is_the_kept_reports() -> None:
    """Figures are never typed into README: the table after it cites the kept grid's generated report
    (experiments/results/demo/report.md) is one of that report's tables, line for line."""
    readme = (REPO / "README.md").read_text().splitlines()
    report = (REPO / "experiments" / "results" / "demo" / "report.md").read_text().splitlines()
    cited = next(i for i, line in enumerate(readme) if "(experiments/results/demo/report.md)" in line)
    first = next((i for i, line in enumerate(readme) if i > cited and line.startswith("|")), None)
    assert first is not None, "README shows no table of the demo grid after citing its report"
    table = [line for line in readme[first:] if line.startswith("|") or not line.strip()]
    table = table[: next((i for i, line in enumerate(table) if not line.strip()), len(table))]
    start = next((i for i, line in enumerate(report) if line == table[0]), None)
    assert start is not None, "README's table header is not a header of the kept report's tables"
    assert report[start : start + len(table)] == table, "README's table differs from the kept report's"


def strict_build(root: Path) -> subprocess.CompletedProcess[str]:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    return subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(root / "site")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


@pytest.mark.slow
def test_the_strict_docs_build_passes_and_fails_on_a_broken_link(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (make install installs it)")
    pytest.importorskip("material", reason="the docs extra is not installed (make install installs it)")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    included = {m for page in (REPO / "docs").rglob("*.md") for m in SNIPPET.findall(page.read_text())}
    assert "experiments/benchmarks/results/bench.md" in included
    for name in included:  # the generated files the pages include, at their place under the repository root
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    built = strict_build(tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    assert "bench_audit" in (tmp_path / "site" / "results" / "index.html").read_text()  # bench.md is included
    page = tmp_path / "docs" / "concepts.md"
    page.write_text(page.read_text() + "\nSee [the old notes](no-such-page.md).\n")
    broken = strict_build(tmp_path)
    assert broken.returncode != 0 and "no-such-page.md" in broken.stderr
    (tmp_path / "experiments" / "benchmarks" / "results" / "bench.md").unlink()
    page.write_text(page.read_text().replace("\nSee [the old notes](no-such-page.md).\n", ""))
    assert strict_build(tmp_path).returncode != 0  # a generated file the docs include is missing


def test_the_audit_options_table_is_the_calibration_benchs_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/audit.md's attack-options table is rendered from bench_audit_calibration.json (never typed), has a row
    for every option value the attacks accept, and was measured with the n-gram normalise default configured now,
    which is the value of highest mean AUC there."""
    import json

    from conftest import compose_config
    from synbench.audit.ngram import CALIBRATIONS, NORMALISATIONS
    from synbench.audit.similarity import KS, SIMILARITIES

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "benchmarks"))
    from audit_options import OPTION_ROWS, options_table

    results = REPO / "experiments" / "benchmarks" / "results"
    figures = json.loads((results / "bench_audit_calibration.json").read_text())["options"]
    assert (results / "audit_options.md").read_text() == options_table(figures)
    assert '--8<-- "experiments/benchmarks/results/audit_options.md"' in (REPO / "docs" / "audit.md").read_text()
    rows = {(row.attack, row.key, row.value) for row in OPTION_ROWS}
    accepted = (
        {("ngram", "normalise", v) for v in NORMALISATIONS}
        | {("ngram", "calibration", v) for v in CALIBRATIONS}
        | {("ngram", "pad_target", v) for v in (True, False)}
        | {("similarity", "similarity", v) for v in SIMILARITIES}
        | {("similarity", "k", v) for v in KS}
    )
    assert rows == accepted
    configured = compose_config(["task=audit"]).attack.ngram.normalise
    assert figures["defaults"]["ngram"]["normalise"] == configured == figures["normalise_best"]
