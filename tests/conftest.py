"""Shared fixtures: offline environment, Hydra composition and a CLI runner."""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import subprocess
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

import synbench.cli.app  # noqa: F401  (registers the synbench_jobdir resolver)

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "WANDB_SILENT": "true"}
os.environ.update(OFFLINE_ENV)
# under pytest-xdist each worker takes its share of the cores for torch's and BLAS's thread pools (read when they are
# imported, by this process and the CLI runs it starts), so the workers do not oversubscribe the machine
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    for _pool in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_pool, str(max(1, (os.cpu_count() or 1) // _WORKERS)))


def pytest_configure(config: pytest.Config) -> None:
    """Collecting the suite (torch, transformers, every test module imported) makes objects that live until the end:
    the cyclic garbage collector's passes over them free nothing. In a process that collects (not pytest-xdist's
    controller, whose workers do), it is off until collection ends, and what was made by then is frozen out of its
    reach (`pytest_collection_finish`); each test's own garbage is collected as usual."""
    if hasattr(config, "workerinput") or config.getoption("dist", "no") == "no":
        gc.disable()


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()
    gc.enable()


def compose_config(overrides: list[str] | None = None) -> DictConfig:
    """The job config Hydra would build for these command-line overrides."""
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        return compose(config_name="config", overrides=overrides or [], return_hydra_config=False)


def last_wins(args: list[str]) -> list[str]:
    """Overrides with one per key, the last kept in its place: tests pass a fixture's defaults and then their own
    values, and the app refuses a key given twice."""

    def key(arg: str) -> str | None:
        return None if arg.startswith("-") or "=" not in arg else arg.partition("=")[0].lstrip("+~")

    last = {key(arg): i for i, arg in enumerate(args) if key(arg) is not None}
    return [arg for i, arg in enumerate(args) if key(arg) is None or last[key(arg)] == i]


def run_cli(args: list[str], cwd: Path, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Run `python -m synbench ARGS` in `cwd` the way a user does (killed after `timeout` seconds)."""
    proc = subprocess.run(
        [sys.executable, "-m", "synbench", *last_wins(args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **OFFLINE_ENV},
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"synbench {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def errors(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("synbench: error:")]


class CaseTimeout(BaseException):
    """A case ran past its limit (a BaseException, so no handler of the app takes it for the job's own error)."""


CASE_LIMIT_S = 60  # every case refuses in well under a second, or runs the copy control on 30 documents


LoggingState = dict[str, tuple[list[logging.Handler], int, bool, bool]]


def logging_state() -> LoggingState:
    """Every logger's handlers, level, propagation and disabled flag (the root's under "")."""
    loggers = {"": logging.getLogger(), **{n: lg for n, lg in logging.Logger.manager.loggerDict.items()}}
    return {
        name: (list(lg.handlers), lg.level, lg.propagate, lg.disabled)
        for name, lg in loggers.items()
        if isinstance(lg, logging.Logger)
    }


def restore_logging(state: LoggingState) -> None:
    """Undo what Hydra's logging set up for a run in this process: its handlers write to this test's captured
    streams and the job's app.log, and would outlive both (a later test logging to a closed stream)."""
    loggers = {"": logging.getLogger(), **{n: lg for n, lg in logging.Logger.manager.loggerDict.items()}}
    for name, logger in loggers.items():
        if not isinstance(logger, logging.Logger):
            continue
        # a logger the run made keeps the level its library gave it (transformers' own WARNING): only the run's
        # handlers go
        handlers, level, propagate, disabled = state.get(name, ([], logger.level, logger.propagate, logger.disabled))
        for handler in logger.handlers:
            if handler not in handlers:
                handler.close()
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate, logger.disabled = propagate, disabled


@contextmanager
def handlers_out_of_reach() -> Iterator[None]:
    """Hide the handlers that exist before a run in this process from the logging set-up of that run.

    Hydra sets logging up with dictConfig, which closes every live handler of the process (logging._handlerList),
    not only those on a logger. Some handlers close their stream: absl's, made when a test imports absl (through
    dp_accounting, in tests/test_dpgen.py), writes to the sys.stderr of that moment, pytest's capture stream, and
    closing it loses pytest's stderr. The run's own handlers are left to dictConfig and to `restore_logging`.
    """
    lock = logging._lock  # type: ignore[attr-defined]
    refs: list[weakref.ref[logging.Handler]] = logging._handlerList  # type: ignore[attr-defined]
    with lock:
        before = refs[:]
        del refs[:]
    try:
        yield
    finally:
        with lock:
            refs[:0] = before


def run_app(args: list[str], capfd: pytest.CaptureFixture[str]) -> Outcome:
    """`python -m synbench ARGS` in this process (the app's entry point): its exit status and output, as `run_cli`
    gives them but in a fraction of a second."""
    from synbench.cli.app import main
    from synbench.core import registry

    def expire(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"synbench {' '.join(args)} ran over {CASE_LIMIT_S} s")

    capfd.readouterr()
    code: Any = 0
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(CASE_LIMIT_S)
    logs = logging_state()
    local_plugins = {group: dict(plugins) for group, plugins in registry._LOCAL.items()}
    modules = set(sys.modules)
    try:
        with handlers_out_of_reach():
            main(args)
    except SystemExit as exc:  # what the interpreter would print for SystemExit("message"), and its status
        code = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        restore_logging(logs)
        # Hydra leaves the run's config in its process-wide HydraConfig: a job run from Python later in this process
        # (a task's `run` in another test) would take that stale run for its own command line
        HydraConfig.instance().cfg = None  # type: ignore[assignment]
        registry._LOCAL.clear()  # plugins a case's `plugins=` key registered stay in that case
        registry._LOCAL.update(local_plugins)
        for name in [m for m in sys.modules if m.startswith("_synbench_plugins_") and m not in modules]:
            del sys.modules[name]
    out = capfd.readouterr()
    if isinstance(code, str):
        return Outcome(1, out.out, out.err + code + "\n")
    return Outcome(int(code or 0), out.out, out.err)


def install_plugin(folder: Path) -> None:
    """`pip install -e` a plugin package of this repository, as `make install` does (no dependencies: SynBench's
    suffice).

    Skipped when the package is already installed editable from `folder`, so
    running the tests of another checkout does not repoint this environment.
    """
    import configparser
    from importlib import metadata

    setup = configparser.ConfigParser()
    setup.read(folder / "setup.cfg")
    try:
        origin = json.loads(metadata.distribution(setup["metadata"]["name"]).read_text("direct_url.json") or "{}")
    except metadata.PackageNotFoundError:
        origin = {}
    if origin.get("url") == folder.resolve().as_uri() and origin.get("dir_info", {}).get("editable"):
        return
    command = ["install", "-q", "--no-deps", "--no-build-isolation", "-e", str(folder)]
    subprocess.run([sys.executable, "-m", "pip", *command], check=True, capture_output=True, text=True)


SENTINEL = "QZX-SENTINEL-7f3a91"  # planted in every field of every broken input; must appear nowhere


def written_bytes(out: Path, skip: set[Path] | frozenset[Path] = frozenset()) -> bytes:
    """Every byte written under `out` (results, logs, Hydra's config copies), but for the files in `skip`."""
    return b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p not in skip)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> list[str]:
    """Overrides selecting a small private JSONL dataset (two labels) written for the test."""
    texts = [f"patient {i} reports {'mild' if i % 2 else 'severe'} headache after dose {i}" for i in range(40)]
    rows = [{"text": t, "label": ["pos" if i % 2 else "neg"]} for i, t in enumerate(texts)]
    train = write_jsonl(tmp_path / "train.jsonl", rows[:30])
    test = write_jsonl(tmp_path / "test.jsonl", rows[30:])
    return ["dataset=files", f"dataset.train={train}", f"dataset.eval={test}", "dataset.name=tiny"]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A model config node for a tiny random Llama saved to disk (loaded through the real loader).

    2 layers, hidden 32, and a byte-level tokenizer whose vocabulary is the 256
    byte symbols (public, fitted on nothing).
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-llama")
    vocab = {symbol: i for i, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["<eos>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<eos>").save_pretrained(folder)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        eos_token_id=vocab["<eos>"],
        pad_token_id=vocab["<eos>"],
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return {
        "name": "tiny",
        "pretrained": str(folder),
        "package": None,
        "gguf_file": None,
        "dtype": "float32",
        "attn_implementation": "auto",
    }


def model_overrides(node: dict[str, Any]) -> list[str]:
    """Command-line overrides that select a model config node (the `model` group) such as `tiny_model`."""
    return [f"model.{k}={'null' if v is None else v}" for k, v in node.items()]


@pytest.fixture(scope="session")
def llama3_folder() -> Path:
    """A tiny random Llama-3-shaped model folder (GQA, llama3 rope scaling) with SmolLM2's tokenizer, built once and
    cached (tests/model_folders.py)."""
    from model_folders import llama3_tiny_folder

    return llama3_tiny_folder()


@pytest.fixture
def reviews(tmp_path: Path) -> list[str]:
    """Overrides for a 60-document, two-label `dataset=files` dataset of short reviews with one unique word each."""
    rng = np.random.default_rng(3)
    words = "good bad dose pain sleep tablet headache better worse night day week".split()
    rows = [
        {"text": f"{' '.join(rng.choice(words, size=10))} w{i:03d}x", "label": ["pos" if i % 2 else "neg"]}
        for i in range(80)
    ]
    return reviews_dataset(tmp_path, rows)


def reviews_dataset(
    tmp_path: Path, rows: list[dict], n_train: int = 60, label_space: tuple[str, ...] = ("neg", "pos")
) -> list[str]:
    """Overrides for `dataset=files` over `rows` of the labels `label_space`: the first `n_train` train, the rest
    eval."""
    train = write_jsonl(tmp_path / "train.jsonl", rows[:n_train])
    test = write_jsonl(tmp_path / "test.jsonl", rows[n_train:])
    return [
        "dataset=files",
        f"dataset.train={train}",
        f"dataset.eval={test}",
        "dataset.name=reviews",
        f"dataset.label_space=[{','.join(label_space)}]",
    ]


def command_overrides(script: Path, tmp_path: Path) -> list[str]:
    """Overrides that run `script` through `generator=command`, its logs and outputs under `tmp_path`."""
    return [
        "generator=command",
        f"generator.command=[{sys.executable},{script},'{{spec}}','{{out}}']",
        f"generator.log_dir={tmp_path / 'logs'}",
        "tracking=none",
        f"output_root={tmp_path / 'out'}",
    ]


def write_job_results(root: Path, name: str, results: dict[str, Any]) -> Path:
    """A job's results.json at `<root>/<task>/<name>`, as the report's readers find it (the report tests write their
    known answers through it); returns the job's folder."""
    job = root / str(results["task"]) / name
    job.mkdir(parents=True)
    (job / "results.json").write_text(json.dumps(results))
    return job


def write_audit_results(
    root: Path, name: str, generator: str, eps: float, seed: int, delta: float, audit: dict[str, Any]
) -> None:
    """A complete task=audit job's results.json at `<root>/audit/<name>`, with the given `audit` section."""
    results = {
        "task": "audit",
        "dataset": "toyset",
        "generator": generator,
        "epsilon": eps,
        "seed": seed,
        "status": "complete",
        "delta": delta,
        "noise": "secure",
        "non_dp_outputs": [],
        "audit": audit,
    }
    write_job_results(root, name, results)
