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
