"""`Plugin`, the root of every plugin kind, and the kinds' base classes: datasets, generators, metrics, attacks,
model attacks, classifiers, trackers, LM backends (filters and tasks have theirs beside their code).

A plugin kind is one base class that names its entry-point group; a plugin is
a class registered under that group (see `synbench.core.registry`), which must
subclass its kind's base. Its Hydra config node names it with
`_plugin_: <name>`; every other key of the node is passed to the constructor
as a keyword. `check_plugin_class` is called once when the registry loads a
plugin, to reject a malformed declaration early.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import PluginError
from synbench.core.privacy import PrivacySpec

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

METRIC_SECTIONS = ("utility", "fidelity")


class Plugin(ABC):  # noqa: B024 (no abstract method: each kind's base declares its own)
    """The root of every plugin kind. A kind is a subclass that sets `entry_point_group`; its plugins subclass it."""

    # the entry-point group plugins of the kind register under, e.g. "synbench.generators"
    entry_point_group: ClassVar[str]

    @classmethod
    def check_plugin_class(cls, name: str) -> None:
        """Refuse a malformed class declaration of plugin `name` (called once, when the registry loads it)."""
        return  # a kind with nothing to check accepts every subclass


@dataclass(frozen=True)
class Splits:
    """A dataset as loaded: the private training split and a real held-out split."""

    train: Corpus
    eval: Corpus
    # True when the label space was read off the data rather than configured: results flag it, since the
    # label space is then a (non-noisy) function of private data that the release treats as public.
    label_space_inferred: bool = False
    # The release actually read, for reproducing a hub load: the commit sha the hub resolved (not the revision
    # asked for). None for a local release (the user holds its files) or when the loader cannot tell.
    source_revision: str | None = None


class DatasetLoader(Plugin):
    """Loads a dataset into `Splits`. Registered under `synbench.datasets`."""

    entry_point_group = "synbench.datasets"

    name: str

    @abstractmethod
    def load(self, seed: int) -> Splits:
        """Read, validate and split the data. `seed` is the job's: the built-in loaders draw their splits from the
        dataset's own `split_seed`, so every seed of a sweep scores on the same eval set."""

    def check_source(self) -> None:
        """Refuse, in one line naming the key to set, data that is not there, without reading it: a sweep calls this
        for each of its datasets before its first job. The default checks nothing."""


@dataclass(frozen=True)
class FitReport:
    """What a generator's `fit` actually spent, as its accountant computed it.

    `details` are public plan values and DP outputs (noise multiplier, sample
    rate, planned steps, wall-clock totals, statistics of the synthetic text);
    only the keys the generator declares in `Generator.public_details` are
    written to results. `private_stats` are computed on private data without
    noise (per-step losses, realised batch sizes, token counts): they leave
    the job only when the user opts in with `tracking.log_private_stats=true`,
    and the job is then marked with them in `non_dp_outputs`. A value there is
    a number or a per-step sequence.
    """

    epsilon_spent: float
    delta: float
    details: Mapping[str, Any] = field(default_factory=dict)
    private_stats: Mapping[str, float | Sequence[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Read-only copies: a report is a record of what the fit spent, not a dict a later call may change."""
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        stats = {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in self.private_stats.items()}
        object.__setattr__(self, "private_stats", MappingProxyType(stats))

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon_spent)


class Generator(Plugin):
    """A (DP) synthetic text generator. Registered under `synbench.generators`.

    `fit` sees the private corpus once and returns the budget it spent; the
    label distribution of `sample` must come from a noisy histogram paid for
    inside that budget, from `label_counts` given by the caller, or from a
    public prior, never from raw private counts. Privacy noise comes from
    `privacy.noise` (secret), never from `seed`, which drives only what is
    not a privacy mechanism (subsampling for speed, decoding).

    `public_details` names the `FitReport.details` keys that are public plan
    values or DP outputs; the core writes those and drops any other, so a
    statistic of private data cannot reach results.json by accident.
    """

    entry_point_group = "synbench.generators"

    public_details: ClassVar[frozenset[str]] = frozenset()
    # Every generator must meet the budget it is given. Only the core's built-in controls (`copy`, `public`),
    # known by class identity in `synbench.job.release.is_control`, may answer a private request with
    # epsilon_spent = inf; a plugin cannot declare itself one.

    @classmethod
    def check_plugin_class(cls, name: str) -> None:
        if not isinstance(cls.public_details, frozenset) or not all(isinstance(k, str) for k in cls.public_details):
            raise PluginError(f"generator plugin '{name}': `public_details` must be a frozenset of detail names")

    @classmethod
    def reads_private(cls, options: Mapping[str, Any]) -> bool:
        """Whether the job hands `fit` the private documents, for a generator of this class built from `options`.

        A generator that writes from public knowledge alone (`public`,
        `template`) returns False; the job then gives `fit` the corpus without
        its documents (its public label space only: `GeneratorRun.execute`), so
        its release cannot depend on them whatever the class does, and the job
        records it (`reads_private` in results.json) as a public baseline. What
        a generator reports it spent never decides that.
        """
        return True

    def expect_samples(self, n: int) -> None:
        """Told before `fit` how many documents the run will `sample`; most generators ignore it.

        A generator that must write its output while it holds the private data
        (`generator=command` runs an outside program once, in `fit`) sizes it by this.
        """
        return None

    @abstractmethod
    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        """Train on the private corpus within `privacy`."""

    @abstractmethod
    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """Write `n` synthetic documents (exactly `label_counts` per label set, if given)."""

    def sampling_details(self) -> Mapping[str, Any]:
        """Statistics of the last `sample` call (its output is DP, so they are too); keys declared in
        `public_details`."""
        return {}


@dataclass(frozen=True)
class EncoderSpec:
    """A sentence encoder: `package` is an offline pip package with `get_model_path()`, else `pretrained` is a hub id
    or folder. A core type (metrics find it in their `MetricContext`); `synbench.text.embeddings` loads it."""

    name: str
    pretrained: str
    package: str | None = None
    batch_size: int = 64
    max_seq_length: int = 256
    normalize: bool = True


@dataclass
class MetricContext:
    """Shared state for metrics in one job: the seed, the job directory and per-corpus caches.

    `cache` is one dict shared by every metric of the job, so a corpus is embedded
    (with `encoder`, on-disk copies under `cache_dir`) or parsed once however many
    metrics use it.
    """

    seed: int
    job_dir: str
    cache: dict[str, Any] = field(default_factory=dict)
    train: Corpus | None = None
    encoder: EncoderSpec | None = None
    cache_dir: str | None = None


class Metric(Plugin):
    """Scores a synthetic corpus against real data. Registered under `synbench.metrics`.

    `section` is the `results.json` section the returned keys go to
    (`utility` or `fidelity`).
    """

    entry_point_group = "synbench.metrics"

    section: ClassVar[str] = "fidelity"
    # Keys whose direction is known: True when higher is better (the report ranks and marks by it).
    higher_is_better: ClassVar[Mapping[str, bool]] = {}

    @classmethod
    def check_plugin_class(cls, name: str) -> None:
        if cls.section not in METRIC_SECTIONS:
            raise PluginError(
                f"metric plugin '{name}' declares section {cls.section!r}; "
                f"a metric writes to one of {', '.join(METRIC_SECTIONS)}"
            )

    def non_dp_keys(self) -> frozenset[str]:
        """Output keys computed from private data (`ctx.train`) without noise; written only on opt-in."""
        return frozenset()

    def diagnostic_keys(self) -> frozenset[str]:
        """Output keys computed from private data without noise that are the operator's own reference, like the
        audit's figures (utility's real-data upper bound): always written, and named in `non_dp_outputs`."""
        return frozenset()

    @abstractmethod
    def __call__(self, real: Corpus, synthetic: Corpus, ctx: MetricContext) -> dict[str, float]:
        """Flat metric values for one (real, synthetic) pair."""


class Attack(Plugin):
    """A membership attack. Registered under `synbench.attacks`.

    Black-box attacks score `targets` from the released synthetic corpus
    (and public or auxiliary reference corpora) only; larger means member.
    """

    entry_point_group = "synbench.attacks"

    @abstractmethod
    def score(self, targets: Sequence[str], synthetic: Corpus, references: Sequence[Corpus]) -> np.ndarray:
        """One membership score per target text."""


@dataclass(frozen=True)
class ModelSignals:
    """A classifier's per-example statistics on the targets, from the audited model and its reference models.

    Each statistic is the logit-scaled confidence on the true label (one
    column per label of a multi-label task, one column for single-label).
    `population` holds the same for real documents no model trained on.
    """

    target: np.ndarray  # (n, L) the audited model
    references: np.ndarray  # (M, n, L) the reference models
    inclusion: np.ndarray  # (M, n) bool: example i was in reference model m's training data
    population_target: np.ndarray  # (Z, L)
    population_references: np.ndarray  # (M, Z, L)


class ModelAttack(Plugin):
    """A membership attack on a trained model's outputs (task=model_audit). Registered under `synbench.model_attacks`.

    Its own kind, not an `Attack`: it reads a classifier's per-example
    statistics, not released text, so it has no `score` to offer task=audit.
    """

    entry_point_group = "synbench.model_attacks"

    @abstractmethod
    def score_models(self, signals: ModelSignals) -> np.ndarray:
        """One membership score per target example (larger means member)."""


class Classifier(Plugin):
    """A downstream classifier for the utility metric. Registered under `synbench.classifiers`.

    One call for single- and multi-label tasks: train on (texts, label
    indicator matrix), return per-label scores; only the caller's decoding
    differs (argmax vs threshold), so the two task kinds cannot drift apart.
    """

    entry_point_group = "synbench.classifiers"

    @abstractmethod
    def fit_predict(
        self, train_texts: Sequence[str], train_y: np.ndarray, eval_texts: Sequence[str], multi_label: bool, seed: int
    ) -> np.ndarray:
        """Scores of shape (len(eval_texts), n_labels): per-label probabilities (multi-label) or class probabilities.

        `train_y` is a 0/1 matrix (n_train, n_labels) with at least one varying column and non-empty texts.
        """


class Tracker(Plugin):
    """Experiment tracking for one job. Registered under `synbench.trackers`.

    Built with the job's `spec`, `job_dir` and sweep `group` besides its
    config keys. It takes numbers, figures, and a `Corpus` only through
    `log_samples`, which must refuse output that is not DP.
    """

    entry_point_group = "synbench.trackers"

    @abstractmethod
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None: ...

    @abstractmethod
    def log_samples(self, synthetic: Corpus, report: FitReport) -> None: ...

    @abstractmethod
    def log_image(self, name: str, path: "Path") -> None: ...

    @abstractmethod
    def finish(self, failed: bool = False) -> None:
        """End the run (also when the job failed, then marked so)."""


@dataclass(frozen=True)
class ChatRequest:
    """One completion to write: a user turn, an optional system turn, and its own max_new_tokens (None: the call's)."""

    user: str
    system: str | None = None
    max_new_tokens: int | None = None


class LMBackend(Plugin):
    """What a generator needs from an LM: one sampled reply per request, reproducible from `seed` where the LM allows.

    Registered under `synbench.lm_backends`; the other keys of its config node
    are constructor keywords. A backend that runs the `model` config group's
    LM sets `uses_model_group`, and is then also given that node as `model`.
    """

    entry_point_group = "synbench.lm_backends"

    name: str
    uses_model_group: ClassVar[bool] = False

    @abstractmethod
    def complete(
        self, requests: Sequence[ChatRequest], *, max_new_tokens: int, temperature: float, top_p: float, seed: int
    ) -> list[str]:
        """One reply per request, in request order."""
