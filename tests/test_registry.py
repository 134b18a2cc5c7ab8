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
    with pytest.raises(PluginError, match=r"'fake' from package 'pkg-fake' .* not a subclass of synbench.base.Generator"):
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
