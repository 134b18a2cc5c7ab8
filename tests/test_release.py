"""What a job releases: the budget check, the results allow-list, and no private statistic in results or W&B."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from conftest import model_overrides, run_cli
from synbench.core.base import FitReport, Generator
from synbench.core.errors import SynBenchError
from synbench.core.privacy import PrivacySpec
from synbench.generators.dpgen import DPGenGenerator
from synbench.job.release import public_details, violations
from synbench.job.run import check_budget
from synbench.tasks.benchmark import BenchmarkTask

PRIVATE_NAMES = ("train_loss", "train_tokens", "batch_size")
# What W&B must not hold: the per-step curves (logged as fit/<name>) and the private scalars. (The config's
# generator.batch_size, a public setting, is in the W&B run, so the curve is looked for by its logged name.)
PRIVATE_IN_TRACKER = (b"fit/", b"train_loss", b"train_tokens")
# The utility metric's real-data baselines (trained on the private split, the paper's upper bound): written by
# default and named in non_dp_outputs, as the audit's figures are (metrics.utility.baselines=eval avoids them).
UTILITY_DIAGNOSTICS = [
    "utility.majority_f1",
    "utility.majority_f1_macro",
    "utility.matched_real_f1",
    "utility.matched_real_f1_macro",
    "utility.n_matched_repeats",
    "utility.real_f1",
    "utility.real_f1_eval_sd",
    "utility.real_f1_macro",
    "utility.real_f1_macro_eval_sd",
]


def test_check_budget_fails_a_private_request_answered_with_inf() -> None:
    from synbench.generators.copy import CopyGenerator
    from synbench.generators.dpgen import DPGenGenerator

    leaky = DPGenGenerator.__new__(DPGenGenerator)  # any generator but the built-in controls (copy, public)
    with pytest.raises(SynBenchError, match="'leaky'.*epsilon_spent=inf.*only the built-in controls"):
        check_budget(FitReport(math.inf, 1e-6), PrivacySpec(2.0, 1e-6, "prv"), leaky, "leaky")
    check_budget(FitReport(math.inf, 1e-6), PrivacySpec(math.inf, 1e-6, "prv"), leaky, "p")
    check_budget(FitReport(math.inf, 0.0), PrivacySpec(2.0, 1e-6, "prv"), CopyGenerator(), "copy")  # a declared control


def test_check_budget_fails_a_delta_above_the_requested_one() -> None:
    from synbench.generators.copy import CopyGenerator

    gen = CopyGenerator()
    with pytest.raises(SynBenchError, match="'loose'.*delta=1e-05"):
        check_budget(FitReport(2.0, 1e-5), PrivacySpec(2.0, 1e-6, "prv"), gen, "loose")
    with pytest.raises(SynBenchError, match="'greedy'.*epsilon=2.1"):
        check_budget(FitReport(2.1, 1e-6), PrivacySpec(2.0, 1e-6, "prv"), gen, "greedy")
    check_budget(FitReport(2.0, 1e-6), PrivacySpec(2.0, 1e-6, "prv"), gen, "exact")


def test_undeclared_details_are_dropped_and_an_unknown_field_is_a_violation(caplog: pytest.LogCaptureFixture) -> None:
    class Declares(Generator):
        public_details = frozenset({"sigma"})

        def fit(self, *args: Any) -> FitReport:
            raise NotImplementedError

        def sample(self, *args: Any) -> Any:
            raise NotImplementedError

    assert public_details(Declares(), "declares", {"sigma": 1.0, "train_tokens": 1234}) == {"sigma": 1.0}
    assert "train_tokens" in caplog.text and "1234" not in caplog.text
    clean = {"task": "benchmark", "generation": {"n_private": 3, "sigma": 1.0}, "non_dp_outputs": []}
    assert violations(clean, Declares, BenchmarkTask) == []
    assert violations({**clean, "loss": 0.3}, Declares, BenchmarkTask) == ["loss"]
    undeclared = {**clean, "generation": {"train_tokens": 9}}
    assert violations(undeclared, Declares, BenchmarkTask) == ["generation.train_tokens"]
    assert violations(clean, Declares, None) == ["generation.n_private"]  # the task's own keys come with its class
    flagged = {**clean, "generation": {"train_tokens": 9}, "non_dp_outputs": ["generation.train_tokens"]}
    assert violations(flagged, Declares, BenchmarkTask) == []


def dpgen_job(
    tmp_path: Path, tiny_dataset: list[str], tiny_model: dict[str, Any], *extra: str
) -> tuple[dict[str, Any], bytes]:
    """A DP-Gen benchmark job on the tiny model with W&B offline; (results.json, every byte the W&B run wrote)."""
    out = tmp_path / "out"
    # a key is given once: a label space in `extra` replaces the default one
    labels = [] if any(arg.startswith("dataset.label_space=") for arg in extra) else ["dataset.label_space=[neg,pos]"]
    run_cli(
        [
            *tiny_dataset,
            *labels,
            "generator=dpgen",
            *model_overrides(tiny_model),
            "generator.batch_size=8",
            "generator.physical_batch_size=8",
            "generator.max_seq_len=32",
            "generator.max_new_tokens=8",
            "generator.sample_batch_size=16",
            "generator.num_threads=1",
            "eps=4",
            "tracking=wandb",
            "metrics=[utility,length]",
            f"output_root={out}",
            *extra,
        ],
        cwd=tmp_path,
    )
    [path] = list(out.rglob("results.json"))
    wandb_bytes = b"".join(p.read_bytes() for p in out.rglob("wandb/**/*") if p.is_file())
    assert wandb_bytes, "the job wrote no W&B run"
    return json.loads(path.read_text()), wandb_bytes


def test_default_job_releases_only_allow_listed_fields(
    tmp_path: Path, tiny_dataset: list[str], tiny_model: dict[str, Any]
) -> None:
    results, wandb_bytes = dpgen_job(tmp_path, tiny_dataset, tiny_model)
    assert results["status"] == "complete" and results["noise"] == "secure"
    disclosure = [f"disclosure.{k}" for k in results["disclosure"]]  # the operator's check of copies
    assert results["non_dp_outputs"] == results["diagnostic_outputs"] == sorted(UTILITY_DIAGNOSTICS + disclosure)
    assert results["label_space_inferred"] is False and results["delta"] == pytest.approx(1 / 30**2)
    assert violations(results, DPGenGenerator, BenchmarkTask) == []
    written = {f"{s}.{k}" for s in ("generation", "utility", "fidelity") for k in results[s]}
    assert not [w for w in written if w.split(".")[1] in PRIVATE_NAMES]
    assert results["utility"]["f1_micro"] >= 0 and results["utility"]["real_f1"] >= 0  # the metric ran, with its bound
    for name in PRIVATE_IN_TRACKER:
        assert name not in wandb_bytes, f"{name!r} reached the W&B run"


@pytest.mark.slow
def test_opting_in_releases_private_stats_and_marks_them(
    tmp_path: Path, tiny_dataset: list[str], tiny_model: dict[str, Any]
) -> None:
    results, wandb_bytes = dpgen_job(
        tmp_path, tiny_dataset, tiny_model, "tracking.log_private_stats=true", "dataset.label_space=null"
    )
    flagged = set(results["non_dp_outputs"])
    assert {"generation.train_tokens", "utility.real_f1", "utility.majority_f1", "tracker:fit/train_loss"} <= flagged
    assert results["generation"]["train_tokens"] > 0 and "real_f1" in results["utility"]
    assert violations(results, DPGenGenerator, BenchmarkTask) == []
    assert b"fit/train_loss" in wandb_bytes
    assert results["label_space_inferred"] is True
