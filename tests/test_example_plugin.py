"""The example third-party plugin: installed like any pip package, found by name, with its own config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, install_plugin, run_cli

PLUGIN = REPO / "plugins" / "synbench-example-generator"


@pytest.fixture(scope="module")
def installed_plugin() -> None:
    install_plugin(PLUGIN)


def test_plugins_task_lists_the_example(installed_plugin: None, tmp_path: Path) -> None:
    out = run_cli(["task=plugins"], cwd=tmp_path).stdout
    line = next(line for line in out.splitlines() if line.strip().startswith("example "))
    assert "synbench-example-generator" in line
    [conf] = [line for line in out.splitlines() if line.split()[:1] == ["synbench-example-generator"]]
    assert conf.split()[1].endswith("synbench_example_generator/conf")  # its config, found beside its class


def test_job_with_the_example_generator(installed_plugin: None, tmp_path: Path, tiny_dataset: list[str]) -> None:
    run_cli(
        [*tiny_dataset, "generator=example", "eps=4", "tracking=none", "metrics=[]", f"output_root={tmp_path / 'out'}"],
        cwd=tmp_path,
    )
    [path] = list((tmp_path / "out").rglob("results.json"))
    results = json.loads(path.read_text())
    assert results["generator"] == "example" and results["status"] == "complete"
    assert 0 < results["epsilon_spent"] <= 4 + 1e-6
    assert results["generation"]["n_synthetic"] == 30


@pytest.mark.slow
def test_the_plugins_own_test_suite_passes(installed_plugin: None) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(PLUGIN / "tests")],
        capture_output=True,
        text=True,
        cwd=PLUGIN,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
