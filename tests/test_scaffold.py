"""`task=new_plugin`: the scaffolded package installs, registers, runs in a job and passes its own kit test.

Each test scaffolds under a unique plugin name and uninstalls what it
installed, so no other test sees the package.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from conftest import run_cli
from synbench.core.errors import ConfigError
from synbench.tasks.new_plugin import scaffold, template_values


def unique_name(kind: str) -> str:
    return f"sb{kind[:3]}{uuid.uuid4().hex[:8]}"


@contextmanager
def installed(packages: dict[str, Path]) -> Iterator[None]:
    """Scaffolded packages (distribution name -> folder) pip-installed, editable, until the block ends."""
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-build-isolation", *(f"-e{f}" for f in packages.values())],
        check=True,
        capture_output=True,
        text=True,
    )
    try:
        yield
    finally:
        subprocess.run([*pip, "uninstall", "-y", *packages], check=True, capture_output=True, text=True)


def results_of(root: Path) -> dict:
    [path] = list(root.rglob("results.json"))
    return json.loads(path.read_text())


def run_own_tests(*folders: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *(str(f / "tests") for f in folders)],
        capture_output=True,
        text=True,
        cwd=folders[0].parent,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.slow
def test_a_scaffolded_generator_installs_registers_runs_and_passes_its_test(
    tmp_path: Path, tiny_dataset: list[str]
) -> None:
    name = unique_name("generator")
    dest = tmp_path / "pkg"
    out = run_cli(
        [
            "task=new_plugin",
            "plugin.kind=generator",
            f"plugin.name={name}",
            f"plugin.dest={dest}",
            f"output_root={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    ).stdout
    assert f"pip install -e {dest}" in out
    package = f"synbench_{name}"
    assert (dest / package / "conf" / "generator" / f"{name}.yaml").read_text().count(f"_plugin_: {name}") == 1
    dist = template_values("generator", name)["dist"]
    with installed({dist: dest}):
        listing = run_cli(["task=plugins", f"output_root={tmp_path / 'out'}"], cwd=tmp_path).stdout.splitlines()
        rows = [line.split() for line in listing if line.split()[:2] == [name, dist]]
        assert [row[-1] for row in rows] == [f"{package}.generator:{template_values('generator', name)['class_name']}"]
        # its one entry point is the class: the config folder is found beside it
        assert [dist, str(dest / package / "conf")] in [line.split() for line in listing]
        assert "synbench.conf" not in (dest / "setup.cfg").read_text()
        run_cli(
            [
                *tiny_dataset,
                f"generator={name}",
                "eps=4",
                "tracking=none",
                "metrics=[]",
                f"output_root={tmp_path / 'jobs'}",
            ],
            cwd=tmp_path,
        )
        results = results_of(tmp_path / "jobs")
        assert results["status"] == "complete" and results["generator"] == name
        assert 0 < results["epsilon_spent"] <= 4 * (1 + 1e-6)
        assert results["generation"]["n_synthetic"] == 30 and results["generation"]["mechanisms"] == 2
        run_own_tests(dest)


@pytest.mark.slow
def test_scaffolded_metric_attack_and_dataset_pass_their_tests_and_run(tmp_path: Path, tiny_dataset: list[str]) -> None:
    names = {kind: unique_name(kind) for kind in ("metric", "attack", "dataset")}
    for kind, name in names.items():
        run_cli(
            [
                "task=new_plugin",
                f"plugin.kind={kind}",
                f"plugin.name={name}",
                f"plugin.dest={tmp_path / kind}",
                f"output_root={tmp_path / 'out'}",
            ],
            cwd=tmp_path,
        )
    with installed({template_values(kind, name)["dist"]: tmp_path / kind for kind, name in names.items()}):
        run_own_tests(*(tmp_path / kind for kind in names))
        data = next(arg.split("=", 1)[1] for arg in tiny_dataset if arg.startswith("dataset.train="))
        run_cli(
            [
                f"dataset={names['dataset']}",
                f"dataset.path={data}",
                "dataset.label_space=[pos,neg]",
                "generator=copy",
                "eps=inf",
                "tracking=none",
                f"metrics=[{names['metric']}]",
                f"output_root={tmp_path / 'jobs'}",
            ],
            cwd=tmp_path,
        )
        results = results_of(tmp_path / "jobs")
        assert results["status"] == "complete" and results["dataset"] == names["dataset"]
        assert 0 < results["fidelity"][f"{names['metric']}_overlap"] <= 1
        audit = run_cli(["task=audit", f"attack={names['attack']}", "--cfg", "job"], cwd=tmp_path).stdout
        assert f"_plugin_: {names['attack']}" in audit


@pytest.mark.parametrize(
    "kind, name, fragment",
    [
        ("generator", "MyGen", "lowercase Python identifier"),
        ("generator", "1gen", "lowercase Python identifier"),
        ("generator", "class", "lowercase Python identifier"),
        ("generator", None, "lowercase Python identifier"),
        ("generator", "copy", "already registered by package 'synbench'"),
        ("classifier", "mine", "choose one of attack, dataset, generator, metric"),
    ],
)
def test_bad_requests_are_config_errors(tmp_path: Path, kind: str, name: str | None, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        scaffold(kind, name, tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_an_existing_folder_is_never_overwritten(tmp_path: Path) -> None:
    dest = tmp_path / "taken"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    proc = run_cli(
        ["task=new_plugin", "plugin.name=fresh", f"plugin.dest={dest}", f"output_root={tmp_path / 'out'}"],
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 2
    assert f"plugin.dest={dest} already exists" in proc.stderr and "plugin.dest=..." in proc.stderr
    assert [p.name for p in dest.iterdir()] == ["notes.txt"]
    assert len(scaffold("generator", "fresh", tmp_path / "empty")) > 0  # an empty or new folder is fine
