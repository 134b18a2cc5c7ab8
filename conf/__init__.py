"""SynBench's config groups (package data), and the schema nodes of the built-in plugins they extend.

Hydra imports this package before it reads a config from it (`pkg://synbench.conf`), so the schema nodes are in
the ConfigStore when a group YAML's defaults list names them (`- /schema/dataset/files@_here_`). A plugin package
does the same in its own config package (docs/config.md).
"""

from synbench.audit.config import AuditConfig
from synbench.audit.holdout import HoldoutAttack, RareEchoAttack
from synbench.audit.ngram import NgramAttack
from synbench.audit.similarity import SimilarityAttack
from synbench.contamination.config import ContaminationConfig
from synbench.core import schema
from synbench.core.base import EncoderSpec
from synbench.data.drugreview import DrugReviewDataset
from synbench.data.files import FileDataset
from synbench.data.hub import HuggingFaceDataset
from synbench.data.mimic import MimicDataset
from synbench.data.n2c2 import N2C2ObesityDataset
from synbench.data.psytar import PsyTARDataset
from synbench.filters.base import NoFilter
from synbench.filters.settings import PYesPNoConfig
from synbench.generators.augpe.settings import AugPEOptions
from synbench.generators.command import CommandGenerator
from synbench.generators.copy import CopyGenerator
from synbench.generators.dpdiffusion.settings import DPDiffusionSettings
from synbench.generators.dpgen.settings import DPGenOptions
from synbench.generators.public import PublicGenerator
from synbench.generators.template import TemplateOptions
from synbench.job.tracking import WandbOptions
from synbench.lm.prompts import Prompts
from synbench.lm.settings import LocalBackendOptions, ModelSpec, OpenAIBackendOptions
from synbench.metrics.classifiers import TfidfClassifier
from synbench.metrics.entities import EntitiesMetric
from synbench.metrics.labels import LabelsMetric
from synbench.metrics.length import LengthMetric
from synbench.metrics.mauve import MauveMetric
from synbench.metrics.transformer_options import TransformerOptions
from synbench.metrics.utility import UtilityMetric
from synbench.model_audit.attacks import LiraAttack, LogitAttack, RmiaAttack
from synbench.model_audit.config import ModelAuditConfig
from synbench.tasks.options import OPTIONS, PluginScaffold

schema.store_plugin("dataset", "files", FileDataset)
schema.store_plugin("dataset", "huggingface", HuggingFaceDataset)
schema.store_plugin("dataset", "drugreview", DrugReviewDataset)
schema.store_plugin("dataset", "mimic", MimicDataset)
schema.store_plugin("dataset", "psytar", PsyTARDataset)
schema.store_plugin("dataset", "n2c2_2008", N2C2ObesityDataset)
schema.store_plugin("generator", "dpgen", DPGenOptions)
schema.store_plugin("generator", "dpdiffusion", DPDiffusionSettings)
schema.store_plugin("generator", "augpe", AugPEOptions)
schema.store_plugin("generator", "template", TemplateOptions)
schema.store_plugin("generator/backend", "local", LocalBackendOptions)
schema.store_plugin("generator/backend", "openai", OpenAIBackendOptions)
schema.store_plugin("classifier", "transformer", TransformerOptions)
schema.store_plugin("filter", "pyes_pno", PYesPNoConfig)
# plugins without an options dataclass: the schema of their constructor's typed keywords (schema.options_of)
for group, name, cls in (
    ("generator", "copy", CopyGenerator),
    ("generator", "public", PublicGenerator),
    ("generator", "command", CommandGenerator),
    ("attack", "ngram", NgramAttack),
    ("attack", "similarity", SimilarityAttack),
    ("attack", "holdout", HoldoutAttack),
    ("attack", "rare_echo", RareEchoAttack),
    ("filter", "none", NoFilter),
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
# nodes that name no plugin: the plain groups, the tasks' options and their sections
schema.store_config("model", ModelSpec)
schema.store_config("encoder", EncoderSpec)
schema.store_config("prompts", Prompts)
for task, options in OPTIONS.items():
    schema.store_config(f"task/{task}", options)
schema.store_config("audit", AuditConfig)
schema.store_config("contamination", ContaminationConfig)
schema.store_config("model_audit", ModelAuditConfig)
schema.store_config("plugin", PluginScaffold)
