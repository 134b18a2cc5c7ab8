"""The one schema: every value typed on merge (bools, lists, ints), checks a type cannot express in one place.

Each test here is a finding of issue 32 that failed before the schema: a bool read for truthiness took any
non-empty string ("no", "off") as true, a string was split into labels, a range was not checked.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from conftest import compose_config, write_jsonl
from synbench.core import registry, schema
from synbench.core.base import DatasetLoader, Generator
from synbench.core.errors import ConfigError, DataError
from synbench.core.privacy import PrivacySpec
from synbench.job.spec import JobConfig

SECRET = "sentinel-7f3a"


def files_dataset(tmp_path: Path, multi: bool = False) -> list[str]:
    """Overrides selecting 40 private records whose text holds SECRET (labels: 2 names; 2 per record if `multi`)."""
    rows = [
        {"text": f"{SECRET} note {i}", "label": ["pos", "neg"] if multi and i % 2 else ["pos" if i % 2 else "neg"]}
        for i in range(40)
    ]
    path = write_jsonl(tmp_path / "train.jsonl", rows)
    return ["dataset=files", f"dataset.train={path}", f"dataset.eval={path}"]


def loader(overrides: list[str]):
    return registry.create(DatasetLoader, OmegaConf.to_container(compose_config(overrides).dataset, resolve=True))


def budget(overrides: list[str], n_private: int) -> PrivacySpec:
    """The job's privacy spec for a private set of `n_private` documents under the composed config."""
    return JobConfig.from_config(compose_config(overrides)).budget(n_private)


def composition_error(overrides: list[str]) -> str:
    """The one-line message of a config that does not compose (what the app prints)."""
    with pytest.raises(ConfigCompositionException) as info:
        compose_config(overrides)
    message = str(schema.config_error(info.value))
    assert "\n" not in message and SECRET not in message
    return message


@pytest.mark.parametrize("value", ["no", "off", "false"])
def test_allow_inferred_label_space_no_refuses_a_label_space_that_looks_like_text(tmp_path: Path, value: str) -> None:
    """The leak of issue 32: `label_field=text allow_inferred_label_space=no` released every document as a label."""
    data = [*files_dataset(tmp_path), "dataset.label_field=text"]
    with pytest.raises(DataError, match="allow_inferred_label_space=true") as info:
        loader([*data, f"dataset.allow_inferred_label_space={value}"]).load(0)
    assert SECRET not in str(info.value)
    assert loader([*data, "dataset.allow_inferred_label_space=yes"]).load(0).label_space_inferred


def test_a_bool_takes_true_or_false_and_nothing_else(tmp_path: Path) -> None:
    message = composition_error([*files_dataset(tmp_path), "dataset.allow_inferred_label_space=maybe"])
    assert message.startswith("dataset.allow_inferred_label_space: Value 'maybe' is not a valid bool")


def test_allow_large_delta_no_refuses_a_large_delta() -> None:
    with pytest.raises(ConfigError, match="privacy.allow_large_delta=true"):
        budget(["generator=copy", "delta=0.5", "privacy.allow_large_delta=no"], 41)
    assert budget(["generator=copy", "delta=0.5", "privacy.allow_large_delta=on"], 41).delta == 0.5


@pytest.mark.parametrize(("value", "expected"), [("off", False), ("no", False), ("on", True), ("true", True)])
def test_secure_mode_is_a_bool(value: str, expected: bool) -> None:
    assert budget([f"privacy.secure_mode={value}"], 41).noise.secure_mode is expected


@pytest.mark.parametrize("tracking", ["wandb", "none"])
def test_log_private_stats_no_keeps_private_statistics_off(tracking: str) -> None:
    off = JobConfig.from_config(
        compose_config(["generator=copy", f"tracking={tracking}", "tracking.log_private_stats=no"])
    )
    assert off.log_private_stats is False and "tracking" not in off.spec.config
    on = JobConfig.from_config(
        compose_config(["generator=copy", f"tracking={tracking}", "tracking.log_private_stats=yes"])
    )
    assert on.log_private_stats is True and on.spec.config["tracking"] == {"log_private_stats": True}


def test_a_third_party_trackers_log_private_stats_is_typed_too() -> None:
    """A tracker without a schema node still has `log_private_stats` typed where the core reads it."""
    assert schema.log_private_stats({"_plugin_": "theirs", "log_private_stats": "no"}) is False
    for value, shown in (("sometimes", "'sometimes'"), (2, "2"), ("y", "'y'")):  # OmegaConf alone: 2 and y true
        with pytest.raises(ConfigError, match=f"^tracking.log_private_stats={shown} is not a bool; write true or"):
            schema.log_private_stats({"_plugin_": "theirs", "log_private_stats": value})


def test_multi_label_no_is_single_label(tmp_path: Path) -> None:
    data = files_dataset(tmp_path, multi=True)
    assert loader([*data, "dataset.multi_label=yes", "dataset.label_space=[pos,neg]"]).load(0).train.multi_label
    with pytest.raises(DataError, match="2 labels"):  # single-label data must hold one label a record
        loader([*data, "dataset.multi_label=no", "dataset.label_space=[pos,neg]"]).load(0)


def test_a_label_space_is_a_list_not_a_string_split_into_letters(tmp_path: Path) -> None:
    message = composition_error([*files_dataset(tmp_path), "dataset.label_space=abc"])
    assert message.startswith("dataset.label_space: ") and "ListConfig" in message


def test_a_label_named_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"dataset.label_space names 'pos' more than once; list each label once"):
        loader([*files_dataset(tmp_path), "dataset.label_space=[pos,neg,pos]"])


@pytest.mark.parametrize("value", ["0", "-3"])
def test_max_length_below_one_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=f"dataset.max_length={value} must be at least 1"):
        loader([*files_dataset(tmp_path), f"dataset.max_length={value}"])


def test_an_int_is_an_int() -> None:
    assert composition_error(["dataset.max_length=many"]).startswith("dataset.max_length: Value 'many'")
    assert composition_error(["audit.n_targets=1.5"]).startswith("audit.n_targets: ")


def test_audit_options_are_typed_and_checked_in_one_place() -> None:
    from synbench.audit.config import AuditOptions

    cfg = compose_config(["task=audit", "audit.save_synthetic=off", "audit.fpr_grid=[0.1,0.2]"])
    audit = schema.typed(AuditOptions, cfg.audit, "audit")
    assert audit.save_synthetic is False and audit.fpr_grid == (0.1, 0.2)
    with pytest.raises(ConfigError, match="audit.select_share=1.5 must lie strictly between 0 and 1"):
        schema.typed(AuditOptions, compose_config(["task=audit", "audit.select_share=1.5"]).audit, "audit")


def test_an_unknown_plugin_key_is_one_line() -> None:
    from synbench.data.files import FileDataset

    with pytest.raises(ConfigError, match="^dataset.colour: Key 'colour' not in 'FileDataset'; remove or rename it"):
        schema.typed(FileDataset, {"_plugin_": "files", "colour": "red"}, "dataset")


# --- DP-Gen's default label prior on multi-label data ---------------------------------------------------------

SPACE = ["cardiac", "renal", "respiratory", "diabetes"]
# 240 notes: 25% with one label, 50% with two, 25% with three (the measurement set: 75% carry 2 or 3)
LABEL_SETS = [[label] for label in SPACE] * 15 + (
    [["cardiac", "renal"], ["cardiac", "diabetes"], ["renal", "respiratory"]] * 40
    + [["cardiac", "renal", "diabetes"], ["renal", "respiratory", "diabetes"]] * 30
)


def multi_label_overrides(tmp_path: Path) -> list[str]:
    rows = [
        {"text": f"note {i}: {' and '.join(labels)} findings", "label": labels} for i, labels in enumerate(LABEL_SETS)
    ]
    train = write_jsonl(tmp_path / "ml_train.jsonl", rows)
    test = write_jsonl(tmp_path / "ml_test.jsonl", rows[::8])
    return [
        "dataset=files",
        f"dataset.train={train}",
        f"dataset.eval={test}",
        "dataset.multi_label=true",
        f"dataset.label_space=[{','.join(SPACE)}]",
    ]


def released_label_sets(overrides: list[str], n: int = 240) -> list[tuple[str, ...]]:
    """The label sets DP-Gen's fit plans for `n` synthetic documents under the composed config (its DP release)."""
    import numpy as np

    from synbench.dp import label_sets
    from synbench.dp.job import JobBudget
    from synbench.dp.poisson import PoissonPlan
    from synbench.generators.dpgen.settings import DPGenOptions

    cfg = compose_config(overrides)
    train = loader(overrides).load(0).train
    options = schema.typed(DPGenOptions, OmegaConf.to_container(cfg.generator, resolve=True), "generator")
    privacy = JobConfig.from_config(cfg).budget(len(train))
    budget = JobBudget.plan(options, train, PoissonPlan(len(train), options.batch_size, options.epochs), privacy)
    release = budget.release_labels(train, privacy)
    return label_sets.plan(n, release, train.label_space, train.multi_label, np.random.default_rng(0))


@pytest.mark.slow
def test_dpgen_default_config_releases_label_sets_on_multi_label_data(tmp_path: Path) -> None:
    """The default `label_prior: auto` is the DP label-set plan on multi-label data (uniform gave 0% several labels)."""
    overrides = multi_label_overrides(tmp_path)
    assert len(LABEL_SETS) == 240 and sum(len(s) > 1 for s in LABEL_SETS) == 180
    planned = released_label_sets(overrides)
    share = sum(len(labels) > 1 for labels in planned) / len(planned)
    assert share >= 0.3, f"{share:.0%} of the synthetic documents carry several labels"


def test_the_uniform_prior_is_refused_on_multi_label_data(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^generator.label_prior=uniform gives every synthetic document one label"):
        released_label_sets([*multi_label_overrides(tmp_path), "generator.label_prior=uniform"])


@pytest.mark.slow
def test_dpgen_default_config_writes_label_sets_end_to_end(tmp_path: Path, tiny_model: dict) -> None:
    """The same through a real fit and sample (tiny Llama): the written documents carry the planned label sets."""
    from conftest import model_overrides

    overrides = [*multi_label_overrides(tmp_path), *model_overrides(tiny_model), "generator.max_new_tokens=8"]
    cfg = compose_config(overrides)
    train = loader(overrides).load(0).train
    generator = registry.create(Generator, OmegaConf.to_container(cfg.generator, resolve=True))
    generator.fit(train, JobConfig.from_config(cfg).budget(len(train)), seed=0)
    synthetic = generator.sample(240)
    share = sum(len(labels) > 1 for labels in synthetic.labels) / len(synthetic)
    assert synthetic.multi_label and share >= 0.3, f"{share:.0%} of the synthetic documents carry several labels"


# --- defaults in one place ------------------------------------------------------------------------------------

CONF = Path(__file__).resolve().parents[1] / "conf"
SCHEMA_ENTRY = re.compile(r"^\s*-\s*/schema/([\w/]+?)@(\w+)", re.MULTILINE)
NESTED_GROUP = re.compile(r"^\s*-\s*(\w+):", re.MULTILINE)
INHERITED = re.compile(r"^\s*-\s*(\w+)\s*(?:#.*)?$", re.MULTILINE)  # another option of the same group
# YAMLs that set other groups' values on purpose: the paper's settings over the demo's
OVERRIDERS = ("paper_generator", "paper_dataset")
# groups whose options choose other groups' options and values (no node of their own to type); `demo` sets the
# chosen generator's demo sizes (test_each_demo_option_changes_every_value_it_sets)
CHOOSERS = ("experiment", "demo_job", "hydra/launcher", "demo", *OVERRIDERS)


def group_options() -> list[tuple[str, str, Path]]:
    """Every option of every config group of conf/ (a nested group such as generator/backend included)."""
    return sorted(
        (str(path.parent.relative_to(CONF)), path.stem, path)
        for path in CONF.rglob("*.yaml")
        if path.parent != CONF and "prompts" not in path.parts
    )


def schema_defaults(name: str) -> dict:
    from importlib import import_module

    from hydra.core.config_store import ConfigStore

    import_module("synbench.conf")  # registers the schema nodes, as Hydra's first read of the configs does
    node = ConfigStore.instance().load(f"{name}.yaml").node
    return OmegaConf.to_container(node, resolve=False)


def same_as_default(value: object, default: object, where: str) -> list[str]:
    """The keys (dotted) under `where` that a YAML sets to the schema's own default; a mapping is compared per key."""
    if isinstance(value, dict) and isinstance(default, dict):
        return [
            k for key, v in value.items() if key in default for k in same_as_default(v, default[key], f"{where}.{key}")
        ]
    interpolation = isinstance(value, str) and "${" in value  # wiring to another node, not a default
    return [where] if value == default and not interpolation else []


@pytest.mark.parametrize(
    ("group", "option", "path"), group_options(), ids=lambda v: str(v) if isinstance(v, str) else ""
)
def test_each_value_comes_from_the_schema_or_a_yaml_that_changes_it(group: str, option: str, path: Path) -> None:
    """A group option's YAML sets only values that differ from its schema node; composed, the node is exactly the
    schema's defaults with the YAML's values over them."""
    text = path.read_text()
    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    raw.pop("defaults", None)
    for name, package in SCHEMA_ENTRY.findall(text):
        defaults = schema_defaults(f"schema/{name}")
        node = raw if package == "_here_" else raw.get(package, {})
        header = re.search(r"^# @package ([\w.]+)", text, re.MULTILINE)
        here = header.group(1) if header else group.replace("/", ".")
        where = here if package == "_here_" else package
        assert not same_as_default(node, defaults, where), f"{path.name} restates schema defaults; drop them"
        composed = compose_config(["data_root=/data", *group_overrides(group, option), "~demo"])  # no demo sizes
        got = OmegaConf.to_container(OmegaConf.select(composed, where), resolve=False)
        expected = OmegaConf.to_container(OmegaConf.merge(defaults, node), resolve=False)
        for nested in NESTED_GROUP.findall(text):  # a group the option selects inside its node (generator/backend)
            got.pop(nested, None), expected.pop(nested, None)
        assert got == expected
    if group in OVERRIDERS:
        base = compose_config(["data_root=/data", *overridden_groups(text)])
        paper = compose_config(["data_root=/data", f"+{group}={option}"])
        for key, value in raw.items():
            if value == "???":  # a value the user must pass
                continue
            unchanged = same_as_default(value, plain(base[key]), key)
            assert not unchanged, f"{path.name} sets {unchanged} to the value it already has; drop them"
            assert plain(paper[key]) != plain(base[key])


@pytest.mark.parametrize("option", sorted(p.stem for p in (CONF / "demo").glob("*.yaml")))
def test_each_demo_option_changes_every_value_it_sets(option: str) -> None:
    """A demo option (conf/config.yaml selects the chosen generator's) holds only the demo's sizes: each value it
    sets differs from what the generator's own YAML and the schema give without it (`~demo`)."""
    raw = OmegaConf.to_container(OmegaConf.load(CONF / "demo" / f"{option}.yaml"), resolve=False)
    demo = compose_config([f"generator={option}"]).generator
    base = compose_config([f"generator={option}", "~demo"]).generator
    unchanged = [k for key, value in raw.items() for k in same_as_default(value, plain(base[key]), key)]
    assert not unchanged, f"conf/demo/{option}.yaml sets {unchanged} to the value they already have; drop them"
    assert OmegaConf.to_container(OmegaConf.merge(plain(base), raw)) == OmegaConf.to_container(demo)


def plain(value: object) -> object:
    return OmegaConf.to_container(value, resolve=False) if OmegaConf.is_config(value) else value


def group_overrides(group: str, option: str) -> list[str]:
    """The command line that selects `option` of `group` (global ones are added with +)."""
    text = (CONF / group / f"{option}.yaml").read_text()
    if "@package _global_" in text and group not in ("task",):
        return [f"+{group}={option}"]
    if group == "generator/backend":  # a group inside AUG-PE's node
        return ["generator=augpe", f"{group}={option}"]
    if group in ("metrics", "model_attacks"):
        return [f"+{group}=[{option}]"] if group == "model_attacks" else [f"{group}=[{option}]"]
    return [f"{group}={option}"]


def overridden_groups(text: str) -> list[str]:
    """The group choices a global YAML's defaults list overrides, as command-line overrides (null: dropped)."""
    found = re.findall(r"^\s*-\s*override\s+/([\w/]+):\s*(\w+)", text, re.MULTILINE)
    return [f"~{g}" if o == "null" else f"{g}={o}" for g, o in found]


def test_the_primary_config_picks_groups_and_sets_no_schema_default() -> None:
    raw = OmegaConf.to_container(OmegaConf.load(CONF / "config.yaml"), resolve=False)
    assert raw["defaults"][0] == "synbench_schema"
    assert not (set(raw) - {"defaults", "hydra"}), "conf/config.yaml sets values: they belong in SynBenchConfig"
    assert compose_config().lock_wait_s == schema.SynBenchConfig().lock_wait_s


def schema_entries(group: str, option: str) -> list[tuple[str, str]]:
    """The schema nodes an option's YAML starts from: its own, or those of the option of its group it extends."""
    text = (CONF / group / f"{option}.yaml").read_text()
    inherited = [o for o in INHERITED.findall(text) if o != "_self_"]
    return SCHEMA_ENTRY.findall(text) + [e for o in inherited for e in schema_entries(group, o)]


@pytest.mark.parametrize(
    ("group", "option", "path"),
    [entry for entry in group_options() if entry[0] not in CHOOSERS],
    ids=lambda v: str(v) if isinstance(v, str) else "",
)
def test_every_group_option_has_a_schema_node(group: str, option: str, path: Path) -> None:
    """No group is left untyped: each option's node comes from a schema node, so each of its values is typed."""
    entries = schema_entries(group, option)
    assert entries, f"{path.name} names no /schema/ node in its defaults list"
    composed = compose_config(["data_root=/data", *group_overrides(group, option)])
    header = re.search(r"^# @package ([\w.]+)", path.read_text(), re.MULTILINE)
    for name, package in entries:
        where = package if package != "_here_" else header.group(1) if header else group.replace("/", ".")
        typed_as = OmegaConf.get_type(OmegaConf.select(composed, where))
        assert dataclasses.is_dataclass(typed_as), f"{where} of {path.name} is not typed by schema/{name}"


# --- typed values in each group typed by the schema ----------------------------------------------------------

# (overrides, key, the value it holds once composed): yes/no/on/off are bools, an interpolation resolves typed
TYPED = [
    (["encoder.normalize=no"], "encoder.normalize", False),
    (["encoder.batch_size=8"], "encoder.batch_size", 8),
    (["attack=ngram", "attack.ngram.pad_target=no"], "attack.ngram.pad_target", False),
    (["attack=similarity", "attack.similarity.reference=off"], "attack.similarity.reference", False),
    (["classifier=transformer", "classifier.epochs=2"], "classifier.epochs", 2),
    (["classifier=bert_large", "classifier.lr=1e-5"], "classifier.lr", 1e-5),
    (["filter=pyes_pno", "filter.per_label=off"], "filter.per_label", False),
    (["generator=augpe", "generator.backend.num_threads=2"], "generator.backend.num_threads", 2),
    (["generator=augpe", "generator.label_sets.delta_share=0.2"], "generator.label_sets.delta_share", 0.2),
    (["generator=public", "generator.top_p=1"], "generator.top_p", 1.0),
    (["generator=command", "generator.timeout_s=5"], "generator.timeout_s", 5.0),
    (["task.save_synthetic=no"], "task.save_synthetic", False),
    (["task=report", "task.confidence=0.9"], "task.confidence", 0.9),
    (["task=contamination", "contamination.exact.enabled=off"], "contamination.exact.enabled", False),
    (["task=model_audit", "model_audit.save_synthetic=yes"], "model_audit.save_synthetic", True),
    (["task=new_plugin", "plugin.name=mygen"], "plugin.name", "mygen"),
]


@pytest.mark.parametrize(("overrides", "key", "value"), TYPED, ids=[case[1] for case in TYPED])
def test_a_value_of_a_newly_typed_group_is_typed_on_merge(overrides: list[str], key: str, value: object) -> None:
    got = OmegaConf.select(compose_config(overrides), key)
    assert got == value and type(got) is type(value)


# (overrides, the start of the one error line): a value of the wrong type, or a key the schema does not have
REFUSED = [
    (["model.max_length=abc"], "model.max_length: Key 'max_length' not in 'ModelSpec'"),
    (["encoder.batch_size=many"], "encoder.batch_size: Value 'many'"),
    (["attack=ngram", "attack.ngram.pad_target=maybe"], "attack.ngram.pad_target: Value 'maybe' is not a valid bool"),
    (["attack=ngram", "attack.ngram.n=two"], "attack.ngram.n: Value 'two'"),
    (["classifier=transformer", "classifier.epochs=1.5"], "classifier.epochs: Value '1.5'"),
    (["filter=pyes_pno", "filter.keep_share=most"], "filter.keep_share: Value 'most'"),
    (["generator=augpe", "generator.iterations=x"], "generator.iterations: Value 'x'"),
    (["generator=augpe", "generator.backend.batch_size=x"], "generator.backend.batch_size: Value 'x'"),
    (["generator=public", "generator.batch_size=big"], "generator.batch_size: Value 'big'"),
    (["task.n_synthetic=abc"], "task.n_synthetic: Value 'abc'"),
    (["task=report", "task.confidence=high"], "task.confidence: Value 'high'"),
    (["task=contamination", "contamination.mink.k=some"], "contamination.mink.k: Value 'some'"),
    (["task=model_audit", "model_audit.head.epochs=x"], "model_audit.head.epochs: Value 'x'"),
    (["task=new_plugin", "plugin.colour=red"], "plugin.colour: Key 'colour' not in 'PluginScaffold'"),
]


@pytest.mark.parametrize(("overrides", "message"), REFUSED, ids=[case[0][-1] for case in REFUSED])
def test_a_bad_value_of_a_newly_typed_group_is_one_line_naming_its_key(overrides: list[str], message: str) -> None:
    assert composition_error(overrides).startswith(message)


@pytest.mark.parametrize(
    ("options", "node", "where", "message"),
    [
        (
            "synbench.lm.settings:ModelSpec",
            {"name": "m", "pretrained": "p", "dtype": "float64"},
            "model",
            "model.dtype",
        ),
        ("synbench.lm.settings:OpenAIBackendOptions", {"timeout_s": 0, "model": "m"}, "generator.backend", "timeout_s"),
        ("synbench.metrics.transformer_options:TransformerOptions", {"epochs": 0}, "classifier", "classifier.epochs=0"),
        ("synbench.filters.settings:PYesPNoOptions", {"model": {}, "keep_share": 0}, "filter", "filter.keep_share=0"),
        ("synbench.generators.augpe.settings:AugPEOptions", {"selection": "best"}, "generator", "generator.selection"),
        ("synbench.contamination.config:ContaminationOptions", {"mink": {"fpr": 0}}, "contamination", "mink.fpr=0"),
        (
            "synbench.model_audit.config:ModelAuditOptions",
            {"head": {"lr": 0, "epochs": 0}},
            "x",
            "model_audit.head.epochs",
        ),
    ],
)
def test_a_range_a_type_cannot_express_is_checked_once_in_its_schema(
    options: str, node: dict, where: str, message: str
) -> None:
    from importlib import import_module

    module, _, name = options.partition(":")
    with pytest.raises(ConfigError, match=re.escape(message)):
        schema.typed(getattr(import_module(module), name), node, where)


def test_the_openai_backend_without_a_model_fails_naming_the_key() -> None:
    from synbench.lm.settings import OpenAIBackendOptions

    with pytest.raises(ConfigError, match="^generator.backend.model: "):
        schema.typed(OpenAIBackendOptions, {}, "generator.backend")
