"""SynBench's config groups (package data), and the schema nodes of the built-in plugins they extend.

Hydra imports this package before it reads a config from it (`pkg://synbench.conf`), so the schema nodes are in
the ConfigStore when a group YAML's defaults list names them (`- /schema/dataset/files@_here_`). Each is registered
by where its options are (`module:name`) and imported when Hydra first loads it (`schema.LazyGroup`): a start-up
imports only the options of the groups it composes, and `--help` or a refused override none of the plugins. A plugin
package does the same in its own config package (docs/config.md).
"""

from synbench.core import schema
from synbench.tasks.options import OPTIONS

# each built-in plugin: its options dataclass, or (a class without one) the plugin class, whose constructor's typed
# keywords are its options (schema.options_of)
PLUGINS = {
    "dataset": {
        "files": "synbench.data.files:FileDataset",
        "huggingface": "synbench.data.hub:HuggingFaceDataset",
        "drugreview": "synbench.data.drugreview:DrugReviewDataset",
        "mimic": "synbench.data.mimic:MimicDataset",
        "psytar": "synbench.data.psytar:PsyTARDataset",
        "n2c2_2008": "synbench.data.n2c2:N2C2ObesityDataset",
        "asylex": "synbench.data.asylex:AsyLexDataset",
    },
    "generator": {
        "dpgen": "synbench.generators.dpgen.settings:DPGenOptions",
        "dpdiffusion": "synbench.generators.dpdiffusion.settings:DPDiffusionSettings",
        "augpe": "synbench.generators.augpe.settings:AugPEOptions",
        "template": "synbench.generators.template:TemplateOptions",
        "copy": "synbench.generators.copy:CopyGenerator",
        "public": "synbench.generators.public:PublicGenerator",
        "command": "synbench.generators.command:CommandGenerator",
    },
    "generator/backend": {
        "local": "synbench.lm.settings:LocalBackendOptions",
        "openai": "synbench.lm.settings:OpenAIBackendOptions",
    },
    "classifier": {
        "transformer": "synbench.metrics.transformer_options:TransformerOptions",
        "tfidf": "synbench.metrics.classifiers:TfidfClassifier",
    },
    "filter": {
        "pyes_pno": "synbench.filters.settings:PYesPNoConfig",
        "none": "synbench.filters.base:NoFilter",
    },
    "attack": {
        "ngram": "synbench.audit.ngram:NgramAttack",
        "similarity": "synbench.audit.similarity:SimilarityAttack",
        "holdout": "synbench.audit.holdout:HoldoutAttack",
        "rare_echo": "synbench.audit.holdout:RareEchoAttack",
        "run_echo": "synbench.audit.echo:RunEchoAttack",
    },
    "metrics": {
        "utility": "synbench.metrics.utility:UtilityMetric",
        "mauve": "synbench.metrics.mauve:MauveMetric",
        "entities": "synbench.metrics.entities:EntitiesMetric",
        "length": "synbench.metrics.length:LengthMetric",
        "labels": "synbench.metrics.labels:LabelsMetric",
    },
    "model_attacks": {
        "logits": "synbench.model_audit.attacks:LogitAttack",
        "lira": "synbench.model_audit.attacks:LiraAttack",
        "rmia": "synbench.model_audit.attacks:RmiaAttack",
    },
}
# nodes that name no plugin: the plain groups and the tasks' sections
CONFIGS = {
    "model": "synbench.lm.settings:ModelSpec",
    "encoder": "synbench.core.base:EncoderSpec",
    "prompts": "synbench.lm.prompts:Prompts",
    "audit": "synbench.audit.config:AuditConfig",
    "contamination": "synbench.contamination.config:ContaminationConfig",
    "model_audit": "synbench.model_audit.config:ModelAuditConfig",
    "plugin": "synbench.tasks.options:PluginScaffold",
}

for group, plugins in PLUGINS.items():
    for name, options in plugins.items():
        schema.store_plugin(group, name, options)
# a tracking node also holds the core's `log_private_stats`
schema.store_plugin("tracking", "wandb", "synbench.job.tracking:WandbOptions", schema.TrackingOptions)
schema.store_plugin("tracking", "none", schema.TrackingOptions)
for path, options in CONFIGS.items():
    schema.store_config(path, options)
for task, options in OPTIONS.items():
    schema.store_config(f"task/{task}", options)
