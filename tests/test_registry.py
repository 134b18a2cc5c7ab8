"""The plugin registry: lookup, errors that list names, duplicates across packages."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from synbench.core import registry
from synbench.core.base import Attack, DatasetLoader, Generator, LMBackend, ModelAttack, Plugin
from synbench.core.errors import PluginError
from synbench.filters.base import Filter
from synbench.generators.copy import CopyGenerator


def test_builtins_are_registered_through_entry_points() -> None:
    assert registry.available(Generator)["copy"].package == "synbench"
    assert {"files", "huggingface", "drugreview"} <= set(registry.available(DatasetLoader))


def test_create_builds_the_named_plugin() -> None:
    assert isinstance(registry.create(Generator, {"_plugin_": "copy"}), CopyGenerator)


def test_unknown_name_lists_available() -> None:
    with pytest.raises(PluginError, match=r"unknown generator plugin 'nope'; available: .*copy"):
        registry.load(Generator, "nope")


def test_unknown_config_key_names_the_accepted_ones() -> None:
    with pytest.raises(PluginError, match=r"does not take 'colour'"):
        registry.create(Generator, {"_plugin_": "copy", "colour": "red"})


def test_missing_plugin_key() -> None:
    with pytest.raises(PluginError, match="_plugin_"):
        registry.create(Generator, {"name": "x"})


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
            registry.available(Generator)
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
        PluginError, match=r"'fake' from package 'pkg-fake' .* not a subclass of synbench.core.base.Generator"
    ):
        registry.load(Generator, "fake")


def test_a_metric_with_an_unknown_section_is_refused_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    from synbench.core.base import Metric

    class Misfiled(Metric):
        section = "privacy"

        def __call__(self, real: object, synthetic: object, ctx: object) -> dict[str, float]:
            return {}

    fake_plugin(monkeypatch, "synbench.metrics", Misfiled)
    with pytest.raises(PluginError, match="declares section 'privacy'; a metric writes to one of utility, fidelity"):
        registry.load(Metric, "fake")


def test_unknown_names_suggest_the_closest() -> None:
    with pytest.raises(PluginError, match=r"unknown generator plugin 'dpgne' \(did you mean 'dpgen'\?\)"):
        registry.load(Generator, "dpgne")


def test_classifiers_and_trackers_are_plugin_kinds() -> None:
    from synbench.core.base import Classifier, Tracker

    assert {"tfidf", "transformer"} <= set(registry.available(Classifier))
    assert {"none", "wandb"} <= set(registry.available(Tracker))
    assert isinstance(registry.create(Classifier, {"_plugin_": "tfidf"}), Classifier)
    assert isinstance(registry.create(Tracker, {"_plugin_": "none"}, spec=None, job_dir=None, group="g"), Tracker)


# --- every named thing is a plugin of a kind with its own group and base ----------------------------------------------


def builtin_kinds() -> list[type[Plugin]]:
    import synbench.api  # noqa: F401  (defines every built-in kind's base class)

    return registry.kinds()


def test_every_plugin_kind_is_one_base_class_with_its_own_group() -> None:
    groups = {kind.__qualname__: kind.entry_point_group for kind in builtin_kinds() if kind.__module__ != __name__}
    assert groups == {
        "Attack": "synbench.attacks",
        "Classifier": "synbench.classifiers",
        "DatasetLoader": "synbench.datasets",
        "Filter": "synbench.filters",
        "Generator": "synbench.generators",
        "LMBackend": "synbench.lm_backends",
        "Metric": "synbench.metrics",
        "ModelAttack": "synbench.model_attacks",
        "Task": "synbench.tasks",
        "Tracker": "synbench.trackers",
    }


@pytest.mark.parametrize("kind", builtin_kinds(), ids=lambda kind: kind.__qualname__)
def test_every_builtin_of_every_kind_loads_and_subclasses_its_base(kind: type[Plugin]) -> None:
    """Tasks, filters, LM backends and model attacks are registry kinds like generators: each built-in loads by name."""
    plugins = registry.available(kind)
    assert plugins, f"no built-in {kind.__qualname__}"
    for name in plugins:
        assert issubclass(registry.load(kind, name), kind)


def test_model_attacks_filters_and_backends_are_their_own_groups() -> None:
    assert set(registry.available(ModelAttack)) >= {"logits", "lira", "rmia"}
    assert not set(registry.available(Attack)) & set(registry.available(ModelAttack))
    assert set(registry.available(Filter)) >= {"none", "pyes_pno"}
    assert set(registry.available(LMBackend)) >= {"local", "openai"}


def test_a_class_that_is_no_plugin_kind_is_refused() -> None:
    with pytest.raises(PluginError, match="'dict' is not a plugin kind: a kind is a subclass of synbench.api.Plugin"):
        registry.available(dict)  # type: ignore[arg-type]


# --- a new plugin kind: one base class and one entry point ----------------------------------------------------------


class Widget(Plugin):
    """A plugin kind the core does not know: nothing but this class names it."""

    entry_point_group = "synbench.test_widgets"

    def turn(self) -> str:
        raise NotImplementedError


class SpinningWidget(Widget):
    def __init__(self, speed: int = 1) -> None:
        self.speed = speed

    def turn(self) -> str:
        return "spin" * self.speed


def test_a_new_plugin_kind_is_one_base_class_and_one_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real installed distribution (a dist-info folder on sys.path) declares one entry point in the new group; the
    registry finds, loads, checks and builds it with no table edited."""
    module = tmp_path / "sb_widget_plugin.py"
    module.write_text("from test_registry import SpinningWidget\n\nSpinner = SpinningWidget\n")
    dist_info = tmp_path / "sb_widget_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: sb-widget-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[synbench.test_widgets]\nspinner = sb_widget_plugin:Spinner\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._scan.cache_clear()

    assert Widget in registry.kinds()
    info = registry.available(Widget)["spinner"]
    assert (info.package, info.version, info.group) == ("sb-widget-plugin", "0.1", "synbench.test_widgets")
    assert registry.load(Widget, "spinner") is SpinningWidget
    widget = registry.create(Widget, {"_plugin_": "spinner", "speed": 2})
    assert widget.turn() == "spinspin"
    with pytest.raises(PluginError, match=r"unknown test_widget plugin 'spiner' \(did you mean 'spinner'\?\)"):
        registry.load(Widget, "spiner")
    assert "spinner" not in registry.available(Generator)  # its group is its own


# --- the `plugins:` key: unpackaged modules register their classes ----------------------------------------------------

LOCAL_FILTER = '''
import numpy as np
from synbench.api import Filter, Selection, register


@register(Filter, "shortest")
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

    from synbench.core.corpus import Corpus
    from synbench.filters import apply_filter

    path = tmp_path / "my_filters.py"
    path.write_text(LOCAL_FILTER)
    with pytest.raises(PluginError, match="unknown filter plugin 'shortest'"):
        registry.load(Filter, "shortest")
    registry.load_modules([str(path)])
    assert registry.available(Filter)["shortest"].package == registry.LOCAL_PACKAGE
    synthetic = Corpus.build(["a much longer text", "short", "mid text"], [["x"], ["x"], ["y"]], ["x", "y"])
    results: dict[str, object] = {}
    scored = apply_filter({"_plugin_": "shortest", "n": 2}, synthetic, tmp_path, results, lambda kept: list(kept.texts))
    assert scored == ["short", "mid text"] and results["filter"]["n_kept"] == 2  # type: ignore[index]
    assert np.load(tmp_path / "filter_scores.npy").tolist() == [18.0, 5.0, 8.0]
    registry.load_modules([str(path)])  # importing twice registers nothing twice


def test_register_refuses_a_wrong_base_a_taken_name_and_a_missing_module(tmp_path, local_plugins: object) -> None:
    from synbench.core.errors import ConfigError
    from synbench.filters.base import NoFilter

    with pytest.raises(PluginError, match="not a subclass of synbench.filters.base.Filter"):
        registry.register(Filter, "bad")(dict)
    with pytest.raises(PluginError, match="registered by module .* and installed by package 'synbench'"):
        registry.register(Filter, "pyes_pno")(NoFilter)
        registry.available(Filter)
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
