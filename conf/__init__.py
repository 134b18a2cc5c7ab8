"""SynBench's config groups (package data), and the schema nodes of the built-in plugins they extend.

Hydra imports this package before it reads a config from it (`pkg://synbench.conf`), so the schema nodes are in
the ConfigStore when a group YAML's defaults list names them (`- /schema/dataset/files@_here_`). A plugin package
does the same in its own config package (docs/config.md).
"""

from synbench import schema
from synbench.audit.config import AuditConfig
from synbench.data.drugreview import DrugReviewDataset
from synbench.data.files import FileDataset
from synbench.data.hub import HuggingFaceDataset
from synbench.generators.copy import CopyGenerator
from synbench.generators.dpdiffusion.settings import DPDiffusionSettings
from synbench.generators.dpgen.settings import DPGenOptions
from synbench.metrics.classifiers import TfidfClassifier
from synbench.metrics.entities import EntitiesMetric
from synbench.metrics.labels import LabelsMetric
from synbench.metrics.length import LengthMetric
from synbench.metrics.mauve import MauveMetric
from synbench.metrics.utility import UtilityMetric
from synbench.model_audit.attacks import LiraAttack, LogitAttack, RmiaAttack
from synbench.tracking import WandbOptions

schema.store_plugin("dataset", "files", FileDataset)
schema.store_plugin("dataset", "huggingface", HuggingFaceDataset)
schema.store_plugin("dataset", "drugreview", DrugReviewDataset)
schema.store_plugin("generator", "dpgen", DPGenOptions)
schema.store_plugin("generator", "dpdiffusion", DPDiffusionSettings)
# plugins without an options dataclass: the schema of their constructor's typed keywords (schema.options_of)
for group, name, cls in (
    ("generator", "copy", CopyGenerator),
    ("classifier", "tfidf", TfidfClassifier),
    ("metrics", "utility", UtilityMetric),
    ("metrics", "mauve", MauveMetric),
    ("metrics", "entities", EntitiesMetric),
    ("metrics", "length", LengthMetric),
    ("metrics", "labels", LabelsMetric),
    ("model_attacks", "logits", LogitAttack),
    ("model_attacks", "lira", LiraAttack),
    ("model_attacks", "rmia", RmiaAttack),
):
    options = schema.options_of(cls)
    assert options is not None, f"{cls.__name__} takes **kwargs: give it an options dataclass"
    schema.store_plugin(group, name, options)
schema.store_plugin("tracking", "wandb", WandbOptions, schema.TrackingOptions)
schema.store_plugin("tracking", "none", schema.TrackingOptions)
schema.store_section("audit", AuditConfig)
