"""`AuditOptions`: the schema of the `audit` config node (conf/task/audit.yaml sets only what differs), with the
checks a type cannot express."""

from __future__ import annotations

from dataclasses import dataclass, field

from synbench.core.errors import ConfigError, check_n_synthetic, require_count

MODES = ("k_subsets", "one_run")  # audit.mode: the designs synbench.audit.design draws
TARGET_KINDS = ("outliers", "canaries", "both")
CROSSFIT_RULES = ("lower_bound", "estimate")  # how the cross-fit chooses its rule on the choosing fold
SUFFIXES = ("uniform", "rare")  # audit.canary_suffix: uniform public words | the rarest ones D_aux never uses
DISCLOSURE_KEYS = "task.disclosure in task=benchmark, audit.disclosure in task=audit"
GRIDS = ("fpr_grid", "recall_grid", "eps_grid", "guess_fractions")


@dataclass(frozen=True)
class DisclosureOptions:
    """The disclosure check's rule (synbench.audit.disclosure): `task.disclosure.*` of task=benchmark and
    `audit.disclosure.*` of task=audit. Its test's level is the audit's, 1 - audit.confidence (its default in
    task=benchmark)."""

    enabled: bool = True  # false: no `disclosure` section (the operator's check of copies; on by default)
    # a document reappears verbatim when a released one holds run_words consecutive words of its own text (text no
    # other pooled document shares; all of it when it is shorter): natural text shares 4- to 6-word phrases across
    # documents, 8-word runs rarely
    run_words: int = 8
    # ... or near-verbatim when one released document holds, in order, this share of the longer one's content words
    # (of its own text, words few documents hold; for documents with at least run_words of them): a copier that
    # swaps every other word keeps about half, unrelated documents a tenth at most on the demo corpus
    min_share: float = 0.3

    def __post_init__(self) -> None:
        if self.run_words < 1:
            raise ConfigError(
                f"disclosure.run_words={self.run_words} must be a positive whole number ({DISCLOSURE_KEYS})"
            )
        if not 0 < self.min_share <= 1:
            raise ConfigError(f"disclosure.min_share={self.min_share} must lie in (0, 1] ({DISCLOSURE_KEYS})")


@dataclass(frozen=True)
class AuditOptions:
    """How an audit is designed, run and summarised: the schema of `audit.*` (each key's meaning beside it)."""

    mode: str = "k_subsets"  # k_subsets: K generator runs | one_run: Steinke, Nasr & Jagielski (2023), one run
    targets: str = "both"  # outliers | canaries | both (metrics are also reported per type: outliers.*, canaries.*)
    # --- outlier targets (the paper's D_out): the farthest far_fraction from the centroid and LOF's outliers, at
    # most n_targets (ranked jointly, alternating between the two criteria, when the union is larger: targets.py)
    n_targets: int | None = 50  # null = the whole union (the paper's audit)
    # a JSON file whose `positions` list names the outlier targets instead (positions in the training split; e.g.
    # planted/members.json, the set S of +experiment=contamination_planted); null = embedding outliers as above
    target_positions: str | None = None
    far_fraction: float = 0.01
    lof_neighbors: int = 20
    lof_contamination: float | str = 0.1  # share LOF flags ("auto" flags none on the demo's MiniLM embeddings)
    # --- canaries (Meeus et al. 2025): a D_aux document's first words + random words of a public vocabulary, a
    # random label; inserted like targets. More trials per run are what raise the one-run ceiling.
    n_canaries: int = 300
    # copies of each canary in a private set that holds it. >1 audits GROUPS of that size: a bound then concerns
    # group privacy (k copies of an (eps,0)-DP record: k*eps)
    canary_repeats: int = 1
    canary_prefix_words: int = 10
    canary_suffix_words: int = 15
    # the suffix words: uniform = drawn from the whole public vocabulary | rare = from its rarest canary_rare_share
    # (the vocabulary's frequency rank) less every word of D_aux: high perplexity, as Panda et al. (ICLR 2025) craft
    # canaries; attack=rare_echo reads them
    canary_suffix: str = "uniform"
    canary_rare_share: float = 0.25
    # --- design (the rest of the training split goes 1:2 to D_prv and D_aux)
    n_subsets: int = 100  # K (k_subsets mode), even: K/2 pairs that split the targets between them
    base_fraction: float = 0.5  # share of D_prv in each pair's private sets
    n_references: int = 4  # M, even: each target is in exactly M/2 reference corpora
    ref_fraction: float = 0.5  # share of D_aux in each reference corpus (about |D_prv| documents)
    # synthetic documents per run; null = a private set's planned size (its base + half the targets), fixed in
    # advance: a size that followed membership would reveal it
    n_synthetic: int | None = None
    save_synthetic: bool = True  # keep each run's synthetic corpus in runs/ (local disk only, never tracked)
    # --- one-run guesses: k+ (top scores called members) and k- (bottom scores called non-members) as shares of
    # the targets, each from {0} and guess_fractions; chosen on held-out targets and over the grid with Bonferroni.
    # No 0.5: shares of 1/2 are all right on a fold whose coins split evenly, win the held-out choice there, and
    # misfire on the other fold, where an uneven split is the rule (perfect scores then fall well short of the
    # ceiling in most coin draws; 0.4 leaves both folds room)
    guess_fractions: tuple[float, ...] = (0.05, 0.1, 0.25, 0.4)
    select_share: float = 0.25  # share of the targets that choose the held-out bound's threshold / guess counts
    # --- repeated audits
    repeats: int = 1  # R independent audits (new design, canaries, generator randomness): mean and 95% interval
    bootstrap_samples: int = 200  # k_subsets: block bootstrap over pairs of runs against a per-trial bootstrap (AUC)
    # --- reporting
    fpr_grid: tuple[float, ...] = (0.001, 0.01, 0.1, 0.2)  # audit.tpr_at_fpr_<f>; the paper reads FPR in [0.1, 0.2]
    recall_grid: tuple[float, ...] = (0.01, 0.1)  # audit.precision_at_recall_<r>
    # how eps_emp's cross-fit chooses its rule (attack, threshold, inequality) on the choosing fold:
    # lower_bound = the highest 95% lower bound there | estimate = the highest point estimate (the old rule)
    crossfit_rule: str = "lower_bound"
    # eps_emp_max, and eps_emp with crossfit_rule=estimate, choose among thresholds with at least this many errors
    # behind the denominator; eps_emp_lower and the lower_bound rule have no such cap (few counts lower a bound)
    min_count: int = 5
    confidence: float = 0.95  # of eps_emp_lower (and of gdp_mu_lower): its two parts each hold at 1 - (1 - c) / 2
    delta: float | None = None  # of the empirical epsilon; null = the job's delta (from the planned set size)
    eps_grid: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)  # DP trade-off curves drawn on the ROC plot, with nominal eps
    # the disclosure check of the first run's release (synbench.audit.disclosure), at level 1 - confidence
    disclosure: DisclosureOptions = field(default_factory=DisclosureOptions)

    def __post_init__(self) -> None:
        for key in GRIDS:  # the schema gives lists: kept as tuples, so a built config is immutable
            object.__setattr__(self, key, tuple(float(v) for v in getattr(self, key)))
        if self.mode not in MODES:
            raise ConfigError(f"audit.mode={self.mode!r} is unknown; choose one of {', '.join(MODES)}")
        if self.crossfit_rule not in CROSSFIT_RULES:
            raise ConfigError(
                f"audit.crossfit_rule={self.crossfit_rule!r} is unknown; choose one of {', '.join(CROSSFIT_RULES)}"
            )
        if self.targets not in TARGET_KINDS:
            raise ConfigError(f"audit.targets={self.targets!r} is unknown; choose one of {', '.join(TARGET_KINDS)}")
        if self.target_positions is not None and not self.outliers:
            raise ConfigError(
                "audit.target_positions names outlier targets, but audit.targets=canaries has none; "
                "set audit.targets=outliers or both"
            )
        if self.targets != "outliers" and self.n_canaries < 2:
            raise ConfigError(
                f"audit.n_canaries={self.n_canaries} must be at least 2 with audit.targets={self.targets}"
            )
        if self.canary_suffix not in SUFFIXES:
            raise ConfigError(
                f"audit.canary_suffix={self.canary_suffix!r} is unknown; choose one of {', '.join(SUFFIXES)}"
            )
        if not 0 < self.canary_rare_share <= 1:
            raise ConfigError(f"audit.canary_rare_share={self.canary_rare_share} must lie in (0, 1]")
        for key in ("canary_repeats", "canary_prefix_words", "canary_suffix_words", "repeats", "bootstrap_samples"):
            require_count(getattr(self, key), f"audit.{key}", 1)
        if not 0 < self.select_share < 1:
            raise ConfigError(f"audit.select_share={self.select_share} must lie strictly between 0 and 1")
        if not self.guess_fractions or not all(0 < f <= 0.5 for f in self.guess_fractions):
            raise ConfigError(
                f"audit.guess_fractions={list(self.guess_fractions)} must be a non-empty list of shares "
                "of the targets in (0, 0.5] (k+ and k- each take one)"
            )
        if not 0 < self.confidence < 1:
            raise ConfigError(f"audit.confidence={self.confidence} must lie strictly between 0 and 1")
        for key in ("fpr_grid", "recall_grid"):
            if not all(0 < v <= 1 for v in getattr(self, key)):
                raise ConfigError(f"audit.{key}={list(getattr(self, key))} must hold rates in (0, 1]")
        if not all(0 < v < float("inf") for v in self.eps_grid):
            raise ConfigError(f"audit.eps_grid={list(self.eps_grid)} must hold positive finite epsilons")
        require_count(self.min_count, "audit.min_count", 0)
        require_count(self.lof_neighbors, "audit.lof_neighbors", 1)
        if self.lof_contamination != "auto" and not (
            isinstance(self.lof_contamination, (int, float)) and 0 < self.lof_contamination <= 0.5
        ):
            raise ConfigError(
                f"audit.lof_contamination={self.lof_contamination!r} must be a share in (0, 0.5] (LOF's bound) or "
                "'auto'"
            )
        if self.delta is not None and not 0 <= self.delta < 1:
            raise ConfigError(f"audit.delta={self.delta} must lie in [0, 1), or be null for the job's delta")
        check_n_synthetic(self.n_synthetic, "audit.n_synthetic", "a private set's planned size")

    @property
    def canaries(self) -> int:
        """How many canaries the design draws: none for outlier targets only."""
        return 0 if self.targets == "outliers" else self.n_canaries

    @property
    def outliers(self) -> bool:
        return self.targets != "canaries"
