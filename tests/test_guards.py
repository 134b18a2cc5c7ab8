"""Guards that hold at run time: errors quote no record, no digest of private data, built-in controls only,
inputs refused with one line, private file modes, and the release allow-list enforced when results are written."""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path
from typing import Any

import pytest

from conftest import SENTINEL, compose_config, run_cli, write_jsonl, written_bytes
from synbench.core.base import FitReport, Generator
from synbench.core.errors import ConfigError, SynBenchError
from synbench.core.privacy import PrivacySpec
from synbench.testing.generator import job_budget

# --- 1. errors never quote a record value -----------------------------------------------------------------


def _broken_inputs(folder: Path) -> dict[str, Path]:
    """Inputs that each fail loading, with the sentinel in every field (values and, where a reader may take them
    as names, the first line)."""
    folder.mkdir()
    s = SENTINEL
    files = {
        "bad_label": write_jsonl(
            folder / "bad_label.jsonl",
            [{"text": f"{s} doc {i}", "label": f"{s} label {i}", "id": f"{s}-{i}"} for i in range(12)],
        ),
        "wrong_field": write_jsonl(
            folder / "wrong_field.jsonl", [{f"{s} body": f"{s} doc {i}", f"{s} tag": s} for i in range(12)]
        ),
        "two_labels": write_jsonl(
            folder / "two_labels.jsonl", [{"text": f"{s} doc", "label": [f"{s} a", f"{s} b"], "id": s}]
        ),
    }
    files["headerless"] = folder / "headerless.csv"  # its first document becomes the "field names"
    files["headerless"].write_text("".join(f'"{s} doc {i}, with a comma",{s}-label\n' for i in range(12)))
    files["bad_json"] = folder / "bad_json.jsonl"
    files["bad_json"].write_text(
        json.dumps({"text": f"{s} ok", "label": "neg", "id": s}) + "\n" + f'{{"text": "{s}", "label": {s}}}\n'
    )
    files["duplicate_id"] = write_jsonl(
        folder / "duplicate_id.jsonl", [{"text": f"{s} doc", "label": "neg", "id": s}] * 2
    )
    return files


def test_no_error_quotes_a_record_value(tmp_path: Path, tiny_dataset: list[str]) -> None:
    """A sweep of broken inputs: stderr, stdout (the sweep summary) and every file written are free of the sentinel.

    `bad_label` has a distinct sentinel label per document, as `label_field=text` gives: with the label space
    inferred (null) it is refused as text-like; tests/test_data.py checks the configured-space path.
    """
    files = _broken_inputs(tmp_path / "broken")
    eval_rows = [{"text": f"eval note {i}", "label": ("neg", "pos")[i % 2], "id": f"e{i}"} for i in range(10)]
    evaluation = write_jsonl(tmp_path / "eval.jsonl", eval_rows)
    out = tmp_path / "out"
    proc = run_cli(
        [
            "-m",
            *(o for o in tiny_dataset if not o.startswith(("dataset.train=", "dataset.eval="))),
            f"dataset.eval={evaluation}",
            "+dataset.id_field=id",
            "dataset.label_space=null",
            "generator=copy",
            "tracking=none",
            "metrics=[]",
            f"output_root={out}",
            "sweep=broken",
            f"dataset.train={','.join(str(p) for p in files.values())}",
        ],
        cwd=tmp_path,
        check=False,
    )
    summary = proc.stdout + proc.stderr
    assert proc.returncode != 0 and summary.count("FAILED ") == len(files), summary  # each job failed, named
    assert "allow_inferred_label_space=true" in summary and "dataset.text_field=" in summary
    results = [json.loads(p.read_text()) for p in out.rglob("results.json")]
    assert len(results) == len(files) and all(r["status"] == "failed" for r in results)
    assert all(r["error"]["type"] == "DataError" for r in results)
    assert SENTINEL not in summary
    assert SENTINEL.encode() not in written_bytes(out)


# --- 2. no digest of private data in a job's files --------------------------------------------------------


def test_resume_key_is_keyed_by_a_secret_outside_the_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from synbench.core.corpus import Corpus
    from synbench.core.keyed import secret_path
    from synbench.job.resume import resume_key

    monkeypatch.setenv("SYNBENCH_SECRET_FILE", str(tmp_path / "secret" / "resume.key"))
    docs = Corpus.build([f"doc {i}" for i in range(5)], [["a"]] * 5, ["a"], name="d")
    fewer = docs.subset([0, 1, 2, 3])
    key = resume_key({"eps": 4}, docs)
    assert key == resume_key({"eps": 4}, docs) and key != resume_key({"eps": 4}, fewer) != resume_key({"eps": 2}, docs)
    assert stat.S_IMODE(secret_path().stat().st_mode) == 0o600
    assert stat.S_IMODE(secret_path().parent.stat().st_mode) == 0o700
    assert docs.digest() not in key and hashlib.sha256(docs.digest().encode()).hexdigest()[:32] != key
    monkeypatch.setenv("SYNBENCH_SECRET_FILE", str(tmp_path / "other" / "resume.key"))
    assert resume_key({"eps": 4}, docs) != key  # without the secret, the key cannot be recomputed from a candidate


def test_dpgen_checkpoint_holds_no_digest_of_the_data(
    tmp_path: Path, tiny_model: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from synbench.core.corpus import Corpus
    from synbench.generators.dpgen import DPGenGenerator
    from synbench.generators.dpgen.weights import STATE_FILE

    monkeypatch.setenv("SYNBENCH_SECRET_FILE", str(tmp_path / "secret.key"))
    torch.set_num_threads(1)
    texts = [f"patient {i} reports {'mild' if i % 2 else 'severe'} headache" for i in range(24)]
    docs = Corpus.build(texts, [[("neg", "pos")[i % 2]] for i in range(24)], ("neg", "pos"), name="tiny")
    settings = dict(epochs=1, batch_size=8, physical_batch_size=8, max_seq_len=16, max_new_tokens=4, lr=1e-3)

    def fit(corpus: Corpus) -> FitReport:
        gen = DPGenGenerator(model=tiny_model, workdir=str(tmp_path / "job"), **settings)
        return gen.fit(corpus, job_budget(24, 4.0), seed=0)

    assert fit(docs).details["resumed"] is False
    state = (tmp_path / "job" / "dpgen" / STATE_FILE).read_text()
    assert "fingerprint" not in state and docs.digest() not in state and docs.digest()[:16] not in state
    assert fit(docs).details["resumed"] is True  # the same job on the same data still resumes
    assert fit(docs.subset(list(range(23)))).details["resumed"] is False  # one document fewer: trained again


# --- 3. non-private controls are the core's built-ins only ------------------------------------------------


class _Inf(Generator):
    """A plugin that answers every request with epsilon_spent = inf, whatever it declares about itself."""

    private = False  # what a plugin could once set to skip the budget check; now ignored

    def fit(self, corpus: Any, privacy: PrivacySpec, seed: int) -> FitReport:
        return FitReport(math.inf, 0.0)

    def sample(self, n: int, label_counts: Any = None) -> Any:
        raise NotImplementedError


def test_only_the_built_in_controls_may_answer_a_private_request_with_inf() -> None:
    from synbench.generators.copy import CopyGenerator
    from synbench.generators.public import PublicGenerator
    from synbench.job import release
    from synbench.job.run import check_budget

    impostor = type(
        "CopyGenerator", (_Inf,), {"__module__": "synbench.generators.copy", "__qualname__": "CopyGenerator"}
    )
    assert release.is_control(CopyGenerator) and release.is_control(PublicGenerator)
    assert not release.is_control(_Inf) and not release.is_control(impostor)
    for plugin in (_Inf(), impostor()):
        with pytest.raises(SynBenchError, match="only the built-in controls"):
            check_budget(FitReport(math.inf, 0.0), PrivacySpec(4.0, 1e-6, "prv"), plugin, "plugin")
    check_budget(FitReport(math.inf, 0.0), PrivacySpec(4.0, 1e-6, "prv"), CopyGenerator(), "copy")
    assert release.noise_mode(CopyGenerator, "secure") == "n/a" and release.noise_mode(_Inf, "secure") == "secure"


def test_only_copy_is_marked_a_non_private_control(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both built-in controls say noise n/a; `public` spends 0, so only `copy` (inf) is marked non-private."""
    from synbench.core.corpus import Corpus
    from synbench.generators.public import PublicGenerator
    from synbench.job.run import GeneratorRun

    docs = Corpus.build([f"doc {i}" for i in range(4)], [["a"]] * 4, ["a"], name="d")
    # public's real constructor (its backend loads the LM only to write); only sample, which writes, is replaced. Not
    # __init__: schema.signature_options caches the schema read from its signature for the process, so a patched one
    # (**kw: no schema) would leave every later composition of generator=public failing
    monkeypatch.setattr(PublicGenerator, "sample", lambda self, n, label_counts=None: docs)
    required = {"public": {"model": {"name": "public-lm"}, "domain": "d"}, "copy": {}}  # the keys public requires
    for name, marked in (("public", False), ("copy", True)):
        run = GeneratorRun(
            {"_plugin_": name, **required[name]}, name, PrivacySpec(4.0, 1e-3, "prv"), seed=0, n_synthetic=4
        )
        assert run.execute(docs).record["non_private_control"] is marked, name


# --- 6. inputs: unknown keys, eps ceiling, calibration time, n_synthetic, delta -----------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["+epsilon=0.5"], "did you mean eps?"),
        (["epsilon=0.5"], "did you mean eps?"),
        (["+foo=1"], "'+foo' is not a config key"),
        (["generator.backend.base_url=http://user:key@host/v1"], "generator.backend.base_url in the command line"),
    ],
)
def test_the_command_line_is_checked_before_hydra(args: list[str], expected: str) -> None:
    from synbench.cli.app import check_command_line

    with pytest.raises(ConfigError) as info:
        check_command_line(args)
    assert expected in str(info.value) and "\n" not in str(info.value) and "key@" not in str(info.value)
    check_command_line(
        [
            "-m",
            "eps=1,4",
            "+experiment=demo",
            "~attack",
            "hydra.run.dir=x",
            "dataset.train=a.jsonl",
            "+paper_dataset=hoc",
            "data_root=/data",
            "--cfg",
            "job",
        ]
    )


def test_unknown_top_level_key_exits_2_with_one_line(tmp_path: Path, tiny_dataset: list[str]) -> None:
    out = tmp_path / "out"
    proc = run_cli(
        [*tiny_dataset, "generator=copy", "tracking=none", "metrics=[]", f"output_root={out}", "+epsilon=0.5"],
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "did you mean eps?" in proc.stderr and not out.exists()  # nothing ran, nothing was saved


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("eps=1e300", "eps=1e+300 is above 100"),
        ("eps=1e6", "eps=1000000.0 is above 100"),
        ("task.n_synthetic=-5", "task.n_synthetic=-5"),
        ("task.n_synthetic=0", "task.n_synthetic=0"),
        ("cache_dir=/tmp/elsewhere", "cache_dir=/tmp/elsewhere is outside output_root"),
        ("generator.backend.base_url=http://u:secret@h", "generator.backend.base_url in the config"),
    ],
)
def test_bad_values_are_one_line_errors(override: str, expected: str) -> None:
    from synbench.job.spec import JobConfig

    overrides = ["generator=augpe", f"+{override}"] if "backend" in override else [override]
    with pytest.raises(ConfigError) as info:
        JobConfig.from_config(compose_config(overrides))
    assert expected in str(info.value) and "\n" not in str(info.value) and "secret" not in str(info.value)


def test_calibration_stops_at_its_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from synbench.dp import accounting

    monkeypatch.setattr(accounting, "CALIBRATION_TIME_LIMIT_S", 0.0)
    with pytest.raises(ConfigError, match="took over 0 s") as info:
        accounting.calibrate.__wrapped__(4.0, 1e-5, 0.1, 7, "rdp", None)
    assert "\n" not in str(info.value)


def test_delta_of_one_over_n_or_more_is_refused_unless_allowed() -> None:
    from synbench.core.privacy import resolve_delta

    with pytest.raises(ConfigError, match=r"delta=0.5 is 0.5, at least 1/N for the N=41 .*allow_large_delta=true"):
        resolve_delta(0.5, 41)
    with pytest.raises(ConfigError, match="1/N"):
        resolve_delta(1 / 41, 41)
    assert resolve_delta(0.5, 41, allow_large=True) == 0.5
    assert resolve_delta(None, 41) == pytest.approx(1 / 41**2) and resolve_delta(0.02, 41) == 0.02


def test_the_job_config_refuses_a_large_delta_unless_allowed() -> None:
    from synbench.job.spec import JobConfig

    with pytest.raises(ConfigError, match="privacy.allow_large_delta=true"):
        JobConfig.from_config(compose_config(["generator=copy", "delta=0.5"])).budget(41)
    allowed = JobConfig.from_config(compose_config(["generator=copy", "delta=0.5", "privacy.allow_large_delta=true"]))
    assert allowed.budget(41).delta == 0.5


# --- 7. files, caches, credentials, tracking ----------------------------------------------------------------


def test_everything_a_job_writes_is_private_to_its_user(tmp_path: Path, tiny_dataset: list[str]) -> None:
    """Results, synthetic text, app.log, .hydra/ and the W&B run: files 0600, folders 0700."""
    out = tmp_path / "out"
    run_cli([*tiny_dataset, "generator=copy", "tracking=wandb", "metrics=[]", f"output_root={out}"], cwd=tmp_path)
    paths = [out, *out.rglob("*")]
    assert any(p.name == "app.log" for p in paths) and any(p.name == ".hydra" for p in paths)
    assert any(p.name == "wandb" for p in paths)
    loose = [
        f"{p} {oct(stat.S_IMODE(p.stat().st_mode))}"
        for p in paths
        if not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)
    ]
    assert not loose, loose


def test_log_private_stats_is_part_of_the_job_key() -> None:
    from synbench.job.spec import JobConfig

    default = JobConfig.from_config(compose_config(["generator=copy"])).spec
    opted = JobConfig.from_config(compose_config(["generator=copy", "tracking.log_private_stats=true"])).spec
    assert default.key != opted.key and opted.config["tracking"] == {"log_private_stats": True}
    assert "tracking" not in default.config  # default keys unchanged
    elsewhere = JobConfig.from_config(compose_config(["generator=copy", "tracking=none"])).spec
    assert elsewhere.key == default.key  # where a job logs is not part of it


def test_embedding_cache_key_covers_every_encoder_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from dataclasses import fields, replace

    from synbench.core.base import EncoderSpec
    from synbench.text.embeddings import EmbeddingCache

    monkeypatch.setenv("SYNBENCH_SECRET_FILE", str(tmp_path / "secret.key"))
    spec = EncoderSpec(name="minilm", pretrained="a", package=None, batch_size=64, max_seq_length=256, normalize=True)
    changed = {
        "name": "other",
        "pretrained": "b",
        "package": "pkg",
        "batch_size": 8,
        "max_seq_length": 128,
        "normalize": False,
    }
    assert set(changed) == {f.name for f in fields(EncoderSpec)}
    texts = ["a private note"]
    base = EmbeddingCache(spec).key(texts)
    for name, value in changed.items():
        assert EmbeddingCache(replace(spec, **{name: value})).key(texts) != base, name


def test_embedding_cache_files_are_private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The on-disk cache of embeddings of private text: folder 0700, file 0600, named by no digest of the texts."""
    import hashlib

    import numpy as np

    from synbench.text import embeddings

    class Encoder:
        def encode(self, texts: list[str], **kw: Any) -> np.ndarray:
            return np.ones((len(texts), 3))

    monkeypatch.setenv("SYNBENCH_SECRET_FILE", str(tmp_path / "secret.key"))
    monkeypatch.setattr(embeddings, "load_encoder", lambda spec: Encoder())
    folder = tmp_path / "out" / "cache"
    embeddings.EmbeddingCache(embeddings.EncoderSpec(name="m", pretrained="m"), folder).embed(["a private note"])
    [saved] = [p for p in folder.rglob("*") if p.is_file()]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(saved.stat().st_mode) == 0o600
    unkeyed = hashlib.sha256(b"m")  # the name the cache had when keyed by a plain hash of the encoder name and texts
    unkeyed.update(hashlib.sha256(b"a private note").digest())
    assert unkeyed.hexdigest()[:24] not in saved.name


class _Run:
    """Records what a W&B run is told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    def define_metric(self, name: str, **kw: Any) -> None:
        self.calls.append(("define_metric", name, kw))

    def log(self, data: dict[str, Any], **kw: Any) -> None:
        self.calls.append(("log", data, kw))


def test_wandb_curves_have_their_own_step_axis() -> None:
    """Curves logged after the summary keep every point: no `step=` (W&B drops lower steps), a define_metric axis."""
    from synbench.job.tracking import WandbTracker

    tracker = WandbTracker.__new__(WandbTracker)
    tracker.run, tracker._axes, tracker._eps = _Run(), set(), 4.0
    tracker.log_metrics({"utility/f1_micro": 0.5})
    assert tracker.run.calls[0] == ("log", {"utility/f1_micro": 0.5, "eps": 4.0}, {})  # eps: the view's x-axis
    for step, loss in enumerate([3.0, 2.0, 1.0]):
        tracker.log_metrics({"fit/train_loss": loss}, step=step)
    assert all(not kw for kind, _, kw in tracker.run.calls if kind == "log")
    assert ("define_metric", "fit/*", {"step_metric": "fit/step"}) in tracker.run.calls
    points = [data for kind, data, _ in tracker.run.calls if kind == "log" and "fit/train_loss" in data]
    assert [p["fit/step"] for p in points] == [0, 1, 2]


# --- the allow-list, enforced when results are written ------------------------------------------------------


def test_results_writer_fails_a_field_outside_the_allow_list(tmp_path: Path) -> None:
    from synbench.generators.copy import CopyGenerator
    from synbench.job.release import ReleaseError
    from synbench.job.results import read_results, write_results
    from synbench.tasks.benchmark import BenchmarkTask

    clean = {
        "task": "benchmark",
        "generator": "copy",
        "status": "complete",
        "non_dp_outputs": [],
        "generation": {"n_private": 3, "control": "copy"},
    }
    write_results(tmp_path, clean, CopyGenerator, BenchmarkTask)
    assert read_results(tmp_path) == clean
    with pytest.raises(ReleaseError, match=r"outside the release allow-list: generation\.control"):
        write_results(tmp_path, clean, None, BenchmarkTask)  # without its generator, its details are not declared
    with pytest.raises(ReleaseError, match=r"outside the release allow-list: train_loss, generation\.train_tokens"):
        write_results(
            tmp_path,
            {**clean, "train_loss": 0.3, "generation": {"n_private": 3, "train_tokens": 99}},
            CopyGenerator,
            BenchmarkTask,
        )
    written = read_results(tmp_path)
    assert written is not None and written["status"] == "failed" and "train_loss" not in written
    assert written["generation"] == {"n_private": 3} and "generation.train_tokens" in written["error"]["message"]


def test_two_jobs_making_the_secret_together_agree_on_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second job that starts while the first is still making the secret reads a whole secret, the same one.

    The second job is simulated inside the first's draw of the random bytes,
    the moment an exclusive-create-then-write left an empty file behind.
    """
    from synbench.core import keyed

    path = tmp_path / "secret" / "resume.key"
    draw, seen = keyed.secrets.token_bytes, []

    def draw_while_another_job_starts(n: int) -> bytes:
        if not seen:
            seen.append(None)
            seen.append(keyed._secret.__wrapped__(path))  # the other job, with its own cache
        return draw(n)

    monkeypatch.setattr(keyed.secrets, "token_bytes", draw_while_another_job_starts)
    first = keyed._secret.__wrapped__(path)
    assert len(first) == keyed.SECRET_BYTES and seen[1] == first == path.read_bytes()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and [p.name for p in path.parent.iterdir()] == [path.name]


def test_the_corpus_checks_name_positions_never_ids() -> None:
    """A repeated id and a second label on single-label data are refused by position: an id is a record's value."""
    from synbench.core.corpus import Corpus
    from synbench.core.errors import DataError

    ids = [f"{SENTINEL}-a", f"{SENTINEL}-b", f"{SENTINEL}-a"]
    with pytest.raises(DataError, match="positions 0 and 2 share an id") as repeated:
        Corpus(ids=ids, texts=["x", "y", "z"], labels=[["p"], ["n"], ["p"]], label_space=("n", "p"))
    with pytest.raises(DataError, match="document at position 1 has 2 labels") as two_labels:
        Corpus(ids=ids[:2], texts=["x", "y"], labels=[["p"], ["n", "p"]], label_space=("n", "p"))
    assert SENTINEL not in str(repeated.value) + str(two_labels.value)
