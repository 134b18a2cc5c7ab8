"""The CLI starts fast: registering the built-ins' schema imports none of them, and `--help` or a refused override
loads no plugin code and no scikit-learn (issue 52; wall times in bench.md, `make bench BENCH=cli_start`)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from hydra._internal.hydra import Hydra
from hydra._internal.utils import create_config_search_path
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode

from conftest import run_app
from synbench.cli.app import known_top_level_keys, mode_without_composing
from synbench.core import schema
from synbench.core.errors import PluginError
from synbench.generators.dpgen.settings import DPGenOptions

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("sklearn", "torch", "transformers", "pandas", "scipy")


# Runs a command in a fresh interpreter and writes, at exit, every module it imported: `-X importtime` would miss
# the modules imported through importlib (the lazy schema nodes, the registry), which are the ones that count here.
PROBE = """
import atexit, json, runpy, sys
out, args = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
if args[0] == "-c":
    exec(args[1])
else:
    sys.argv = ["synbench", *args]
    runpy.run_module("synbench", run_name="__main__")
"""


def imported_modules(tmp_path: Path, *args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules `python -m synbench <args>` (or `python -c <code>`) imports in a fresh process, and the process
    (its exit code and stderr)."""
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return set(json.loads(out.read_text())), done


def plugin_modules() -> set[str]:
    """The modules of SynBench's built-in plugin classes (its entry points), but the job layer's own W&B tracker,
    which the app's job lifecycle imports (without wandb) to run any job."""
    return {
        ep.module
        for group in entry_points().groups
        if group.startswith("synbench.")
        for ep in entry_points(group=group)
        if ep.module.split(".")[0] == "synbench" and not ep.module.startswith("synbench.job.")
    }


def top_packages(modules: set[str]) -> set[str]:
    return {module.split(".")[0] for module in modules}


def test_plugin_modules_are_known() -> None:
    """The check below is not vacuous: the built-ins are found by their entry points."""
    found = plugin_modules()
    assert "synbench.generators.copy" in found and "synbench.metrics.utility" in found and len(found) > 15


def test_importing_the_config_package_imports_no_plugin_and_no_heavy_library(tmp_path: Path) -> None:
    modules, _ = imported_modules(tmp_path, "-c", "import synbench.conf")
    assert "synbench.conf" in modules
    assert not modules & plugin_modules()
    assert not top_packages(modules) & set(HEAVY)


# `eps=1,4`: Hydra refuses a sweep without -m before composing, now that the app does not compose a first time to
# read hydra.mode (`composed_once`)
@pytest.mark.parametrize("args", [["--help"], ["generator=cpy"], ["+epsilon=0.5"], ["eps=1,4"]])
def test_help_and_a_refused_override_load_no_plugin(tmp_path: Path, args: list[str]) -> None:
    modules, done = imported_modules(tmp_path, *args)
    assert "synbench.cli.app" in modules
    assert not modules & plugin_modules(), sorted(modules & plugin_modules())
    assert not top_packages(modules) & set(HEAVY)
    assert args == ["--help"] or "synbench: error:" in done.stderr


def test_an_override_refused_while_composing_loads_no_heavy_library(tmp_path: Path) -> None:
    """Hydra composes the default groups before it refuses a key the generator's schema does not have: their options
    are imported, nothing heavy, and not the generator itself (DP-Gen's torch code)."""
    modules, done = imported_modules(tmp_path, "generator.epoch=3")
    assert "did you mean epochs?" in done.stderr
    assert "synbench.generators.dpgen.settings" in modules  # the node Hydra typed the generator's keys against
    assert not top_packages(modules) & set(HEAVY)
    assert "synbench.generators.dpgen.generator" not in modules


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        (["eps=-1"], ["eps=-1.0 is invalid", "or eps=inf for no DP"]),
        # a task whose module imports torch: the refusal does not import it to word the failure
        (["task=contamination", "eps=-1"], ["eps=-1.0 is invalid", "or eps=inf for no DP"]),
        (["task.n_synthetic=-1"], ["task.n_synthetic=-1 is invalid", "or null for as many documents"]),
        (
            ["dataset=psytar", "dataset.data_dir={missing}"],
            ["dataset.data_dir '{missing}' is not a folder", "set it to the PsyTAR download folder"],
        ),
    ],
    ids=["eps", "eps of a task with torch", "n_synthetic", "data_dir"],
)
def test_a_refused_value_loads_no_heavy_library(tmp_path: Path, overrides: list[str], said: list[str]) -> None:
    """A value refused after Hydra composed the job but before any data is read (the job's own values, then the
    dataset's source) is answered before the task's scoring code (scikit-learn, pandas, scipy) or any torch code is
    imported, and leaves no job folder behind."""
    missing = tmp_path / "missing"  # a folder that does not exist
    output_root = tmp_path / "out"
    args = [arg.format(missing=missing) for arg in overrides]
    modules, done = imported_modules(tmp_path, *args, f"output_root={output_root}")
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("synbench: error:")]
    assert len(errors) == 1 and all(words.format(missing=missing) in errors[0] for words in said), done.stderr
    assert not top_packages(modules) & set(HEAVY), sorted(top_packages(modules) & set(HEAVY))
    assert not any(output_root.rglob("*")), sorted(output_root.rglob("*"))


def test_the_top_level_keys_of_a_config_folder_are_where_hydra_puts_each_file(tmp_path: Path) -> None:
    """A user's config folder (`--config-dir`): a primary config's and a `_global_` file's keys are top-level keys,
    read as YAML (a flow mapping, a quoted key, the defaults list left out); a file of another package adds its first
    part; a group file's keys stay under its group, as does a `@package` line Hydra does not read as the header."""
    (tmp_path / "experiment").mkdir()
    (tmp_path / "mine.yaml").write_text("defaults:\n  - _self_\nprimary_key: 1\n")
    (tmp_path / "experiment" / "flow.yaml").write_text("# @package _global_\n{flow_key: 1, 'quoted key': 2}\n")
    (tmp_path / "experiment" / "placed.yaml").write_text("# @package _global_.placed.deeper\nx: 1\n")
    (tmp_path / "experiment" / "late.yaml").write_text("# a comment first\n# @package _global_\nlate_key: 1\n")
    (tmp_path / "experiment" / "group.yaml").write_text("group_key: 1\n")
    keys = known_top_level_keys((tmp_path,))
    assert {"primary_key", "flow_key", "quoted key", "placed", "experiment", "eps", "hydra"} <= keys
    assert not {"defaults", "deeper", "x", "late_key", "group_key"} & keys


def test_a_node_registered_by_name_is_built_when_first_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ConfigStore.instance(), "repo", {})
    monkeypatch.delitem(sys.modules, "synbench.data.n2c2", raising=False)
    schema.store_plugin("dataset", "lazy_probe", "synbench.data.n2c2:N2C2ObesityDataset")
    assert "synbench.data.n2c2" not in sys.modules
    assert ConfigStore.instance().list("schema/dataset") == ["lazy_probe.yaml"]
    node = ConfigStore.instance().load("schema/dataset/lazy_probe.yaml").node
    assert "synbench.data.n2c2" in sys.modules
    assert node[schema.PLUGIN_KEY] == "lazy_probe" and "train_records" in node


def test_a_store_pickles_with_its_pending_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher (submitit, joblib) pickles Hydra's singletons, the ConfigStore included, for its workers."""
    monkeypatch.setattr(ConfigStore.instance(), "repo", {})
    schema.store_plugin("generator", "lazy_probe", "synbench.generators.dpgen.settings:DPGenOptions")
    copy = pickle.loads(pickle.dumps(ConfigStore.instance().repo))
    assert copy["schema"]["generator"]["lazy_probe.yaml"].node.epochs == DPGenOptions().epochs


def test_a_plugin_class_without_options_is_refused_when_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ConfigStore.instance(), "repo", {})
    schema.store_plugin("generator", "kwargs_probe", f"{__name__}:TakesAnything")
    with pytest.raises(PluginError, match="TakesAnything takes \\*\\*kwargs"):
        ConfigStore.instance().load("schema/generator/kwargs_probe.yaml")


class TakesAnything:
    def __init__(self, **options: object) -> None:
        self.options_given = options


def test_a_job_is_composed_once(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """hydra-core 1.3 composes the whole config a first time only to read hydra.mode (`composed_once`): a key the
    schema refuses is answered after one composition, the job's own."""
    modes: list[RunMode] = []
    compose = Hydra.compose_config

    def counted(self: Hydra, *args: object, **kwargs: object) -> object:
        modes.append(kwargs["run_mode"])  # type: ignore[arg-type]
        return compose(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Hydra, "compose_config", counted)
    done = run_app(["generator.epoch=3"], capfd)
    assert done.code == 2 and "did you mean epochs?" in done.stderr
    assert modes == [RunMode.RUN]


# Runs `python -m synbench <args>` and writes, while Hydra composes the job's config, whether the cyclic collector is
# on and how many objects it holds frozen
GC_PROBE = """
import gc, json, runpy, sys
from hydra._internal.hydra import Hydra
out, args = sys.argv[1], sys.argv[2:]
compose = Hydra.compose_config
def composing(self, *a, **k):
    open(out, "w").write(json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}))
    return compose(self, *a, **k)
Hydra.compose_config = composing
sys.argv = ["synbench", *args]
runpy.run_module("synbench", run_name="__main__")
"""


def test_the_imported_modules_are_frozen_out_of_the_collectors_reach(tmp_path: Path) -> None:
    """`python -m synbench` imports the app with the cyclic collector off and freezes what the import made
    (`synbench.__main__`): Hydra's composition then runs with the collector on, never walking those objects."""
    out = tmp_path / "gc.json"
    done = subprocess.run(
        [sys.executable, "-c", GC_PROBE, str(out), "generator.epoch=3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "did you mean epochs?" in done.stderr
    state = json.loads(out.read_text())
    assert state["enabled"] and state["frozen"] > 10_000, state  # tens of thousands: Hydra, OmegaConf, SynBench


def test_importing_synbench_imports_no_numpy_and_no_progress_bar(tmp_path: Path) -> None:
    """`import synbench` (the core types) loads what it defines, not numpy; the progress meters (which every metric's
    module imports, so every composition) not tqdm, whose `auto` bar imports asyncio: both are imported where used."""
    modules, _ = imported_modules(tmp_path, "-c", "import synbench, synbench.core.progress")
    assert {"synbench.core.base", "synbench.core.progress"} <= modules
    assert not top_packages(modules) & {"numpy", "tqdm", "asyncio", *HEAVY}


def test_the_mode_is_read_from_the_command_line_else_the_primary_config_without_composing(tmp_path: Path) -> None:
    (tmp_path / "sweeps.yaml").write_text("defaults:\n  - missing_group: nowhere\nhydra:\n  mode: MULTIRUN\n")
    (tmp_path / "plain.yaml").write_text("a: 1\n")
    (tmp_path / "broken.yaml").write_text("a: [1\n")
    hydra = Hydra.create_main_hydra2(task_name="probe", config_search_path=create_config_search_path(str(tmp_path)))
    try:
        # the primary config's own value, though its defaults list names a group no folder has (nothing composed)
        assert mode_without_composing(hydra, "sweeps", []) == RunMode.MULTIRUN
        assert mode_without_composing(hydra, "sweeps", ["hydra.mode=RUN"]) == RunMode.RUN
        assert mode_without_composing(hydra, "plain", ["a=2", "hydra.mode=MULTIRUN"]) == RunMode.MULTIRUN
        assert mode_without_composing(hydra, "plain", []) is None  # the -m flag decides
        assert mode_without_composing(hydra, None, []) is None
        assert mode_without_composing(hydra, "plain", ["hydra.mode=SOMETIMES"]) is None  # composing refuses it
        assert mode_without_composing(hydra, "broken", []) is None  # and names the file that does not parse
    finally:
        GlobalHydra.instance().clear()
