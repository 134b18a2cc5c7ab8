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
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

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
        config = {k: v for k, v in container.items() if k not in NON_SPEC_KEYS}
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


def check_top_level(cfg: DictConfig) -> None:
    """`eps`, `delta`, `accountant` and `seed` as the command line gave them, checked before anything runs."""
    check_epsilon(cfg.eps)
    check_delta_setting(cfg.delta)
    check_accountant(cfg.accountant)
    seed = cfg.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed={seed!r} is invalid: use a non-negative integer")


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


def write_text_atomic(path: Path, text: str) -> None:
    """Write to a temp file in the same folder, then rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, payload: Mapping[str, Any]) -> None:
    write_text_atomic(path, json.dumps(to_json(payload), indent=2) + "\n")


def write_corpus_jsonl(path: Path, corpus: Corpus) -> None:
    """A corpus as JSONL in the authors' format (`text`, `label` list), plus `id`; `dataset=` can read it back."""
    lines = (json.dumps({"id": i, "text": t, "label": list(ls)}, ensure_ascii=False)
             for i, t, ls in zip(corpus.ids, corpus.texts, corpus.labels))
    write_text_atomic(path, "".join(line + "\n" for line in lines))


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
