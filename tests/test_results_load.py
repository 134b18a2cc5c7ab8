"""Sweeps as data: `synbench.results.load` (one row per job, flat columns) and `task=export` (CSV, Parquet)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, compose_config, run_cli
from synbench import results
from synbench.core.errors import ConfigError, SynBenchError
from synbench.job.results import LEADING_COLUMNS, UNREADABLE, flatten
from synbench.job.spec import JobConfig
from synbench.tasks.export import ExportTask, export
from test_report import SENTINEL, SWEEP, sweep  # noqa: F401  (the report's hand-written sweep, a fixture)


def test_load_gives_one_row_per_job_with_flat_columns_status_and_description(sweep: Path) -> None:  # noqa: F811
    frame = results.load(sweep)
    files = sorted(sweep.rglob("results.json"))
    assert list(frame["job"]) == [p.parent.relative_to(sweep).as_posix() for p in files] and len(frame) == 18
    assert list(frame.columns[:10]) == list(LEADING_COLUMNS)
    jobs = frame.set_index("job")
    alpha = jobs.loc["benchmark/eps=inf,generator=alpha,seed=1"]
    assert alpha["status"] == "complete" and alpha["epsilon"] == math.inf and alpha["seed"] == 1
    assert alpha["utility.f1_micro"] == pytest.approx(0.5 + 0.1 + 0.1) and alpha["fidelity.mauve_ref"] == 0.9
    assert alpha["config.note"] == "x" and json.loads(alpha["non_dp_outputs"]) == ["utility.real_f1"]
    assert alpha["higher_is_better.fidelity.entity_div"] == False  # noqa: E712 (a cell, not a Python bool)
    audit = jobs.loc["audit/eps=1,generator=alpha"]
    assert audit["audit.eps_emp_lower"] == 1.8 and audit["audit.tpr_at_fpr_0.001"] == 0.05
    assert audit["audit.mode"] == "k_subsets" and pd.isna(audit["utility.f1_micro"])
    failed = jobs.loc["benchmark/eps=1,generator=gamma"]
    assert failed["status"] == "failed" and failed["reason"] == "DataError: train.jsonl line 3: no text"
    broken = jobs.loc["benchmark/broken"]
    assert broken["status"] == UNREADABLE and broken["reason"] == "results.json unreadable (JSONDecodeError)"
    assert jobs.loc["audit/eps=2,generator=beta", "config.audit.mode"] == "one_run"
    assert not frame.astype(str).apply(lambda column: column.str.contains(SENTINEL[:12])).any().any()


def test_a_real_job_loads_with_its_description(tmp_path: Path, tiny_dataset: list[str]) -> None:
    from synbench.tasks import benchmark

    cfg = compose_config([*tiny_dataset, "generator=copy", "metrics=[utility]", "tracking=none", "eps=2"])
    benchmark.run(JobConfig.from_config(cfg), tmp_path / "sweep" / "benchmark" / "eps=2")
    [row] = results.load(tmp_path / "sweep").to_dict("records")
    written = json.loads((tmp_path / "sweep" / "benchmark" / "eps=2" / "results.json").read_text())
    assert row["job"] == "benchmark/eps=2" and row["status"] == "complete" and row["epsilon_spent"] == math.inf
    assert row["config.generator._plugin_"] == "copy" and row["config.dataset.name"] == "tiny"
    assert row["utility.f1_micro"] == written["utility"]["f1_micro"] and row["job_key"] == written["job_key"]
    assert row["generation.n_synthetic"] == written["generation"]["n_synthetic"] == 30


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_the_table_atomically_into_the_sweep_folder(sweep: Path, fmt: str) -> None:  # noqa: F811
    path = export(sweep, fmt)
    assert path == sweep / f"results.{fmt}" and not list(sweep.glob(".results.*"))
    back = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    frame = results.load(sweep)
    assert list(back.columns) == list(frame.columns) and list(back["job"]) == list(frame["job"])
    pd.testing.assert_series_equal(back["audit.eps_emp_lower"], frame["audit.eps_emp_lower"], check_dtype=False)
    assert back.set_index("job").loc["benchmark/eps=inf,generator=beta,seed=0", "epsilon"] == math.inf


def test_export_task_reads_its_config_and_refuses_bad_input(sweep: Path, tmp_path: Path) -> None:  # noqa: F811
    overrides = ["task=export", "generator=copy", f"output_root={sweep.parent}", f"sweep={SWEEP}", "tracking=none"]
    cfg = compose_config([*overrides, "task.format=parquet"])
    ExportTask().run(JobConfig.from_config(cfg), sweep / "export" / "job")
    assert len(pd.read_parquet(sweep / "results.parquet")) == 18
    with pytest.raises(ConfigError, match="task.format='xlsx' must be one of csv, parquet"):
        ExportTask().run(JobConfig.from_config(compose_config([*overrides, "task.format=xlsx"])), sweep / "x" / "job")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no results.json under"):
        export(tmp_path / "empty", "csv")
    with pytest.raises(SynBenchError, match="is not a folder; give the sweep folder"):
        results.load(tmp_path / "missing")


DEMO = REPO / "experiments" / "results" / "demo"


def test_the_kept_demo_sweep_loads_and_exports(tmp_path: Path) -> None:
    files = sorted(DEMO.rglob("results.json"))
    if not files:
        pytest.skip("experiments/results/demo keeps no results.json yet (docs/results.md: the copy command keeps them)")
    frame = results.load(DEMO)
    assert list(frame["job"]) == [p.parent.relative_to(DEMO).as_posix() for p in files]
    assert (frame["status"] == "complete").all()
    assert frame.loc[frame["task"] == "benchmark", "utility.f1_macro"].notna().all()
    assert set(frame["config.generator._plugin_"]) == set(frame["generator"])
    copy = tmp_path / "demo"
    for path in files:  # export into a copy: a test never writes into the repository
        (copy / path.parent.relative_to(DEMO)).mkdir(parents=True)
        shutil.copy(path, copy / path.relative_to(DEMO))
    back = pd.read_parquet(export(copy, "parquet"))
    pd.testing.assert_series_equal(back["utility.f1_macro"], frame["utility.f1_macro"], check_dtype=False)


def test_the_kept_demo_sweep_loads_through_the_record_as_its_files_read_as_written() -> None:
    """Reading each kept results.json through the record type (`JobRecord`) changes no cell of the sweep's frame:
    the frame is the one the files' own JSON, flattened, gives (the reader before the record type); only the order
    of the columns after the leading ones follows the record's fields."""
    files = sorted(DEMO.rglob("results.json"))
    if not files:
        pytest.skip("experiments/results/demo keeps no results.json yet")
    rows = []
    for path in files:
        written = json.loads(path.read_text())
        assert "error" not in written  # kept results are complete: `reason` is empty
        # reads_private and source_revision: header fields the kept files predate, which the record reads as
        # unknown (None); schema_version, which a file without it reads as 1
        predate = {key: None for key in ("reads_private", "source_revision") if key not in written}
        predate |= {} if "schema_version" in written else {"schema_version": 1}
        job = {"job": path.parent.relative_to(DEMO).as_posix(), "reason": ""} | predate
        rows.append(job | flatten(written))
    as_written = pd.DataFrame(rows)
    frame = results.load(DEMO)
    assert list(frame.columns[: len(LEADING_COLUMNS)]) == list(LEADING_COLUMNS)
    assert sorted(frame.columns) == sorted(as_written.columns)
    pd.testing.assert_frame_equal(frame, as_written[list(frame.columns)])


@pytest.mark.slow
def test_the_demo_sweep_as_run_loads_and_exports(tmp_path: Path) -> None:
    """`+experiment=demo -m` as a user runs it (joblib, 2 workers), with the copy control as its generator so that
    it takes minutes rather than the hours of the DP generators: one row per job, then `task=export`."""
    common = ["tracking=none", f"output_root={tmp_path}"]
    run_cli(["+experiment=demo", "generator=copy", *common, "-m"], cwd=tmp_path, timeout=1800)
    frame = results.load(tmp_path / "demo")
    assert len(frame) == 12 and (frame["status"] == "complete").all()  # eps {1, 4, inf} x (3 seeds + the audit)
    bench = frame[frame["task"] == "benchmark"]
    assert sorted(bench["seed"].unique()) == [0, 1, 2] and sorted(bench["epsilon"].unique()) == [1, 4, math.inf]
    assert bench["utility.f1_macro"].notna().all() and (bench["generation.n_synthetic"] == 116).all()
    audits = frame[frame["task"] == "audit"]
    assert len(audits) == 3 and (audits["audit.mode"] == "one_run").all() and audits["audit.eps_emp_lower"].gt(1).all()
    run_cli(["task=export", "sweep=demo", "task.format=parquet", *common], cwd=tmp_path)
    back = pd.read_parquet(tmp_path / "demo" / "results.parquet")
    assert list(back["job"]) == list(frame["job"])
    pd.testing.assert_series_equal(back["utility.f1_macro"], frame["utility.f1_macro"], check_dtype=False)
