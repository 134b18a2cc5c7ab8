"""The InvisibleInk plugin package: installed like any pip package, listed, its config found, a tiny job run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, compose_config, install_plugin, model_overrides, run_cli

PLUGIN = REPO / "plugins" / "synbench-invisibleink"


@pytest.fixture(scope="module")
def installed_plugin() -> None:
    install_plugin(PLUGIN)


@pytest.mark.slow
def test_listed_with_its_config_group(installed_plugin: None, tmp_path: Path) -> None:
    """`task=plugins` names the package; `--cfg job` resolves generator=invisibleink from the plugin's own YAML.

    Its default batching is `hashed`, DP under the add/remove adjacency SynBench promises for every generator.
    """
    listing = run_cli(["task=plugins"], cwd=tmp_path).stdout.splitlines()
    assert any(line.split()[:1] == ["invisibleink"] and "synbench-invisibleink" in line for line in listing)
    job = run_cli(["generator=invisibleink", "--cfg", "job"], cwd=tmp_path).stdout
    assert "_plugin_: invisibleink" in job and "batch_size: 7" in job and "batching: hashed" in job


def test_the_demo_experiment_takes_it_with_its_defaults(installed_plugin: None) -> None:
    """The demo grid runs the core families; `+experiment=demo generator=invisibleink` adds it, with hashed batching."""
    cfg = compose_config(["+experiment=demo", "generator=invisibleink"])
    assert cfg.generator._plugin_ == "invisibleink" and cfg.generator.batching == "hashed"


@pytest.mark.slow
def test_job_with_invisibleink(
    installed_plugin: None, tmp_path: Path, tiny_dataset: list[str], tiny_model: dict[str, Any]
) -> None:
    """A private job end to end through the app on the tiny Llama: epsilon within budget, declared details only."""
    small = [
        "generator.batch_size=3",
        "generator.max_new_tokens=6",
        "generator.max_context_tokens=24",
        "generator.top_k=8",
    ]
    run_cli(
        [
            *tiny_dataset,
            "generator=invisibleink",
            *model_overrides(tiny_model),
            *small,
            "eps=4",
            "tracking=none",
            "metrics=[]",
            f"output_root={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    [path] = list((tmp_path / "out").rglob("results.json"))
    results = json.loads(path.read_text())
    assert results["generator"] == "invisibleink" and results["status"] == "complete"
    assert 3.99 < results["epsilon_spent"] <= 4 + 1e-6
    generation = results["generation"]
    assert generation["n_synthetic"] == 30 and generation["batch_size"] == 3 and generation["clip"] > 0
    assert generation["sample_tokens"] >= 30 and "label_noise_std" in generation
    assert generation["batching"] == "hashed" and generation["adjacency"] == "add_remove"


def test_conforms_to_the_generator_contract(installed_plugin: None, tiny_model: dict[str, Any]) -> None:
    """SynBench's conformance kit in this process (the plugin's own suite, below, runs it too, with more)."""
    from synbench_invisibleink.generator import InvisibleInkGenerator

    from synbench.testing import check_generator

    check_generator(
        lambda: InvisibleInkGenerator(model=tiny_model, batch_size=2, max_new_tokens=3, max_context_tokens=8, top_k=8)
    )


@pytest.mark.slow
def test_the_plugins_own_test_suite_passes(installed_plugin: None) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(PLUGIN / "tests")],
        capture_output=True,
        text=True,
        cwd=PLUGIN,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
