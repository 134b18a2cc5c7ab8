"""A job's frozen description and its `results.json`.

`JobSpec` is the serialisable description of one job (HELM's RunSpec idea):
the resolved config minus where-to-log settings. Its hash identifies the job,
so an interrupted sweep re-run skips jobs whose results are already complete
and re-runs the rest.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
from omegaconf import DictConfig, OmegaConf

from synbench.corpus import Corpus
from synbench.errors import ConfigError
from synbench.privacy import check_accountant, check_delta_setting, check_epsilon

RESULTS_FILE = "results.json"
SECTIONS = ("utility", "fidelity", "audit", "timing")
# Keys that change where a job logs, not what it computes.
NON_SPEC_KEYS = ("hydra", "tracking", "output_root", "sweep", "cache_dir")


@dataclass(frozen=True)
class JobSpec:
    task: str
    dataset: str
    generator: str
    epsilon: float
    seed: int
    config: Mapping[str, Any]

    @classmethod
    def from_config(cls, cfg: DictConfig) -> "JobSpec":
        """The job of a composed config; every top-level key is checked here, once, with a one-line error."""
        check_top_level(cfg)
        container = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(container, dict)
        check_no_credentials({k: v for k, v in container.items() if k != "hydra"})
        config = {k: v for k, v in container.items() if k not in NON_SPEC_KEYS}
        if OmegaConf.select(cfg, "tracking.log_private_stats", default=False):
            # It changes what the job releases, so it is part of the job (and its key); absent when off, so the
            # keys of default jobs stay as they were.
            config["tracking"] = {"log_private_stats": True}
        return cls(
            task=str(cfg.task.name),
            dataset=str(cfg.dataset.get("name", "?")),
            generator=str(cfg.generator.get("_plugin_", "?")),
            epsilon=float(cfg.eps),
            seed=int(cfg.seed),
            config=config,
        )

    @property
    def key(self) -> str:
        """A stable hash of the description."""
        text = json.dumps(to_json(self.config), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def derive_seed(seed: int, *path: int) -> int:
    """The public seed of one part of a job (`path`: run k, repeat r, ...); the empty path is the job's seed itself.

    The one recipe for every seed below a job's, so runs get independent
    streams that a re-run reproduces. It is public: privacy noise never comes
    from it (that is `synbench.privacy.NoiseSource`).
    """
    return seed if not path else int(np.random.SeedSequence([seed, *path]).generate_state(1)[0])


def check_top_level(cfg: DictConfig) -> None:
    """`eps`, `delta`, `accountant`, `seed`, `task.n_synthetic` as the command line gave them, checked before anything
    runs."""
    check_epsilon(cfg.eps)
    check_delta_setting(cfg.delta)
    check_accountant(cfg.accountant)
    seed = cfg.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed={seed!r} is invalid: use a non-negative integer")
    n_synthetic = OmegaConf.select(cfg, "task.n_synthetic", default=None)
    if n_synthetic is not None and (
        isinstance(n_synthetic, bool) or not isinstance(n_synthetic, int) or n_synthetic < 1
    ):
        raise ConfigError(
            f"task.n_synthetic={n_synthetic!r} is invalid: use a whole number >= 1, or null for as many "
            "documents as the private set"
        )
    check_cache_dir(OmegaConf.select(cfg, "cache_dir"), OmegaConf.select(cfg, "output_root"))


def check_cache_dir(cache_dir: str | None, output_root: str | None) -> None:
    """Caches (embeddings of private text, scores) live under the output root, private like the jobs beside them."""
    if cache_dir is None or output_root is None:
        return
    if not Path(cache_dir).expanduser().resolve().is_relative_to(Path(output_root).expanduser().resolve()):
        raise ConfigError(
            f"cache_dir={cache_dir} is outside output_root={output_root}: caches hold embeddings of private "
            "text, so they stay under the output root; set cache_dir=${output_root}/cache (the default)"
        )


# A URL that carries credentials: scheme://user[:password]@host.
URL_USERINFO = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s@]+@")


def credential_keys(value: Any, path: str = "") -> list[str]:
    """The config keys (dotted) whose values hold a URL with credentials; the values themselves are never returned."""
    if isinstance(value, str):
        return [path or "(value)"] if URL_USERINFO.search(value) else []
    if isinstance(value, Mapping):
        return [key for k, v in value.items() for key in credential_keys(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, (list, tuple)):
        return [key for i, v in enumerate(value) for key in credential_keys(v, f"{path}[{i}]")]
    return []


def check_no_credentials(value: Any, where: str = "the config") -> None:
    """Refuse a URL with `user:password@` in it: configs are saved (.hydra/, results.json, W&B); keys come from the
    environment."""
    keys = credential_keys(value)
    if keys:
        raise ConfigError(
            f"{', '.join(keys)} in {where} holds a URL with credentials (user:password@host); remove "
            "them from the URL and give the API key through the environment variable named by "
            "api_key_env (default OPENAI_API_KEY)"
        )


def job_dirname(override_dirname: str, limit: int = 120) -> str:
    """A folder name for a job from Hydra's `override_dirname`: readable, filesystem-safe, unique."""
    if not override_dirname:
        return "defaults"
    safe = "".join(c if c.isalnum() or c in "=,._-+" else "_" for c in override_dirname)
    if len(safe) <= limit and safe == override_dirname:
        return safe
    digest = hashlib.sha256(override_dirname.encode()).hexdigest()[:10]
    return f"{safe[: limit - 11]}-{digest}"


def to_json(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become the strings 'inf', '-inf', 'nan' (strict JSON has none)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return to_json(value.item())
    return value


FILE_MODE = 0o600  # what a job writes may hold statistics of private data: readable by its user only
FOLDER_MODE = 0o700


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` for a writer to fill; renamed onto `path` when the block ends, removed if it
    fails.

    The one way every file of a job is written (text, JSON, numpy arrays, index
    files): a reader, or a resumed job, never sees half a file, and the file
    (0600) and a folder made for it (0700) are private to the user. The
    temporary name ends like `path`, so writers that add a suffix (np.save,
    np.savez) keep it.
    """
    path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8) atomically: a reader never sees half a file."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def save_arrays_atomic(path: Path, **arrays: np.ndarray) -> None:
    """`np.savez` atomically (`np.save` of the one array when `path` ends in .npy)."""
    with atomic_path(path) as tmp:
        if path.suffix == ".npy":
            [array] = arrays.values()
            np.save(tmp, array)
        else:
            np.savez(tmp, **arrays)


def write_json_atomic(path: Path, payload: Mapping[str, Any]) -> None:
    write_text_atomic(path, json.dumps(to_json(payload), indent=2) + "\n")


def write_corpus_jsonl(path: Path, corpus: Corpus) -> None:
    """A corpus as JSONL in the authors' format (`text`, `label` list), plus `id`; `dataset=` can read it back."""
    lines = (
        json.dumps({"id": i, "text": t, "label": list(ls)}, ensure_ascii=False)
        for i, t, ls in zip(corpus.ids, corpus.texts, corpus.labels)
    )
    write_text_atomic(path, "".join(line + "\n" for line in lines))


def write_results(job_dir: Path, results: Mapping[str, Any]) -> None:
    """Write the job's `results.json` with the release allow-list enforced (`synbench.release`).

    A field outside the list fails the job: the file then holds the failed
    record without the offending fields, and the `ReleaseError` naming them
    is raised, so nothing undeclared is ever written, in tests or in use.
    """
    from synbench import release

    bad = release.unreleasable(results)
    if bad:
        error = release.release_error(bad)
        failed = {
            **release.without(results, bad),
            "status": "failed",
            "error": {"type": type(error).__name__, "message": str(error)},
        }
        write_json_atomic(job_dir / RESULTS_FILE, failed)
        raise error
    write_json_atomic(job_dir / RESULTS_FILE, results)


def read_results(job_dir: Path) -> dict[str, Any] | None:
    """The job's results, or None if there are none or the file is unreadable."""
    path = job_dir / RESULTS_FILE
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def is_complete(job_dir: Path, spec: JobSpec) -> bool:
    """True when `results.json` is complete and was written for this same job."""
    results = read_results(job_dir)
    return bool(results) and results.get("status") == "complete" and results.get("job_key") == spec.key


def new_results(spec: JobSpec) -> dict[str, Any]:
    """The results skeleton every task fills in."""
    return {
        "task": spec.task,
        "dataset": spec.dataset,
        "generator": spec.generator,
        "epsilon": spec.epsilon,
        "delta": None,
        "epsilon_spent": None,
        "seed": spec.seed,
        "status": "running",
        "job_key": spec.key,
        "noise": None,
        "label_space_inferred": False,
        "non_private_control": False,
        "non_dp_outputs": [],
        **{section: {} for section in SECTIONS},
        "config": spec.config,
    }
