"""The public plugin API and the architecture: what plugins may import, and the import-linter contracts."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

import synbench.api as api

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "plugins"
ALLOWED = ("synbench.api", "synbench.testing")


def synbench_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of `synbench` or a module below it in a Python file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "synbench"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "synbench":
            module = node.module or ""
            # `from synbench import api` names a submodule: the names imported are what counts
            found += [(node.lineno, f"{module}.{a.name}" if module == "synbench" else module) for a in node.names]
    return found


def test_plugin_packages_and_their_tests_import_only_the_api_and_the_kit() -> None:
    files = sorted(PLUGINS.rglob("*.py"))
    assert len(files) >= 8
    outside = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in files
        for line, module in synbench_imports(path)
        if not any(module == a or module.startswith(a + ".") for a in ALLOWED)
    ]
    assert not outside, "plugins must import SynBench through synbench.api:\n" + "\n".join(outside)


def test_the_scaffold_templates_import_only_the_api_and_the_kit() -> None:
    """A package `task=new_plugin` writes is a third party's: it starts on the public API."""
    templates = sorted((ROOT / "synbench" / "templates").rglob("*.py.tmpl"))
    assert len(templates) >= 8
    pattern = re.compile(r"^\s*(?:from|import)\s+(synbench[\w.]*)", re.MULTILINE)
    outside = [
        f"{path.relative_to(ROOT)} imports {m}"
        for path in templates
        for m in pattern.findall(path.read_text(encoding="utf-8"))
        if m not in ALLOWED
    ]
    assert not outside, "\n".join(outside)


def test_the_checker_sees_an_internal_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from synbench.generators.augpe import generator\nimport synbench.lm.models\n"
        "from synbench import core\nfrom synbench.api import Generator\n"
    )
    assert [m for _, m in synbench_imports(probe)] == [
        "synbench.generators.augpe",
        "synbench.lm.models",
        "synbench.core",
        "synbench.api",
    ]


def test_every_exported_name_resolves_and_the_plugin_contract_lets_through_the_api_and_the_kit_only() -> None:
    """The plugin contract forbids all of synbench and takes out of its graph the imports of ALLOWED, nothing else:
    a new package is internal without being listed (tests/test_layers.py shows a planted internal import fail)."""
    assert all(hasattr(api, name) for name in api.__all__) and len(set(api.__all__)) == len(api.__all__)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    plugin_contract = next(
        c for c in config if c.get("source_modules") == ["synbench_invisibleink", "synbench_example_generator"]
    )
    assert plugin_contract["forbidden_modules"] == ["synbench.*"]
    let_through = [tuple(expression.split(" -> ")) for expression in plugin_contract["ignore_imports"]]
    assert {importer for importer, _ in let_through} == {"**"}
    assert {imported.removesuffix(".**") for _, imported in let_through} == set(ALLOWED)


def test_the_api_has_what_a_plugin_author_needs() -> None:
    """Base classes, PrivacySpec and its noise, label-set plans, calibration, registration; LM helpers in api.lm."""
    import synbench.api.lm as api_lm
    from synbench.core.base import Generator, ModelAttack
    from synbench.core.privacy import NoiseSource

    assert api.Generator is Generator and api.ModelAttack is ModelAttack and api.NoiseSource is NoiseSource
    assert callable(api.label_sets.plan) and callable(api.label_sets.release) and callable(api.calibrate)
    assert "label_prior" in api.label_sets.PUBLIC_DETAILS and callable(api.gaussian_sigma) and callable(api.register)
    assert api_lm.load_prompts("drugreview").domain and callable(api_lm.load_causal_lm)
    assert all(hasattr(api_lm, name) for name in api_lm.__all__)
    assert not set(api.__all__) & set(api_lm.__all__)  # each name has one home


def test_the_api_holds_contracts_only_and_imports_without_torch() -> None:
    """`import synbench.api` loads no torch (nor the LM stack): a plugin that prompts no LM never pays for it."""
    heavy = ("torch", "transformers", "opacus", "peft", "lightning", "pytorch_lightning")
    proc = subprocess.run(
        [sys.executable, "-c", f"import synbench.api, sys; print([m for m in {heavy!r} if m in sys.modules])"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr
    proc = subprocess.run([sys.executable, "-c", "import synbench.api.lm, sys; assert 'torch' in sys.modules"])
    assert proc.returncode == 0  # the check can fail: the opt-in LM helpers do load torch
    # contracts only: 41 names since JobConfig (what a task plugin receives) joined them
    assert len(api.__all__) <= 41 and not {"plan_label_sets", "release_label_sets"} & set(api.__all__)


def test_the_import_contracts_hold() -> None:
    """The layers (docs/architecture.md), the report reading results only, plugins through the API (`make check`)."""
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports")], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "0 broken" in proc.stdout


MAX_FUNCTION_LINES = 80
# Functions allowed past MAX_FUNCTION_LINES, "path:qualified name" -> why it reads better whole. Keep it short: a
# long function is split into named steps unless its reason is written here.
LONG_FUNCTIONS: dict[str, str] = {}


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """Qualified name (`Class.method`, `outer.inner`) -> lines of every function in `path` longer than `limit`, from
    its `def` line to its last, docstring included (decorators are not counted)."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, prefix)
                continue
            name = prefix + child.name
            lines = (child.end_lineno or child.lineno) - child.lineno + 1
            if not isinstance(child, ast.ClassDef) and lines > limit:
                found[name] = lines
            visit(child, name + ".")

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), "")
    return found


def planted_function(name: str, lines: int, indent: str = "    ") -> str:
    """Source of a function `name` of `lines` lines, its `def` line included, at `indent`."""
    return f"{indent}def {name}() -> None:\n" + f"{indent}    x = 1\n" * (lines - 1)


def test_the_function_scan_finds_a_planted_long_function(tmp_path: Path) -> None:
    """A method, a nested function and its host over the limit are found by qualified name; one at it is not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "class Host:\n"
        + planted_function("long", 81)
        + "    @staticmethod\n"  # decorators do not count: 80 lines is at the limit
        + planted_function("fits", 80)
        + "async def outer() -> None:\n"
        + planted_function("inner", 85)
        + "    return None\n",
        encoding="utf-8",
    )
    assert long_functions(probe) == {"Host.long": 81, "outer.inner": 85, "outer": 87}
    assert long_functions(probe, limit=85) == {"outer": 87}


def test_no_function_runs_past_80_lines_without_a_reason() -> None:
    """A function over 80 lines hides its steps: split it into named helpers, or give its reason in LONG_FUNCTIONS."""
    files = sorted((ROOT / "synbench").rglob("*.py")) + sorted(PLUGINS.glob("*/**/*.py"))
    assert len(files) >= 150
    long = {f"{path.relative_to(ROOT)}:{name}": n for path in files for name, n in long_functions(path).items()}
    unexplained = [f"{where} has {n} lines" for where, n in long.items() if where not in LONG_FUNCTIONS]
    assert not unexplained, "split into named steps, or give the reason in LONG_FUNCTIONS:\n" + "\n".join(unexplained)
    stale = sorted(set(LONG_FUNCTIONS) - set(long))
    assert not stale, f"LONG_FUNCTIONS names functions that are gone or now fit in 80 lines: {stale}"


# classes that end in Config and type no config node: what each is
CONFIG_CLASSES = {
    "SynBenchConfig": "the whole config's schema (its top level), not one node's options",
    "JobConfig": "a job's composed config, parsed and checked (what a task receives)",
    "TrainConfig": "what the DP-SGD loop is given, built from a generator's options and its calibration",
    "DenoiserConfig": "DP-Diffusion's network architecture, built from its options and the tokenizer",
}


def class_names(path: Path) -> list[str]:
    return [
        node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.ClassDef)
    ]


def test_option_classes_take_one_suffix_and_the_old_public_names_still_import() -> None:
    """The dataclasses that type a config node's keys end in Options (no Settings, no Config but CONFIG_CLASSES);
    the two public names renamed to that rule import as before, with a FutureWarning."""
    files = sorted((ROOT / "synbench").rglob("*.py")) + sorted(PLUGINS.glob("*/**/*.py"))
    names = {name for path in files for name in class_names(path)}
    assert {"AuditOptions", "DPSGDOptions", "LabelSetOptions"} <= names
    assert not sorted(n for n in names if n.endswith("Settings"))
    assert sorted(n for n in names if n.endswith("Config")) == sorted(CONFIG_CLASSES)
    import synbench.audit as audit

    with pytest.warns(FutureWarning, match=r"synbench.api.LabelSetConfig is now synbench.api.LabelSetOptions"):
        assert api.LabelSetConfig is api.LabelSetOptions  # type: ignore[attr-defined]
    with pytest.warns(FutureWarning, match=r"synbench.audit.AuditConfig is now synbench.audit.AuditOptions"):
        assert audit.AuditConfig is audit.AuditOptions  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="has no attribute 'LabelSetSettings'"):
        api.LabelSetSettings  # type: ignore[attr-defined]  # noqa: B018
