"""results.json as one type (`synbench.job.record.JobRecord`): every task's results written and read back through it.

Each task that writes results runs here on a small job; its results.json read through the record and written again
is the same file (nothing lost, nothing added), and the record the task held is the one the file holds.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from conftest import compose_config, model_overrides
from synbench.cli.sweeps import COLUMNS, SweepCallback, run_rows, table_line
from synbench.core.errors import DataError
from synbench.job import lifecycle
from synbench.job.record import FAILED, HEADER, READERS, RUNNING, JobRecord
from synbench.job.release import RESULT_FIELDS, violations
from synbench.job.results import RESULTS_FILE, read_record, sweep_rows, write_results
from synbench.job.spec import JobConfig
from test_audit import audit_data  # noqa: F401  (a fixture: a 60-document dataset for the audit)
from test_model_audit import TINY as MODEL_AUDIT_TINY


def assert_round_trip(held: JobRecord, job_dir: Path) -> JobRecord:
    """The file the job wrote, read through the record and written again, is itself; the task held that record."""
    written = json.loads((job_dir / RESULTS_FILE).read_text())
    record = JobRecord.from_json(written)
    assert record.to_json() == written  # file -> record -> file: nothing lost or added
    assert JobRecord.from_json(record.to_json()) == record  # record -> file -> record
    assert isinstance(held, JobRecord) and held.to_json() == written  # the task's own record is what was written
    assert read_record(job_dir / RESULTS_FILE) == (record, "")
    return record


def test_the_allow_list_is_the_records_header_and_each_field_has_a_reader() -> None:
    assert RESULT_FIELDS == {f.name for f in fields(JobRecord)} - {"sections"} == set(HEADER)
    assert {str(f.type) for f in HEADER.values()} <= set(READERS)


def test_the_record_is_a_mapping_over_its_json_keys() -> None:
    record = JobRecord(task="benchmark")
    record["utility"]["f1_micro"] = 0.5  # a header section: the attribute
    record["disclosure"] = {"flagged": False}  # any other key: a section the task declares
    record.setdefault("higher_is_better", {})["utility.f1_micro"] = True
    assert record.utility == {"f1_micro": 0.5} and record.sections == {
        "disclosure": {"flagged": False},
        "higher_is_better": {"utility.f1_micro": True},
    }
    assert "error" not in record and "error" not in record.to_json()  # written for a failed job only
    assert list(record)[-2:] == ["disclosure", "higher_is_better"] and len(record) == len(HEADER) + 1
    record.mark_non_dp(["disclosure.flagged"])
    record.mark_non_dp(["utility.real_f1", "disclosure.flagged"])
    assert record.non_dp_outputs == ["disclosure.flagged", "utility.real_f1"]
    with pytest.raises(KeyError, match="epsilon is a field of every results.json"):
        del record["epsilon"]
    with pytest.raises(ValueError, match=r"header field\(s\) \['task'\]"):
        JobRecord(sections={"task": "x"})


def test_an_older_file_reads_with_defaults_and_its_sections_as_written() -> None:
    old = {"task": "audit", "epsilon": "inf", "seed": 3, "status": "complete", "audit": {"auc": 0.5}, "extra": [1]}
    record = JobRecord.from_json(old)
    assert record.epsilon == float("inf") and record.seed == 3 and record.audit == {"auc": 0.5}
    assert record.report_section == "audit"  # tabulated by its task's name before tasks declared a section
    assert record.non_dp_outputs == [] and record.generation == {} and record.error is None
    assert record.sections == {"extra": [1]} and record.reason() == ""
    odd = JobRecord.from_json({"seed": True, "utility": [1], "non_dp_outputs": "x", "status": None})
    assert (odd.seed, odd.utility, odd.non_dp_outputs, odd.status) == (None, {}, [], RUNNING)
    assert JobRecord.from_json({"task": "benchmark", "report_section": None}).report_section is None


def test_a_benchmark_job_round_trips(tmp_path: Path, tiny_dataset: list[str]) -> None:
    from synbench.generators.copy import CopyGenerator
    from synbench.tasks import benchmark

    cfg = compose_config([*tiny_dataset, "generator=copy", "metrics=[utility]", "tracking=none", "eps=2"])
    held = benchmark.run(JobConfig.from_config(cfg), tmp_path)
    record = assert_round_trip(held, tmp_path)
    assert record.status == "complete" and record.report_section == "benchmark" and record.noise == "n/a"
    assert record.epsilon_spent == float("inf") and record.non_private_control is True
    assert "disclosure" in record.sections and record.utility["f1_micro"] >= 0
    assert not violations(record.to_json(), CopyGenerator, benchmark.BenchmarkTask)
    assert benchmark.run(JobConfig.from_config(cfg), tmp_path) == record  # a complete job is skipped: its record


def test_an_audit_job_round_trips(tmp_path: Path, audit_data: tuple[list[str], list[str]]) -> None:  # noqa: F811
    from synbench.tasks import audit

    overrides, _ = audit_data
    cfg = compose_config([*overrides, "generator=copy", "eps=inf", "audit.mode=one_run"])
    record = assert_round_trip(audit.run(JobConfig.from_config(cfg), tmp_path), tmp_path)
    assert record.report_section == "audit" and record.audit["mode"] == "one_run" and record.generation["n_runs"] == 1


def test_a_model_audit_job_round_trips(tmp_path: Path, reviews: list[str]) -> None:
    from synbench.tasks import model_audit

    overrides = [*reviews, *MODEL_AUDIT_TINY, "task=model_audit", "generator=copy", "eps=inf"]
    cfg = compose_config([*overrides, "model_audit.regimes=[syn,pri]", f"output_root={tmp_path}"])
    record = assert_round_trip(model_audit.run(JobConfig.from_config(cfg), tmp_path), tmp_path)
    assert record.report_section == "model_audit" and record.sections["model_audit"]["n_targets"] == 40


def test_a_contamination_job_round_trips(tmp_path: Path, tiny_dataset: list[str], tiny_model: dict[str, Any]) -> None:
    from synbench.tasks import contamination

    overrides = [
        *tiny_dataset,
        "task=contamination",
        "tracking=none",
        f"output_root={tmp_path}",
        f"cache_dir={tmp_path / 'cache'}",
        "generator=copy",
        "eps=inf",
        "metrics=[utility]",
        "contamination.exact.n=16",
        "contamination.mink.enabled=false",
        "contamination.ablation.enabled=true",
        "contamination.ablation.detector=exact",
        "contamination.ablation.reps=1",
        "contamination.ablation.steps=[1.0]",
        *model_overrides(tiny_model),
    ]
    held = contamination.run(JobConfig.from_config(compose_config(overrides)), tmp_path / "job")
    record = assert_round_trip(held, tmp_path / "job")
    assert record.report_section == "contamination" and "ablation" in record.sections["contamination"]
    assert record.non_dp_outputs == ["contamination.ablation", "contamination.exact"]


def test_a_failed_job_round_trips_and_a_config_failure_reads_through_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lifecycle, "make_tracker", lambda *a, **k: type("T", (), {"finish": lambda *a, **k: None})())
    config = JobConfig.from_config(compose_config(["tracking=none", "generator=copy", "eps=inf"]))

    def body(job: lifecycle.JobRun) -> None:
        raise DataError("train.jsonl line 3: no text")

    with pytest.raises(DataError):
        lifecycle.run_job(config, tmp_path / "sweep" / "benchmark" / "a", body)
    written = json.loads((tmp_path / "sweep" / "benchmark" / "a" / RESULTS_FILE).read_text())
    record = JobRecord.from_json(written)
    assert record.to_json() == written and record.status == FAILED and record.job_key == config.spec.key
    assert record.reason() == "DataError: train.jsonl line 3: no text"
    # what the app writes when the config fails before any task runs: read with its header's defaults
    write_results(tmp_path / "sweep" / "benchmark" / "b", {"status": FAILED, "error": {"type": "ConfigError"}})
    [a, b] = sweep_rows(tmp_path / "sweep")
    assert a["reason"] == record.reason() and a["config.generator._plugin_"] == "copy"
    assert b["status"] == FAILED and b["reason"] == "ConfigError: no message recorded" and b["task"] is None
    assert b["non_dp_outputs"] == "[]" and b["label_space_inferred"] is False


def test_the_sweeps_closing_table_lists_the_jobs_this_run_touched_with_their_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = tmp_path / "sweep"
    earlier = JobRecord(task="benchmark", dataset="other", generator="copy", epsilon=1.0, seed=0, status="complete")
    now = JobRecord(task="benchmark", dataset="tiny", generator="copy", epsilon=2.0, seed=0, status=FAILED)
    now.error = {"type": "DataError", "message": "train.jsonl line 3: no text"}
    write_results(sweep / "benchmark" / "eps=1", earlier)
    old = time.time() - 3600
    os.utime(sweep / "benchmark" / "eps=1" / RESULTS_FILE, (old, old))  # an earlier run under the same sweep name
    callback = SweepCallback()
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}, "output_subdir": ".hydra"}})
    callback._sweep_started = time.time() - 1
    write_results(sweep / "benchmark" / "eps=2", now)
    assert [row["job"] for row in run_rows(sweep, callback._sweep_started, (".hydra",))] == ["benchmark/eps=2"]
    with pytest.raises(SystemExit, match="1 of 1 job"):
        callback.on_multirun_end(config)
    out = capsys.readouterr().out
    assert "1 job(s)" in out and " tiny " in out and "other" not in out and "dataset" in out.splitlines()[2]
    assert "FAILED benchmark/eps=2: DataError: train.jsonl line 3: no text" in out


def test_the_closing_tables_figure_is_a_benchmarks_macro_f1_or_an_audits_bound_and_its_heading_says_so() -> None:
    """The last column names what it shows: macro F1 for a benchmark job (never its micro F1), the eps lower bound
    for an audit job; the heading is as wide as its cells."""
    header = {"dataset": "d", "generator": "g", "epsilon": 4.0, "seed": 0, "status": "complete", "epsilon_spent": 4.0}
    benchmark = {**header, "task": "benchmark", "utility.f1_micro": 0.52, "utility.f1_macro": 0.35}
    audit = {**header, "task": "audit", "audit.eps_emp_lower": 0.8}
    heading, bench_line, audit_line = (
        table_line([heading for heading, _, _ in COLUMNS]),
        *(table_line([cell(row) for _, _, cell in COLUMNS]) for row in (benchmark, audit)),
    )
    assert heading.endswith(" F1 macro / eps_lb") and len(heading) == len(bench_line) == len(audit_line)
    assert bench_line.endswith(" 0.35") and "0.52" not in bench_line and audit_line.endswith(" 0.8")
