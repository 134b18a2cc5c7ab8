"""`ContaminationOptions`: the schema of the `contamination` config node (conf/task/contamination.yaml sets only what
differs), with the checks a type cannot express."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict

from synbench.core.errors import ConfigError, check_n_synthetic
from synbench.lm.settings import check_num_threads

DETECTORS = ("exact", "mink", "minkpp")
PLANTED_ARMS = ("contaminated", "clean")


def _tuples(settings: Any, *keys: str) -> None:
    """Keep list values as tuples (the schema gives lists), so a built config is immutable."""
    for key in keys:
        object.__setattr__(settings, key, tuple(getattr(settings, key)))


def _fraction(value: float, where: str, low_open: bool = False) -> None:
    if not (0 < value <= 1 if low_open else 0 <= value <= 1):
        raise ConfigError(f"{where}={value} must lie in {'(0, 1]' if low_open else '[0, 1]'}")


@dataclass(frozen=True)
class ExactOptions:
    """Exact n-gram exposure through an infini-gram index."""

    enabled: bool = True
    # an existing infini-gram index folder (tokenized.*, table.*, offset.*), e.g. RedPajama, tokenized with the
    # `model` group's tokenizer; null = build one from `corpus`
    index_dir: str | None = None
    # python_docs: embedded (CPython's pydoc topics, PSF licence, ~100k tokens) | files: the files in `files`
    corpus: str = "python_docs"
    files: tuple[str, ...] = ()  # JSONL ({"text": ...} per line) or plain-text files for corpus=files
    token_dtype: str | None = None  # of an existing index: u16 | u32; null = from the tokenizer's vocabulary size
    n: int = 8  # n-gram length (tokens) of the share found
    flag_share: float = 0.5  # flagged when at least this share of its n-grams is found ...
    flag_longest: int = 32  # ... or its longest exact match has at least this many tokens
    max_length: int = 256  # tokens per private document

    def __post_init__(self) -> None:
        _tuples(self, "files")
        if self.corpus not in ("python_docs", "files"):
            raise ConfigError(f"contamination.exact.corpus={self.corpus!r} is unknown; choose python_docs or files")
        if self.corpus == "files" and not self.files and self.index_dir is None:
            raise ConfigError("contamination.exact.corpus=files needs contamination.exact.files=[path, ...]")
        if self.token_dtype not in (None, "u16", "u32"):
            raise ConfigError(f"contamination.exact.token_dtype={self.token_dtype!r} must be u16, u32 or null")
        if self.n < 1 or self.flag_longest < 1 or self.max_length < 1:
            raise ConfigError("contamination.exact.n, flag_longest and max_length must be positive integers")
        _fraction(self.flag_share, "contamination.exact.flag_share", low_open=True)


@dataclass(frozen=True)
class MinKOptions:
    """Min-K% and Min-K%++ under the public model, with the flag threshold from a calibration set."""

    enabled: bool = True
    k: float = 0.2  # share of a document's lowest-scoring tokens averaged
    count: str = "ceil"  # k% of n tokens is ceil(k n) | floor: int(k n), the Min-K%++ authors' code
    batch_size: int = 8
    max_length: int = 256
    calibration: str = "eval"  # eval (the public held-out split) | files (documents known not to be in pretraining)
    non_members: tuple[
        str, ...
    ] = ()  # JSONL / text files of known non-members (calibration=files; AUC needs members too)
    members: tuple[str, ...] = ()  # JSONL / text files of known members: with non_members, AUC is reported
    fpr: float = 0.05  # flag above the (1 - fpr) quantile of the calibration scores
    num_threads: int | None = 1  # torch CPU threads while scoring (null = PyTorch's default)

    def __post_init__(self) -> None:
        _tuples(self, "non_members", "members")
        _fraction(self.k, "contamination.mink.k", low_open=True)
        _fraction(self.fpr, "contamination.mink.fpr", low_open=True)
        if self.calibration not in ("eval", "files"):
            raise ConfigError(f"contamination.mink.calibration={self.calibration!r} is unknown; choose eval or files")
        if self.count not in ("ceil", "floor"):
            raise ConfigError(f"contamination.mink.count={self.count!r} is unknown; choose ceil or floor")
        if self.calibration == "files" and not self.non_members:
            raise ConfigError("contamination.mink.calibration=files needs contamination.mink.non_members=[path, ...]")
        if self.batch_size < 1 or self.max_length < 2:
            raise ConfigError("contamination.mink.batch_size must be >= 1 and max_length >= 2")
        check_num_threads(self.num_threads, "contamination.mink.num_threads")


@dataclass(frozen=True)
class AblationOptions:
    """Removal of flagged documents, re-running the generator (the paper's table 3)."""

    enabled: bool = False
    detector: str = "minkpp"  # whose flags are removed: exact | mink | minkpp
    steps: tuple[float, ...] = (0.25, 0.5, 0.75)
    reps: int = 10  # R repetitions per step (the paper's 10)
    control: bool = True  # also remove the same count of uniformly random documents
    reference: bool = True  # also run the unremoved reference (arm `none`); false when the caller has it already
    n_synthetic: int | None = None  # synthetic documents per run; null = the full private set's size

    def __post_init__(self) -> None:
        _tuples(self, "steps")
        if self.detector not in DETECTORS:
            raise ConfigError(
                f"contamination.ablation.detector={self.detector!r} is unknown; choose one of {', '.join(DETECTORS)}"
            )
        for step in self.steps:
            _fraction(step, "contamination.ablation.steps[]", low_open=True)
        if self.reps < 1:
            raise ConfigError(f"contamination.ablation.reps={self.reps} must be at least 1")
        check_n_synthetic(self.n_synthetic, "contamination.ablation.n_synthetic", "the full private set's size")


@dataclass(frozen=True)
class PlantedOptions:
    """Planted contamination: a copy of the public model trained without DP on a known share of the private set.

    `train` holds DP-Gen settings (conf/generator/dpgen.yaml's keys) for that
    non-DP continued training; the public text is the embedded python_docs
    corpus, its first `public_docs` paragraphs of at least `public_min_chars`.
    """

    enabled: bool = False
    share: float = 0.2  # S: this share of the private training split goes into the "pretraining" corpus
    public_docs: int = 60  # + this many public python_docs paragraphs ...
    public_min_chars: int = 200  # ... of at least this many characters
    # contaminated: the corpus is S + the public paragraphs | clean: the public paragraphs alone (the control
    # model; S is still drawn, so the detectors' figures under it are a null)
    arm: str = "contaminated"
    max_private_share: float = 1.0  # bound on S's share of the training tokens, checked before training
    train: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _fraction(self.share, "contamination.planted.share", low_open=True)
        _fraction(self.max_private_share, "contamination.planted.max_private_share", low_open=True)
        if self.public_docs < 0 or self.public_min_chars < 0:
            raise ConfigError("contamination.planted.public_docs and public_min_chars must be >= 0")
        if self.arm not in PLANTED_ARMS:
            raise ConfigError(
                f"contamination.planted.arm={self.arm!r} is unknown; choose one of {', '.join(PLANTED_ARMS)}"
            )


@dataclass(frozen=True)
class ContaminationOptions:
    """The schema of `contamination.*` (schema/contamination), each key's meaning beside it."""

    exact: ExactOptions = field(default_factory=ExactOptions)
    mink: MinKOptions = field(default_factory=MinKOptions)
    ablation: AblationOptions = field(default_factory=AblationOptions)
    planted: PlantedOptions = field(default_factory=PlantedOptions)
    save_scores: bool = True  # per-document scores in the job folder (contamination_scores.npz), never logged
