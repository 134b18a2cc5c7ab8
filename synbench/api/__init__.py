"""The public plugin API: the contracts a plugin package imports from SynBench (with the kit, `synbench.testing`).

A plugin package (a generator, metric, attack, dataset, filter, LM backend,
task...) imports from here only, never from `synbench.generators` or another
internal module, so the core can move its internals without breaking
plugins; an import-linter contract and a test hold the packages in
`plugins/` to it. What is here, and nothing else (it imports without torch):

- the base class of every plugin kind and the types they exchange;
- privacy: `PrivacySpec` (with its secret noise source, `privacy.noise`),
  `NoiseSource`, delta resolution, and calibration helpers for Gaussian
  mechanisms (closed form under GDP) and for DP-SGD (`calibrate`);
- label-set plans: `label_sets`, the DP release of a synthetic set's label
  sets (`label_sets.release`), the plan of how many documents each gets
  (`label_sets.plan`) and the fit-report details they write
  (`label_sets.PUBLIC_DETAILS`), with their budget and config types;
- errors;
- `register` (and `create_plugin`, which builds the plugin a config node
  names) for code that is not packaged and for tests, and progress meters.

The LM helpers (loading, chat prompts, batched generation, prompt sets) are
opt-in, in `synbench.api.lm`: importing them loads torch. docs/plugins.md is
the guide.
"""

from __future__ import annotations

from synbench.core.base import (
    Attack,
    ChatRequest,
    Classifier,
    DatasetLoader,
    FitReport,
    Generator,
    LMBackend,
    Metric,
    MetricContext,
    ModelAttack,
    ModelSignals,
    Plugin,
    Splits,
    Tracker,
)
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError, DataError, PluginError, SynBenchError
from synbench.core.exports import lazy_exports
from synbench.core.privacy import (
    NoiseSource,
    PrivacySpec,
    gaussian_sigma,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    resolve_delta,
)
from synbench.core.progress import Meter, progress
from synbench.core.registry import create as create_plugin
from synbench.core.registry import register
from synbench.dp import label_sets
from synbench.dp.accounting import Calibration, calibrate
from synbench.dp.label_sets import LabelSetBudget, LabelSetOptions, LabelSetRelease
from synbench.filters.base import Filter, Selection
from synbench.job.spec import JobConfig
from synbench.tasks.base import Task

__all__ = [
    # base classes and the types they exchange
    "Attack",
    "ChatRequest",
    "Classifier",
    "Corpus",
    "DatasetLoader",
    "Filter",
    "FitReport",
    "Generator",
    "LMBackend",
    "Labels",
    "Metric",
    "MetricContext",
    "ModelAttack",
    "ModelSignals",
    "Plugin",
    "Selection",
    "Splits",
    "Task",
    "Tracker",
    # the typed description of a job, as a task plugin receives it
    "JobConfig",
    # errors
    "ConfigError",
    "DataError",
    "PluginError",
    "SynBenchError",
    # privacy: the spec, its secret noise source, delta, calibration
    "Calibration",
    "NoiseSource",
    "PrivacySpec",
    "calibrate",
    "gaussian_sigma",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "resolve_delta",
    # label-set plans
    "LabelSetBudget",
    "LabelSetOptions",
    "LabelSetRelease",
    "label_sets",
    # registration, progress
    "Meter",
    "create_plugin",
    "progress",
    "register",
]

__getattr__ = lazy_exports(__name__, {})  # the names this API renamed (`core.exports.RENAMED`)
