"""results.json as one type (`synbench.job.record.JobRecord`): every task's results written and read back through it.

Each task that writes results runs here on a small job; its results.json read through the record and written again
is the same file (nothing lost, nothing added), and the record the task held is the one the file holds.
"""

from __future__ import annotations

import ast
import json
import math
import os
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from conftest import compose_config, model_overrides
from synbench.cli.sweeps import COLUMNS, SweepCallback, run_jobs, table_line
from synbench.core.errors import DataError
from synbench.job import lifecycle
from synbench.job.record import (
    FAILED,
    HEADER,
    READERS,
    RUNNING,
    SCHEMA_VERSION,
    Audit,
    Disclosure,
    Generation,
    JobRecord,
    Utility,
)
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
    assert dict(record.utility) == {"f1_micro": 0.5} and record.to_json()["disclosure"] == {"flagged": False}
    assert record.utility.f1_micro == 0.5 and record.disclosure == Disclosure(flagged=False)  # typed as written
    assert record.higher_is_better.of_metric() == {"utility.f1_micro": True}  # setdefault's value is the one held
    assert list(record.sections) == ["disclosure", "higher_is_better"]
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
    assert record.epsilon == float("inf") and record.seed == 3 and record.audit == Audit(auc=0.5)
    assert record.report_section == "audit"  # tabulated by its task's name before tasks declared a section
    assert record.non_dp_outputs == [] and record.generation == Generation() and record.error is None
    assert record.sections == {"extra": [1]} and record.reason() == ""
    assert record.schema_version == 1 and JobRecord().schema_version == SCHEMA_VERSION  # written before the field
    odd = JobRecord.from_json({"seed": True, "utility": [1], "non_dp_outputs": "x", "status": None})
    assert (odd.seed, odd.utility, odd.non_dp_outputs, odd.status) == (None, Utility(), [], RUNNING)
    assert JobRecord.from_json({"task": "benchmark", "report_section": None}).report_section is None


def test_a_benchmark_job_round_trips(tmp_path: Path, tiny_dataset: list[str]) -> None:
    from synbench.generators.copy import CopyGenerator
    from synbench.tasks import benchmark

    cfg = compose_config([*tiny_dataset, "generator=copy", "metrics=[utility]", "tracking=none", "eps=2"])
    held = benchmark.run(JobConfig.from_config(cfg), tmp_path)
    record = assert_round_trip(held, tmp_path)
    assert record.status == "complete" and record.report_section == "benchmark" and record.noise == "n/a"
    assert record.epsilon_spent == float("inf") and record.non_private_control is True
    assert record.disclosure is not None and record.disclosure.status in (
        "flagged",
        "not flagged",
        "below attribution",
        "could not check",
    )
    assert record.utility.f1_micro is not None and record.utility.f1_micro >= 0
    assert record.higher_is_better.of_metric()["utility.f1_micro"] is True
    assert not violations(record.to_json(), CopyGenerator, benchmark.BenchmarkTask)
    assert benchmark.run(JobConfig.from_config(cfg), tmp_path) == record  # a complete job is skipped: its record


def test_an_audit_job_round_trips(tmp_path: Path, audit_data: tuple[list[str], list[str]]) -> None:  # noqa: F811
    from synbench.tasks import audit

    overrides, _ = audit_data
    cfg = compose_config([*overrides, "generator=copy", "eps=inf", "audit.mode=one_run"])
    record = assert_round_trip(audit.run(JobConfig.from_config(cfg), tmp_path), tmp_path)
    assert record.report_section == "audit" and record.audit.mode == "one_run" and record.generation.n_runs == 1


def test_a_model_audit_job_round_trips(tmp_path: Path, reviews: list[str]) -> None:
    from synbench.tasks import model_audit

    overrides = [*reviews, *MODEL_AUDIT_TINY, "task=model_audit", "generator=copy", "eps=inf"]
    cfg = compose_config([*overrides, "model_audit.regimes=[syn,pri]", f"output_root={tmp_path}"])
    record = assert_round_trip(model_audit.run(JobConfig.from_config(cfg), tmp_path), tmp_path)
    assert (
        record.report_section == "model_audit" and record.model_audit is not None and record.model_audit.n_targets == 40
    )


def test_a_contamination_job_round_trips_through_one_release_step(
    tmp_path: Path, tiny_dataset: list[str], tiny_model: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from synbench.tasks import contamination

    releases = []
    record_release = lifecycle.JobRun.record_release
    monkeypatch.setattr(
        lifecycle.JobRun, "record_release", lambda job, *a, **k: releases.append(k) or record_release(job, *a, **k)
    )

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
    found = record.contamination
    assert record.report_section == "contamination" and found is not None and found.ablation is not None
    assert found.exact is not None and found.ablation.n_flagged == found.exact.n_flagged
    assert record.non_dp_outputs == ["contamination.ablation", "contamination.exact"]
    assert len(releases) == 1 and releases[0]["run"] is not None  # the ablation's budget, in the one release step
    assert record.epsilon_spent == found.ablation.epsilon_spent and record.delta is not None


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
    assert [found.job for found in run_jobs(sweep, callback._sweep_started, (".hydra",))] == ["benchmark/eps=2"]
    with pytest.raises(SystemExit, match="1 of 1 job"):
        callback.on_multirun_end(config)
    out = capsys.readouterr().out
    assert "1 job(s)" in out and " tiny " in out and "other" not in out and "dataset" in out.splitlines()[2]
    assert "FAILED benchmark/eps=2: DataError: train.jsonl line 3: no text" in out


def test_the_closing_tables_figure_is_a_benchmarks_macro_f1_or_an_audits_bound_and_its_heading_says_so() -> None:
    """The last column names what it shows: macro F1 for a benchmark job (never its micro F1), the eps lower bound
    for an audit job; the heading is as wide as its cells."""
    header = {"dataset": "d", "generator": "g", "epsilon": 4.0, "seed": 0, "status": "complete", "epsilon_spent": 4.0}
    benchmark = JobRecord.from_json({**header, "task": "benchmark", "utility": {"f1_micro": 0.52, "f1_macro": 0.35}})
    audit = JobRecord.from_json({**header, "task": "audit", "audit": {"eps_emp_lower": 0.8}})
    heading, bench_line, audit_line = (
        table_line([heading for heading, _, _ in COLUMNS]),
        *(table_line([cell(row) for _, _, cell in COLUMNS]) for row in (benchmark, audit)),
    )
    assert heading.endswith(" F1 macro / eps_lb") and len(heading) == len(bench_line) == len(audit_line)
    assert bench_line.endswith(" 0.35") and "0.52" not in bench_line and audit_line.endswith(" 0.8")


# reads the composed Hydra config to build the job's description, before any record exists: no record is read there
CONFIG_READERS = frozenset({"synbench/job/spec.py"})
RECORD_READERS = ("synbench/report", "synbench/cli", "synbench/job")


def guessed_gets(source: str) -> list[int]:
    """The lines of `.get(key, "?")` calls in `source`: a reader guessing a field it should read by attribute."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and any(
            isinstance(arg, ast.Constant) and arg.value == "?"
            for arg in [*node.args[1:], *(k.value for k in node.keywords)]
        )
    ]


def test_no_reader_guesses_a_field_of_a_record() -> None:
    planted = (
        'def row(results):\n    return results.get("dataset", "?"), results.get("seed")\nx = d.get(k, default="?")\n'
    )
    assert sorted(guessed_gets(planted)) == [2, 3]  # the scanner finds a planted guess, positional or by keyword
    root = Path(__file__).resolve().parents[1]
    found = {
        f"{path.relative_to(root)}:{line}"
        for folder in RECORD_READERS
        for path in sorted((root / folder).rglob("*.py"))
        if path.relative_to(root).as_posix() not in CONFIG_READERS
        for line in guessed_gets(path.read_text(encoding="utf-8"))
    }
    assert not found, f"read these fields of the record by attribute (JobRecord and its sections): {sorted(found)}"


def test_typed_sections_round_trip_and_keep_what_plugins_write() -> None:
    """Every section SynBench writes reads back as its type; keys a plugin adds (a metric's, a generator's public
    detail, a value of another type than declared, an explicit null) stay in the section's `extra`, written again
    as they were."""
    written = {
        "schema_version": SCHEMA_VERSION,
        "task": "benchmark",
        "utility": {"f1_micro": 0.5, "f1_macro": 1, "f1_per_class": {"a": 0.5}, "my_metric": 0.25},
        "fidelity": {"mauve": "inf", "label_multi_share_real": 0.0},
        "audit": {"mode": "one_run", "n_needed": None, "n_needed_unit": "targets", "canaries.auc": 0.7},
        "timing": {"load_s": 1.5, "fit_s": 2.0},
        "generation": {"n_private": 10, "noise_multiplier": 1.1, "secure_mode": True, "n_eval": "ten"},
        "disclosure": {"private_reappear": 1, "flagged": False, "min_flaggable": None, "strata": {"all": {"n": 1}}},
        "higher_is_better": {"utility.f1_micro": True},
        "contamination": {"model": "m", "exact": {"exposed_share": 0.1, "index": "i", "extra_key": 3}},
        "plugin_section": {"anything": [1, 2]},
    }
    record = JobRecord.from_json(written)
    again = record.to_json()  # the file again: what it held, and the header's defaults for the fields it lacked
    assert {key: again[key] for key in written} == written and set(again) - set(written) <= set(HEADER)
    assert JobRecord.from_json(again) == record
    assert record.utility.f1_micro == 0.5 and record.utility.f1_macro == 1
    assert record.utility.extra == {"f1_per_class": {"a": 0.5}, "my_metric": 0.25}  # a plugin metric's key kept
    assert record.fidelity.mauve == math.inf and record.fidelity.label_multi_share_real == 0.0
    assert record.audit.n_needed is None and record.audit.extra["n_needed"] is None  # an explicit null, as written
    assert record.timing.total() == 3.5 and record.generation.extra["secure_mode"] is True
    assert record.generation.n_eval is None and record.generation.extra["n_eval"] == "ten"  # not an int: as written
    assert record.disclosure is not None and record.disclosure.strata == {"all": {"n": 1}}
    assert record.contamination is not None and record.contamination.exact is not None
    assert record.contamination.exact.index == "i" and record.contamination.exact.extra == {"extra_key": 3}
    assert record.higher_is_better.of_metric() == {"utility.f1_micro": True}
    assert record.sections["plugin_section"] == {"anything": [1, 2]}  # a plugin task's section, as it wrote it
    record.utility["f1_macro"] = 0.4  # a writer sets a typed key through the mapping: the attribute
    record.audit.n_needed = 12  # or by attribute, over the null the file held
    assert record.utility.f1_macro == 0.4 and record.to_json()["audit"]["n_needed"] == 12


def test_an_older_file_without_the_version_or_a_newer_field_loads(tmp_path: Path) -> None:
    """A results.json of version 1 (no `schema_version`), written before `reads_private`, `source_revision` and the
    audit's `n_needed_unit`: it loads, through the record and into the sweep's frame, with their defaults."""
    old = {
        "task": "audit",
        "dataset": "d",
        "generator": "copy",
        "epsilon": 4.0,
        "seed": 0,
        "status": "complete",
        "audit": {"mode": "one_run", "eps_emp_lower": 0.5},
    }
    write_results(tmp_path / "sweep" / "audit" / "a", old)
    record, _ = read_record(tmp_path / "sweep" / "audit" / "a" / RESULTS_FILE)
    assert record is not None and record.schema_version == 1 and record.reads_private is None
    assert record.audit.eps_emp_lower == 0.5 and record.audit.n_needed_unit is None
    [row] = sweep_rows(tmp_path / "sweep")
    assert row["schema_version"] == 1 and row["audit.eps_emp_lower"] == 0.5 and "audit.n_needed_unit" not in row
    assert JobRecord(task="audit").to_json()["schema_version"] == SCHEMA_VERSION  # a new file says its version
