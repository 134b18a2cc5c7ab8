"""`task=wandb_workspace`: the view's spec, written offline, holds the sweep's runs and the plots of the issue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import compose_config
from synbench.core.errors import ConfigError
from synbench.job.spec import JobConfig
from synbench.tasks.wandb_workspace import WandbWorkspaceTask

pytest.importorskip("wandb_workspaces", reason="the workspaces extra: pip install 'synbench[workspaces]'")


def run_task(tmp_path: Path, *overrides: str) -> Path:
    cfg = compose_config(
        ["task=wandb_workspace", "generator=copy", "sweep=grid", f"output_root={tmp_path}", *overrides]
    )
    WandbWorkspaceTask().run(JobConfig.from_config(cfg), tmp_path / "grid" / "wandb_workspace")
    return tmp_path / "grid" / "wandb_workspace.json"


def panels(spec: dict) -> dict[str, dict]:
    """Each line plot's config by its title, over the view's sections."""
    sections = spec["spec"]["section"]["panelBankConfig"]["sections"]
    return {p["config"]["chartTitle"]: p for s in sections for p in s["panels"]}


def test_offline_spec_plots_f1_mauve_and_the_audit_bound_against_eps_per_generator(tmp_path: Path) -> None:
    spec = json.loads(run_task(tmp_path, "tracking.project=bench", "tracking.entity=lab").read_text())
    assert (spec["entity"], spec["project"], spec["display_name"]) == ("lab", "bench", "SynBench sweep grid")
    [runset] = spec["spec"]["section"]["runSets"]
    assert runset["filters"]["filters"] == [
        {"key": {"section": "run", "name": "group"}, "op": "=", "value": "grid", "disabled": False}
    ]  # the sweep's runs: the tracker groups a sweep's runs under its name
    assert runset["grouping"] == [{"section": "config", "name": "generator.value"}]  # a line per generator
    by_title = panels(spec)
    metrics = {title.split(" against")[0]: p["config"]["metrics"] for title, p in by_title.items()}
    assert metrics == {
        "F1 macro": ["utility/f1_macro"],
        "F1 micro": ["utility/f1_micro"],
        "MAUVE": ["fidelity/mauve"],
        "eps_emp_lower": ["audit/eps_emp_lower", "eps"],  # eps against eps: the line y = eps
    }
    for panel in by_title.values():
        assert panel["viewType"] == "Run History Line Plot" and panel["config"]["xAxis"] == "eps"
        assert panel["config"]["groupAgg"] == "mean" and panel["config"]["groupArea"] == "minmax"
    assert {"config:eps", "summary:audit/eps_emp_lower"} <= set(runset["runFeed"]["columnPinned"])


def test_online_without_an_api_key_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc: no key, and wandb makes no request without one
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    with pytest.raises(ConfigError, match="task.mode=online needs a W&B API key: set WANDB_API_KEY") as caught:
        run_task(tmp_path, "tracking.mode=online")
    assert "\n" not in str(caught.value)
    assert (tmp_path / "grid" / "wandb_workspace.json").is_file()  # the spec is written first, in either mode
    with pytest.raises(ConfigError, match="task.mode='sideways' must be online"):
        run_task(tmp_path, "task.mode=sideways")
