"""SynBench: benchmark and privacy audit for DP synthetic text generators."""
from synbench.base import Attack, DatasetLoader, FitReport, Generator, Metric, MetricContext, Splits
from synbench.corpus import Corpus
from synbench.errors import SynBenchError
from synbench.privacy import PrivacySpec

__version__ = "0.1.0"
__all__ = [
    "Attack", "Corpus", "DatasetLoader", "FitReport", "Generator", "Metric",
    "MetricContext", "PrivacySpec", "Splits", "SynBenchError", "__version__",
]
