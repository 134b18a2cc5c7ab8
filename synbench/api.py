"""The public plugin API: everything a plugin package may import from SynBench (with `synbench.testing`).

A plugin package (a generator, metric, attack, dataset, filter, LM backend,
task...) imports from here only, never from `synbench.generators` or another
internal module, so the core can move its internals without breaking
plugins; an import-linter contract and a test hold the packages in
`plugins/` to it. What is here:

- the base classes of every plugin kind and the types they exchange;
- privacy: `PrivacySpec` (with its secret noise source, `privacy.noise`),
  `NoiseSource`, delta resolution, and calibration helpers for Gaussian
  mechanisms (closed form under GDP) and for DP-SGD (`calibrate`);
- label-set plans: the DP release of a synthetic set's label sets and the
  plan of how many documents each gets (`label_sets`, a namespace, and its
  main names);
- LM loading, chat prompts and batched generation, the shared prompt sets;
- progress reporting, and `register` / `create_plugin` for code that is not
  packaged and for tests.

docs/plugins.md is the guide.
"""

from __future__ import annotations

from synbench.base import (
    Attack,
    Classifier,
    DatasetLoader,
    FitReport,
    Generator,
    Metric,
    MetricContext,
    ModelAttack,
    ModelSignals,
    Splits,
    Tracker,
)
from synbench.corpus import Corpus, Labels
from synbench.dp import label_sets
from synbench.dp.accounting import Calibration, calibrate
from synbench.dp.label_sets import LabelSetBudget, LabelSetConfig, LabelSetRelease
from synbench.errors import ConfigError, DataError, PluginError, SynBenchError
from synbench.filters.base import Filter, Selection
from synbench.lm.backends import ChatRequest, LMBackend, load_shared
from synbench.lm.generation import chat_prompt, generate, torch_threads
from synbench.lm.models import LoadedModel, ModelSpec, load_causal_lm
from synbench.lm.prompts import Prompts, load_prompts
from synbench.privacy import NoiseSource, PrivacySpec, gaussian_sigma, gdp_delta, gdp_epsilon, gdp_mu, resolve_delta
from synbench.progress import Meter, progress
from synbench.registry import create as create_plugin
from synbench.registry import register
from synbench.tasks.base import Task

# The two label-set calls a generator makes, under names that say what they plan and release.
plan_label_sets = label_sets.plan
release_label_sets = label_sets.release

__all__ = [
    # base classes and the types they exchange
    "Attack",
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
    "Selection",
    "Splits",
    "Task",
    "Tracker",
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
    "LabelSetConfig",
    "LabelSetRelease",
    "label_sets",
    "plan_label_sets",
    "release_label_sets",
    # LMs: loading, prompting, generation, prompt sets
    "ChatRequest",
    "LoadedModel",
    "ModelSpec",
    "Prompts",
    "chat_prompt",
    "generate",
    "load_causal_lm",
    "load_prompts",
    "load_shared",
    "torch_threads",
    # progress, registration
    "Meter",
    "create_plugin",
    "progress",
    "register",
]
