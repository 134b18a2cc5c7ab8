"""`ModelAuditOptions`: the schema of the `model_audit` config node (conf/task/model_audit.yaml sets only what
differs), with the checks a type cannot express; `HeadOptions` is its `head`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from synbench.core.errors import ConfigError, check_n_synthetic, require_count
from synbench.dp.settings import DPSGDOptions


@dataclass(frozen=True)
class Regime:
    """One cell of the 2x2 design: what the classifier is trained on, and whether that step runs at the job's eps."""

    private: bool  # on the private set itself (else on a generator's synthetic output)
    dp: bool  # at the job's eps (the generator's, or DP-SGD for the classifier head); else at eps=inf


# SYN: the generator without DP; SYN_DP: the generator at the job's eps; PRI: the classifier on the private
# set; PRI_DP: the classifier head trained with DP-SGD at the job's eps. Code reads the attributes, never the names.
REGIMES: dict[str, Regime] = {
    "syn": Regime(private=False, dp=False),
    "syn_dp": Regime(private=False, dp=True),
    "pri": Regime(private=True, dp=False),
    "pri_dp": Regime(private=True, dp=True),
}
DP_REGIMES = frozenset(name for name, regime in REGIMES.items() if regime.dp)
CLASSIFIERS = ("head", "utility")
TARGET_CHOICES = ("random", "outliers")
REFERENCE_MODES = ("paired", "out")
FEATURES = ("embeddings", "hashing")


@dataclass(frozen=True)
class HeadOptions(DPSGDOptions):
    """`model_audit.head`: the logistic head on public features, trained on the shared DP-SGD core in every regime
    (eps=inf: no noise): the core's training keys (synbench/dp/settings.py) plus the feature map."""

    section: ClassVar[str] = "model_audit.head"

    # embeddings: the job's public encoder (the `encoder` group) | hashing: HashingVectorizer (word 1-2 grams, fixed
    # hash). No vocabulary is fitted on private text (docs/model-attacks.md)
    features: str = "embeddings"
    hashing_features: int = 4096
    epochs: int = 30
    batch_size: int = 32  # expected logical batch (Poisson sample rate 1 / ceil(N / batch_size))
    physical_batch_size: int = 256
    lr: float = 0.1  # AdamW, cosine decay
    weight_decay: float = 0.0
    label_prior: str = "uniform"  # a head releases no labels: nothing of the budget goes to a label histogram

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.label_prior != "uniform":
            raise ConfigError(
                f"model_audit.head.label_prior={self.label_prior!r}: a head releases no labels; remove it"
            )
        if self.features not in FEATURES:
            raise ConfigError(
                f"model_audit.head.features={self.features!r} is unknown; choose one of {', '.join(FEATURES)}"
            )
        if self.hashing_features < 2:
            raise ConfigError(f"model_audit.head.hashing_features={self.hashing_features} must be at least 2")


@dataclass(frozen=True)
class ModelAuditOptions:
    """How the downstream-model audit is designed and summarised: the schema of `model_audit.*` (each key's meaning
    beside it). The defaults are demo sizes for 2 CPU cores (conf/task/model_audit.yaml gives the paper's scale)."""

    # syn: generator at eps=inf | syn_dp: generator at eps | pri: private data | pri_dp: the head trained with DP-SGD
    # at eps (always the head)
    regimes: tuple[str, ...] = tuple(REGIMES)
    # head: the logistic head on public features (`head`) | utility: the `classifier` group (classifier=tfidf or
    # transformer) for syn, syn_dp and pri; pri_dp always uses the head
    classifier: str = "head"
    # --- design: the audit's one-run design over a seeded pool of the training split
    targets: str = "random"  # random | outliers (the audit's embedding outliers: the most vulnerable documents)
    n_targets: int = 100  # each in the audited model's training set with probability 1/2
    # the pool: a seeded subset of the training split (null = all of it); the rest of the pool goes 1:2 to the private
    # base (all of it in the audited set) and the reference data
    max_docs: int | None = 300
    n_references: int = 4  # reference models per regime (even)
    references: str = "paired"  # paired: each target IN for half of them | out: in none (offline attacks only)
    ref_fraction: float = 0.5  # share of the reference data in each reference set
    # synthetic documents per generator run; null = the audited set's planned size (its base plus half the
    # targets), fixed in advance for every model
    n_synthetic: int | None = None
    n_population: int = 200  # RMIA's population samples z: real eval documents no model trains on
    # --- reporting
    fpr_grid: tuple[float, ...] = (0.01, 0.1)  # model_audit.<regime>.<attack>.tpr_at_fpr_<f>
    min_count: int = 5  # eps_emp: thresholds with at least this many errors
    confidence: float = 0.95  # of eps_emp_lower (Clopper-Pearson, Bonferroni over thresholds)
    save_synthetic: bool = False  # keep each generator run's output in model_audit_runs/ (local disk only)
    head: HeadOptions = field(default_factory=HeadOptions)  # the classifier=head model's features and training

    def __post_init__(self) -> None:
        for key in ("regimes", "fpr_grid"):  # the schema gives lists: kept as tuples, so a built config is immutable
            object.__setattr__(self, key, tuple(getattr(self, key)))
        bad = [r for r in self.regimes if r not in REGIMES]
        if bad or not self.regimes or len(set(self.regimes)) != len(self.regimes):
            raise ConfigError(
                f"model_audit.regimes={list(self.regimes)} must be distinct names among {', '.join(REGIMES)}"
            )
        for key, allowed in (("classifier", CLASSIFIERS), ("targets", TARGET_CHOICES), ("references", REFERENCE_MODES)):
            if getattr(self, key) not in allowed:
                raise ConfigError(
                    f"model_audit.{key}={getattr(self, key)!r} is unknown; choose one of {', '.join(allowed)}"
                )
        if self.n_targets < 4:
            raise ConfigError(
                f"model_audit.n_targets={self.n_targets} is too small: members and non-members need several each"
            )
        if self.max_docs is not None and self.max_docs <= self.n_targets + 3:
            raise ConfigError(
                f"model_audit.max_docs={self.max_docs} must exceed n_targets={self.n_targets} "
                "(the rest forms the private base and the reference data); or null for the whole split"
            )
        if self.n_references < 2 or self.n_references % 2:
            raise ConfigError(
                f"model_audit.n_references={self.n_references} must be even and at least 2: "
                "half of them hold each target"
            )
        if not 0 < self.ref_fraction <= 1:
            raise ConfigError(f"model_audit.ref_fraction={self.ref_fraction} must lie in (0, 1]")
        check_n_synthetic(self.n_synthetic, "model_audit.n_synthetic", "the audited set's planned size", minimum=2)
        if self.n_population < 1:
            raise ConfigError(f"model_audit.n_population={self.n_population} must be at least 1 (RMIA's z samples)")
        if not all(0 < f <= 1 for f in self.fpr_grid):
            raise ConfigError(f"model_audit.fpr_grid={list(self.fpr_grid)} must hold rates in (0, 1]")
        require_count(self.min_count, "model_audit.min_count", 0)
        if not 0 < self.confidence < 1:
            raise ConfigError(f"model_audit.confidence={self.confidence} must lie strictly between 0 and 1")
