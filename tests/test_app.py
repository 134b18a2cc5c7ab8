"""The Hydra app end to end: compose, run, sweep, resume, bad input."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import DictConfig

from conftest import REPO, compose_config, run_cli

GROUPS = ("dataset", "generator", "model", "task", "tracking")


def test_default_config_composes() -> None:
    cfg = compose_config()
    for group in GROUPS:
        assert group in cfg, group
    assert cfg.task.name == "benchmark"
    assert cfg.tracking.mode == "offline"
    assert cfg.dataset.name == "drugreview_condition6"  # the demo task with headroom (issue 26)
    assert cfg.generator._plugin_ == "dpgen"  # make demo runs DP-Gen


@pytest.mark.parametrize("eps", ["0.5", "1", "4", "inf"])
def test_eps_overrides_parse(eps: str) -> None:
    cfg = compose_config(["generator=copy", "dataset=mimic", f"eps={eps}"])
    assert float(cfg.eps) == float(eps)
    assert cfg.dataset.multi_label is True


def test_benchmark_job_writes_results_and_resumes(tmp_path: Path, tiny_dataset: list[str]) -> None:
    args = [
        *tiny_dataset,
        "generator=copy",
        "tracking=none",
        "metrics=[]",
        f"output_root={tmp_path / 'out'}",
        "eps=inf",
    ]
    run_cli(args, cwd=tmp_path)
    [results_file] = list((tmp_path / "out").rglob("results.json"))
    results = json.loads(results_file.read_text())
    for key in ("dataset", "generator", "task", "epsilon", "delta", "epsilon_spent", "seed"):
        assert key in results, key
    for section in ("utility", "fidelity", "audit", "timing"):
        assert isinstance(results[section], dict), section
    assert results["status"] == "complete"
    assert results["dataset"] == "tiny" and results["generator"] == "copy" and results["epsilon"] == "inf"
    assert results["epsilon_spent"] == "inf"  # the copy control is not private
    assert results["delta"] == pytest.approx(1 / 30**2) and results["noise"] == "n/a"
    disclosure = sorted(f"disclosure.{k}" for k in results["disclosure"])  # the operator's check of copies
    assert results["non_dp_outputs"] == results["diagnostic_outputs"] == disclosure  # nothing else that is not DP
    assert results["generation"]["n_synthetic"] == 30
    synthetic = [json.loads(line) for line in (results_file.parent / "synthetic.jsonl").read_text().splitlines()]
    assert len(synthetic) == 30 and synthetic[0]["label"] in (["pos"], ["neg"])

    stamp = results_file.stat().st_mtime_ns
    second = run_cli(args, cwd=tmp_path)
    assert "skipping" in second.stdout + second.stderr
    assert results_file.stat().st_mtime_ns == stamp


def test_multirun_sweep_writes_one_results_per_job(tmp_path: Path, tiny_dataset: list[str]) -> None:
    proc = run_cli(
        [
            "-m",
            *tiny_dataset,
            "generator=copy",
            "tracking=none",
            "metrics=[]",
            f"output_root={tmp_path / 'out'}",
            "eps=inf",
            "seed=0,1",
            "sweep=seedgrid",
        ],
        cwd=tmp_path,
    )
    found = {json.loads(p.read_text())["seed"] for p in (tmp_path / "out" / "seedgrid").rglob("results.json")}
    assert found == {0, 1}
    log = proc.stdout + proc.stderr  # a line per sweep job, also when output is not a terminal
    assert "sweep job #0 started: " in log and "sweep job #1 ended after " in log


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("eps=0", "eps=0"),
        ("eps=-1", "eps=-1"),
        ("delta=1.5", "delta=1.5"),
        ("generator._plugin_=nosuchgen", "unknown generator plugin 'nosuchgen'; available: "),
        ("dataset.text_field=body", "body"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path: Path, tiny_dataset: list[str], override: str, expected: str) -> None:
    proc = run_cli(
        [*tiny_dataset, "generator=copy", "tracking=none", "metrics=[]", f"output_root={tmp_path}", override],
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "synbench: error:" in proc.stderr and expected in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_value_left_unset_names_itself_and_the_fix(tmp_path: Path) -> None:
    """The paper experiments read PsyTAR from `data_root`, which only the user can set."""
    proc = run_cli(
        ["+experiment=paper_psytar_dpgen", "tracking=none", f"output_root={tmp_path}"], cwd=tmp_path, check=False
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (
        "synbench: error: config value 'data_root' (needed by 'dataset.train') is not set: pass data_root=<value>"
        in proc.stderr
    )


def test_unknown_group_option_lists_the_available_ones(tmp_path: Path) -> None:
    proc = run_cli(["generator=nosuchgen"], cwd=tmp_path, check=False)
    assert proc.returncode != 0
    assert "copy" in proc.stderr  # Hydra lists the available options


def test_plugins_task_lists_builtins(tmp_path: Path) -> None:
    out = run_cli(["task=plugins"], cwd=tmp_path).stdout
    for group in ("synbench.datasets", "synbench.generators", "synbench.metrics", "synbench.attacks"):
        assert group in out
    for name in ("files", "huggingface", "drugreview", "copy"):
        assert name in out
    assert "synbench 0.1.0" in out


@pytest.mark.slow
def test_inf_is_not_a_number_in_results(tmp_path: Path, tiny_dataset: list[str]) -> None:
    run_cli(
        [*tiny_dataset, "generator=copy", "tracking=none", "metrics=[]", f"output_root={tmp_path}", "eps=inf"],
        cwd=tmp_path,
    )
    [path] = list(tmp_path.rglob("results.json"))
    text = path.read_text()
    assert "Infinity" not in text and "NaN" not in text
    assert math.isinf(float(json.loads(text)["epsilon"]))


# the three largest sweeps: paper_table1's 405 points are composed by tests/test_paper_settings.py's grid test as
# well, and the demo's baseline sweeps extend the demo experiment composed here
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow)
        if name in ("paper_table1", "demo_baselines", "demo_baseline_seeds")
        else name
        for name in sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml"))
    ],
)
def test_experiment_configs_compose(name: str) -> None:
    """Every experiment composes as `+experiment=<name>`, names its sweep after itself (or, a companion such as
    `demo_baselines`, after the experiment whose sweep it adds to: `<sweep>_<part>`), and its grid (if any) is
    valid."""
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"+experiment={name}"], return_hydra_config=True)
        assert cfg.sweep == name or name.startswith(f"{cfg.sweep}_")
        params = dict(cfg.hydra.sweeper.params or {})  # empty: a single job (`+experiment=<name>` without -m)
        for key, values in params.items():  # every swept value composes as an override of its own
            for value in str(values).split(","):
                compose(config_name="config", overrides=[f"+experiment={name}", f"{key}={value}"])


def test_hydra_discovers_the_search_path_plugin_without_the_app() -> None:
    """Hydra's own discovery (as its example plugin tests itself), in a fresh process that never imports synbench.cli.

    The repository root goes first on the path, as a regular install lays out the `hydra_plugins` namespace
    (an editable install hides it behind an import hook, which is why the app also registers the class).
    """
    code = (
        "from hydra.core.plugins import Plugins\n"
        "from hydra.plugins.search_path_plugin import SearchPathPlugin\n"
        "import sys\n"
        "assert 'synbench.cli.app' not in sys.modules\n"
        "print([p.__name__ for p in Plugins.instance().discover(SearchPathPlugin)])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "SynBenchSearchPathPlugin" in proc.stdout


@pytest.mark.slow
def test_a_sweep_survives_a_failing_job_reports_it_and_reruns_only_it(tmp_path: Path, tiny_dataset: list[str]) -> None:
    # a file that exists (the sweep's pre-check of each dataset's source passes) but does not parse: the job fails
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n")
    train = next(o for o in tiny_dataset if o.startswith("dataset.train=")).split("=", 1)[1]
    args = [
        "-m",
        *[o for o in tiny_dataset if not o.startswith("dataset.train=")],
        f"dataset.train={train},{broken}",
        "generator=copy",
        "eps=inf",
        "tracking=none",
        "metrics=[]",
        f"output_root={tmp_path / 'out'}",
        "sweep=faults",
    ]
    first = run_cli(args, cwd=tmp_path, check=False)
    assert first.returncode != 0 and "1 of 2 job(s) did not complete" in first.stderr
    assert "FAILED benchmark/" in first.stdout and "broken.jsonl" in first.stdout  # one line per failed job
    results = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "out" / "faults").rglob("results.json")}
    assert sorted(r["status"] for r in results.values()) == ["complete", "failed"]
    failed = next(r for r in results.values() if r["status"] == "failed")
    assert failed["error"]["type"] == "DataError"
    second = run_cli(args, cwd=tmp_path, check=False)
    assert second.returncode != 0 and "skipping" in second.stdout + second.stderr  # the complete job is not redone


@pytest.mark.slow
def test_a_sweep_over_settings_warns_that_selection_uses_private_data(tmp_path: Path, tiny_dataset: list[str]) -> None:
    proc = run_cli(
        [
            "-m",
            *tiny_dataset,
            "generator=copy",
            "eps=inf",
            "tracking=none",
            "metrics=[]",
            f"output_root={tmp_path / 'out'}",
            "task.n_synthetic=5,6",
        ],
        cwd=tmp_path,
    )
    assert "varies task.n_synthetic" in proc.stderr and "no job's epsilon covers" in proc.stderr


@pytest.mark.parametrize("experiment, tuned", [("paper_table1", []), ("demo", []), ("paper_psytar_audit", [])])
def test_the_prepared_grids_compare_without_tuning(experiment: str, tuned: list[str]) -> None:
    """The paper's and the demo grid vary only data, generators, eps and seeds: no tuning warning."""
    from hydra import compose, initialize_config_module
    from omegaconf import open_dict

    from synbench.cli.sweeps import tuned_keys

    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"+experiment={experiment}"], return_hydra_config=True)
        assert tuned_keys(cfg) == tuned
        with open_dict(cfg):
            cfg.hydra.sweeper.params["generator.lr"] = "1e-4,1e-3"
        assert tuned_keys(cfg) == ["generator.lr"]


def multirun_config(overrides: list[str]) -> DictConfig:
    """The config Hydra hands the sweep callback for `python -m synbench -m OVERRIDES` (Hydra initialised)."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    hydra = GlobalHydra.instance().hydra
    assert hydra is not None
    return hydra.compose_config(config_name="config", overrides=overrides, run_mode=RunMode.MULTIRUN)


@pytest.mark.parametrize("overrides", [["generator=dpgen", "eps=1,4"], ["+experiment=demo"]], ids=["dpgen", "demo"])
def test_a_dpgen_sweep_passes_its_sweep_point_check(overrides: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The check composes each point before any job runs, with no Hydra run to resolve `${hydra:...}`: a generator
    config reading one (DP-Gen's workdir before d0f0a74) failed every such sweep before its first job."""
    from hydra import initialize_config_module
    from hydra.core.hydra_config import HydraConfig

    from synbench.cli.sweeps import check_sweep_points, sweep_points

    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)  # as in on_multirun_start, whatever ran before here
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        config = multirun_config(overrides)
        points = sweep_points(config)  # a DP-Gen point is checked (the demo grid's is dpgen_grid, which extends it)
        assert any(o in ("generator=dpgen", "generator=dpgen_grid") for point in points for o in point)
        check_sweep_points(config)


def test_a_dpgen_job_key_holds_no_path_of_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """eps=1 and eps=1.0 are one job that Hydra puts in two folders (named by the overrides): a key that held the
    folder (DP-Gen's workdir from `${hydra:runtime.output_dir}`) made them two jobs, each run."""
    from hydra import compose, initialize_config_module
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    from synbench.job.spec import JobConfig

    specs = []
    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)  # restored after the test; set below as in each job
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        for eps in ("1", "1.0"):
            overrides = ["generator=dpgen", f"eps={eps}"]
            job = compose(config_name="config", overrides=overrides, return_hydra_config=True)
            with open_dict(job):
                job.hydra.runtime.output_dir = str(tmp_path / f"eps={eps}")
            HydraConfig.instance().set_config(job)
            specs.append(JobConfig.from_config(compose(config_name="config", overrides=overrides)).spec)
    assert specs[0].key == specs[1].key
    assert all(str(tmp_path) not in repr(spec.config) for spec in specs)


def test_the_wandb_sweep_config_runs_valid_overrides() -> None:
    """Every parameter value of the W&B sweep file composes as the `key=value` override its agent passes."""
    import yaml

    sweep = yaml.safe_load((REPO / "experiments" / "wandb_sweep_demo.yaml").read_text())
    assert sweep["command"][2:4] == ["-m", "synbench"] and "${args_no_hyphens}" in sweep["command"]
    fixed = [arg for arg in sweep["command"] if "=" in arg and not arg.startswith("$")]
    for key, spec in sweep["parameters"].items():
        for value in spec["values"]:
            cfg = compose_config([*fixed, f"{key}={value}"])
            got = cfg[key] if key != "generator" else cfg.generator._plugin_
            assert got == (float(value) if key == "eps" else value)  # eps is a float in the schema


PAPER_CLASSIFIERS = {
    "hoc": "bert_large",
    "psytar": "bert_large",
    "n2c2_2008": "biomedbert",
    "mimic": "biomedbert",
    "dmsafn": "finbert",
    "lc37fnd": "finbert",
    "zstfns": "finbert",
    "asylax": "legal_bert",
    "eurlex": "legal_bert",
}


@pytest.mark.slow
def test_paper_table1_is_every_dataset_with_its_classifier_times_the_three_generators() -> None:
    """The paper's grid: 9 datasets x 3 generators x 5 eps x 3 seeds, each job at one delta rule and the paper's
    models."""
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        grid = compose(config_name="config", overrides=["+experiment=paper_table1"], return_hydra_config=True)
        params = {k: str(v).split(",") for k, v in grid.hydra.sweeper.params.items()}
        assert set(params["+paper_dataset"]) == set(PAPER_CLASSIFIERS) and params["eps"] == [
            "0.5",
            "1",
            "2",
            "4",
            "inf",
        ]
        assert params["+paper_generator"] == ["dpgen", "augpe", "dpdiffusion"] and len(params["seed"]) == 3
        for name in params["+paper_dataset"]:
            for generator in params["+paper_generator"]:
                cfg = compose(
                    config_name="config",
                    overrides=[
                        "+experiment=paper_table1",
                        f"+paper_dataset={name}",
                        f"+paper_generator={generator}",
                        "data_root=/data",
                    ],
                )
                assert (cfg.dataset.name, cfg.generator._plugin_, cfg.classifier.name) == (
                    name,
                    generator,
                    PAPER_CLASSIFIERS[name],
                )
                assert cfg.delta is None and cfg.sweep == "paper_table1"  # every generator at the benchmark's delta
                if generator != "dpdiffusion":
                    assert (
                        cfg.generator.model.name == {"dpgen": "llama3_2_1b", "augpe": "llama3_2_1b_instruct"}[generator]
                    )
                if "train" in cfg.dataset:  # the JSONL datasets come from data_root
                    assert cfg.dataset.train == f"/data/{name}/train.jsonl"


def test_cluster_launchers_compose() -> None:
    """The SLURM launcher (an optional extra, hydra-submitit-launcher) composes with a SynBench job."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install '.[cluster]' for SLURM sweeps")
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=["hydra/launcher=submitit_slurm", "+experiment=paper_psytar_dpgen"],
            return_hydra_config=True,
        )
    assert "submitit" in cfg.hydra.launcher._target_ and cfg.sweep == "paper_psytar_dpgen"


@pytest.mark.slow
def test_a_parallel_sweep_with_joblib_and_wandb_offline(tmp_path: Path, tiny_dataset: list[str]) -> None:
    """Two jobs at once in joblib's worker processes, each with its own offline W&B run, both finished."""
    run_cli(
        [
            "-m",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            *tiny_dataset,
            "generator=copy",
            "eps=inf",
            "tracking=wandb",
            "metrics=[length]",
            "seed=0,1",
            "sweep=par",
            f"output_root={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    results = [json.loads(p.read_text()) for p in (tmp_path / "out" / "par").rglob("results.json")]
    assert sorted(r["seed"] for r in results) == [0, 1] and all(r["status"] == "complete" for r in results)
    runs = list((tmp_path / "out" / "par").rglob("offline-run-*"))
    assert len(runs) == 2 and all(list(run.glob("*.wandb")) for run in runs)


def test_group_options_of_a_searchpath_folder_are_known(tmp_path: Path) -> None:
    """A config folder added with `hydra.searchpath` brings its own group options: they pass the command-line
    check (a shrunk paper table through submitit did not), and a misspelt one is still refused with them listed."""
    from synbench.cli.app import check_command_line
    from synbench.core.errors import ConfigError

    (tmp_path / "paper_dataset").mkdir()
    (tmp_path / "paper_dataset" / "toy_a.yaml").write_text("# @package _global_\n")
    searchpath = f"hydra.searchpath=[file://{tmp_path}]"
    check_command_line([searchpath, "+paper_dataset=toy_a"])
    with pytest.raises(ConfigError, match=r"paper_dataset=toy_b is not an option.*\(did you mean toy_a\?\).*toy_a"):
        check_command_line([searchpath, "+paper_dataset=toy_b"])
    with pytest.raises(ConfigError, match="paper_dataset=toy_a is not an option"):
        check_command_line(["+paper_dataset=toy_a"])
