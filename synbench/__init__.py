"""SynBench: benchmark and privacy audit for DP synthetic text generators.

A few core types for interactive use; plugin packages import from `synbench.api`, the declared public API
(with the conformance kit `synbench.testing`).
"""

from synbench.core.base import Attack, DatasetLoader, FitReport, Generator, Metric, MetricContext, Splits
from synbench.core.corpus import Corpus
from synbench.core.errors import SynBenchError
from synbench.core.privacy import PrivacySpec

__version__ = "0.1.0"
__all__ = [
    "Attack",
    "Corpus",
    "DatasetLoader",
    "FitReport",
    "Generator",
    "Metric",
    "MetricContext",
    "PrivacySpec",
    "Splits",
    "SynBenchError",
    "__version__",
]
