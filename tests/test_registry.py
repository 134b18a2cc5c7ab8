"""The plugin registry: lookup, errors that list names, duplicates across packages."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from synbench import registry
from synbench.errors import PluginError
from synbench.generators.copy import CopyGenerator


def test_builtins_are_registered_through_entry_points() -> None:
    assert registry.available("generators")["copy"].package == "synbench"
    assert {"files", "huggingface", "drugreview"} <= set(registry.available("datasets"))


def test_create_builds_the_named_plugin() -> None:
    assert isinstance(registry.create("generators", {"_plugin_": "copy"}), CopyGenerator)


def test_unknown_name_lists_available() -> None:
    with pytest.raises(PluginError, match=r"unknown generator plugin 'nope'; available: .*copy"):
        registry.load("generators", "nope")


def test_unknown_config_key_names_the_accepted_ones() -> None:
    with pytest.raises(PluginError, match=r"does not take 'colour'"):
        registry.create("generators", {"_plugin_": "copy", "colour": "red"})


def test_missing_plugin_key() -> None:
    with pytest.raises(PluginError, match="_plugin_"):
        registry.create("generators", {"name": "x"})


class _Dist:
    def __init__(self, name: str) -> None:
        self.metadata = {"Name": name}
        self.version = "1.0"


def test_a_name_provided_twice_names_both_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    eps = []
    for package, value in (("pkg-one", "one.mod:Gen"), ("pkg-two", "two.mod:Gen")):
        ep = EntryPoint(name="twin", value=value, group="synbench.generators")
        eps.append(ep._for(_Dist(package)))  # type: ignore[attr-defined]
    monkeypatch.setattr(registry, "entry_points", lambda group: eps)
    registry._scan.cache_clear()
    try:
        with pytest.raises(PluginError, match=r"'twin' is provided twice: by package 'pkg-one'.*package 'pkg-two'"):
            registry.available("generators")
    finally:
        registry._scan.cache_clear()


def fake_plugin(monkeypatch: pytest.MonkeyPatch, group: str, obj: object) -> None:
    """Register `obj` as plugin 'fake' of `group` (through a real EntryPoint over this module)."""
    globals()["_FAKE"] = obj
    ep = EntryPoint(name="fake", value=f"{__name__}:_FAKE", group=group)._for(_Dist("pkg-fake"))  # type: ignore[attr-defined]
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep])
    registry._scan.cache_clear()


@pytest.fixture(autouse=True)
def fresh_scan() -> object:
    registry._scan.cache_clear()
    yield
    registry._scan.cache_clear()


def test_a_plugin_must_subclass_its_kinds_base(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_plugin(monkeypatch, "synbench.generators", dict)
    with pytest.raises(
        PluginError, match=r"'fake' from package 'pkg-fake' .* not a subclass of synbench.base.Generator"
    ):
        registry.load("generators", "fake")


def test_a_metric_with_an_unknown_section_is_refused_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    from synbench.base import Metric

    class Misfiled(Metric):
        section = "privacy"

        def __call__(self, real: object, synthetic: object, ctx: object) -> dict[str, float]:
            return {}

    fake_plugin(monkeypatch, "synbench.metrics", Misfiled)
    with pytest.raises(PluginError, match="declares section 'privacy'; a metric writes to one of utility, fidelity"):
        registry.load("metrics", "fake")


def test_unknown_names_suggest_the_closest() -> None:
    with pytest.raises(PluginError, match=r"unknown generator plugin 'dpgne' \(did you mean 'dpgen'\?\)"):
        registry.load("generators", "dpgne")


def test_classifiers_and_trackers_are_plugin_kinds() -> None:
    from synbench.base import Classifier, Tracker

    assert {"tfidf", "transformer"} <= set(registry.available("classifiers"))
    assert {"none", "wandb"} <= set(registry.available("trackers"))
    assert isinstance(registry.create("classifiers", {"_plugin_": "tfidf"}), Classifier)
    assert isinstance(registry.create("trackers", {"_plugin_": "none"}, spec=None, job_dir=None, group="g"), Tracker)


# --- every named thing is a plugin of a kind with its own group and base ----------------------------------------------


@pytest.mark.parametrize("kind", sorted(registry.BASES))
def test_every_builtin_of_every_kind_loads_and_subclasses_its_base(kind: str) -> None:
    """Tasks, filters, LM backends and model attacks are registry kinds like generators: each built-in loads by name."""
    plugins = registry.available(kind)
    assert plugins, f"no built-in {kind}"
    for name in plugins:
        assert issubclass(registry.load(kind, name), registry.base_class(kind))


def test_model_attacks_filters_and_backends_are_their_own_groups() -> None:
    assert set(registry.available("model_attacks")) >= {"logits", "lira", "rmia"}
    assert not set(registry.available("attacks")) & set(registry.available("model_attacks"))
    assert set(registry.available("filters")) >= {"none", "pyes_pno"}
    assert set(registry.available("lm_backends")) >= {"local", "openai"}
    assert registry.KINDS["model_attacks"] == "synbench.model_attacks"


# --- the `plugins:` key: unpackaged modules register their classes ----------------------------------------------------

LOCAL_FILTER = '''
import numpy as np
from synbench.api import Filter, Selection, register


@register("filters", "shortest")
class Shortest(Filter):
    """Keep the `n` shortest synthetic documents."""

    def __init__(self, n: int) -> None:
        self.n = n

    def select(self, synthetic):
        lengths = np.array([len(t) for t in synthetic.texts])
        return Selection(np.sort(np.argsort(lengths, kind="stable")[: self.n]), lengths.astype(float), {"n": self.n})
'''


@pytest.fixture()
def local_plugins() -> object:
    saved = {kind: dict(names) for kind, names in registry._LOCAL.items()}
    yield
    registry._LOCAL.clear()
    registry._LOCAL.update(saved)


def test_a_module_named_by_plugins_registers_a_selectable_filter(tmp_path, local_plugins: object) -> None:
    import numpy as np

    from synbench.corpus import Corpus
    from synbench.filters import apply_filter

    path = tmp_path / "my_filters.py"
    path.write_text(LOCAL_FILTER)
    with pytest.raises(PluginError, match="unknown filter plugin 'shortest'"):
        registry.load("filters", "shortest")
    registry.load_modules([str(path)])
    assert registry.available("filters")["shortest"].package == registry.LOCAL_PACKAGE
    synthetic = Corpus.build(["a much longer text", "short", "mid text"], [["x"], ["x"], ["y"]], ["x", "y"])
    results: dict[str, object] = {}
    scored = apply_filter({"_plugin_": "shortest", "n": 2}, synthetic, tmp_path, results, lambda kept: list(kept.texts))
    assert scored == ["short", "mid text"] and results["filter"]["n_kept"] == 2  # type: ignore[index]
    assert np.load(tmp_path / "filter_scores.npy").tolist() == [18.0, 5.0, 8.0]
    registry.load_modules([str(path)])  # importing twice registers nothing twice


def test_register_refuses_a_wrong_base_a_taken_name_and_a_missing_module(tmp_path, local_plugins: object) -> None:
    from synbench.errors import ConfigError
    from synbench.filters.base import NoFilter

    with pytest.raises(PluginError, match="not a subclass of synbench.filters.base.Filter"):
        registry.register("filters", "bad")(dict)
    with pytest.raises(PluginError, match="registered by module .* and installed by package 'synbench'"):
        registry.register("filters", "pyes_pno")(NoFilter)
        registry.available("filters")
    with pytest.raises(ConfigError, match=r"plugins\[0\]: module 'no_such_module_xyz' could not be imported"):
        registry.load_modules(["no_such_module_xyz"])
    (tmp_path / "empty.py").write_text("")
    with pytest.raises(ConfigError, match=r"plugins\[1\]: the file .*missing.py does not exist"):
        registry.load_modules([str(tmp_path / "empty.py"), str(tmp_path / "missing.py")])


def test_the_plugins_key_registers_a_module_for_the_whole_job(tmp_path) -> None:
    """`python -m synbench plugins=[file.py]`: the job's registry lists the module's plugin beside the installed
    ones."""
    from conftest import run_cli

    (tmp_path / "my_filters.py").write_text(LOCAL_FILTER)
    out = run_cli(
        ["task=plugins", f"plugins=[{tmp_path / 'my_filters.py'}]", f"output_root={tmp_path / 'out'}"], cwd=tmp_path
    ).stdout
    assert f"shortest         {registry.LOCAL_PACKAGE}" in out and "pyes_pno" in out
    assert "shortest" not in run_cli(["task=plugins", f"output_root={tmp_path / 'out'}"], cwd=tmp_path).stdout
