"""What ran, by name: results.json's `generator_name`, the report's rows, and job folders a person can read.

A grid variant (`generator=dpgen_grid`) is named by its config option, not
its plugin (`dpgen`); a program run through `generator=command` by its
`generator.name`, by default its file name's stem; and a command job's folder
shows the program's file name, not a hashed absolute path.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from conftest import FIXTURES, reviews_dataset, run_app
from synbench.core.errors import ConfigError
from synbench.generators.command import CommandGenerator, program_name
from synbench.job.results import new_results
from synbench.job.spec import JobConfig, job_dirname
from synbench.report.build import write_report
from test_report import md_tables

HONEST = FIXTURES / "command" / "honest_generator.py"


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["python", "/abs/path/copier.py", "{spec}", "{out}"], "copier"),
        (["./copier", "{spec}", "{out}"], "copier"),
        (["python", "-u", "my-gen.v2.py", "--spec", "{spec}", "--out", "{out}"], "my-gen.v2"),
        (["python", "-c", "import sys; print(sys.argv)", "{spec}", "{out}"], "python"),  # code never names a run
        (["/opt/gen/run one.sh", "{spec}"], "run_one"),
    ],
)
def test_a_command_is_named_by_its_programs_file_name(command: list[str], name: str) -> None:
    assert program_name(command) == name
    assert CommandGenerator(command).name == name
    assert CommandGenerator(command, name="mine").name == "mine"


def test_a_name_that_cannot_label_a_run_is_refused() -> None:
    for bad in ("", "a/b", "two words", "_hidden"):
        with pytest.raises(ConfigError, match=r"generator.name=.* letters, digits and \. _ - \+"):
            CommandGenerator(["gen", "{spec}"], name=bad)


def compose_job(overrides: list[str]) -> tuple[JobConfig, JobConfig]:
    """The job of `overrides` as the app builds it (with Hydra's choices) and as a test without a Hydra run does."""
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        choices = compose(config_name="config", overrides=overrides, return_hydra_config=True).hydra.runtime.choices
        cfg = compose(config_name="config", overrides=overrides)  # as a job gets it: Hydra's own node removed
    return JobConfig.from_config(cfg, choices=choices), JobConfig.from_config(cfg)


def test_a_grid_variant_is_named_by_its_config_option_and_keeps_its_key() -> None:
    in_app, without_hydra = compose_job(["generator=dpgen_grid", "eps=4"])
    assert (in_app.spec.generator, in_app.spec.generator_name) == ("dpgen", "dpgen_grid")
    assert new_results(in_app.spec)["generator_name"] == "dpgen_grid"
    assert without_hydra.spec.generator_name == "dpgen"  # no Hydra run: the plugin's name
    assert in_app.spec.key == without_hydra.spec.key  # the name labels the job; it is not part of its identity
    plain, _ = compose_job(["generator=dpgen", "eps=4"])
    assert plain.spec.generator_name == "dpgen" and plain.spec.key != in_app.spec.key


def test_a_command_jobs_name_is_in_its_config() -> None:
    command = f"generator.command=[python,{HONEST},'{{spec}}','{{out}}']"
    job, _ = compose_job(["generator=command", command])
    assert job.spec.generator_name == "honest_generator" and job.generator["name"] == "honest_generator"
    named, _ = compose_job(["generator=command", command, "generator.name=honest_b"])
    assert named.spec.generator_name == "honest_b" and named.spec.key != job.spec.key


def test_a_command_jobs_folder_shows_its_program_and_stays_unique() -> None:
    def folder(program: str) -> str:
        return job_dirname(
            f"eps=4,generator.command=[/usr/bin/python3,{program},'{{spec}}','{{out}}'],generator=command"
        )

    first, second = folder("/home/a/copier.py"), folder("/home/b/copier.py")
    assert first.startswith("eps=4,generator.command=_python3,copier.py,_spec_,_out__,generator=command-")
    assert first != second and "/" not in first + second  # same file name, other folder: another job
    assert job_dirname("dataset.train=/data/train.jsonl,eps=1").startswith("dataset.train=train.jsonl,eps=1-")
    assert job_dirname("dataset=mimic,eps=1") == "dataset=mimic,eps=1"  # nothing to shorten: no digest


@pytest.fixture
def reviews(tmp_path: Path) -> list[str]:
    """A 60-document, two-label dataset of short reviews."""
    words = "good bad dose pain sleep tablet headache better worse night day week".split()
    rows = [
        {"text": " ".join(words[(i + k) % 12] for k in range(8)), "label": ["pos" if i % 2 else "neg"]}
        for i in range(80)
    ]
    return [
        *reviews_dataset(tmp_path, rows),
        "metrics=[utility]",
        "tracking=none",
        "sweep=names",
        f"output_root={tmp_path / 'out'}",
        "eps=2",
    ]


@pytest.mark.slow
def test_two_programs_are_two_generators_in_results_folders_and_report(
    tmp_path: Path, reviews: list[str], capfd: pytest.CaptureFixture[str]
) -> None:
    """The same program from two folders, the second named on the command line, and a copy under another file
    name, each run by the app: three results named apart, three readable folders, three rows of the report."""
    copies = tmp_path / "elsewhere"
    copies.mkdir()
    same_stem, other = copies / HONEST.name, copies / "paraphraser.py"
    for target in (same_stem, other):
        shutil.copy(HONEST, target)
    runs = {
        "honest_generator": (HONEST, []),
        "honest_b": (same_stem, ["generator.name=honest_b"]),
        "paraphraser": (other, []),
    }
    for script, extra in runs.values():
        command = f"generator.command=[{sys.executable},{script},'{{spec}}','{{out}}']"
        logs = f"generator.log_dir={tmp_path / 'logs'}"
        outcome = run_app([*reviews, "generator=command", command, logs, *extra], capfd)
        assert outcome.code == 0, outcome.stderr
    sweep = tmp_path / "out" / "names"
    jobs = {path.parent.name: json.loads(path.read_text()) for path in sweep.rglob("results.json")}
    assert sorted(r["generator_name"] for r in jobs.values()) == sorted(runs)
    assert all(r["generator"] == "command" and r["status"] == "complete" for r in jobs.values())
    for folder, results in jobs.items():
        program = runs[results["generator_name"]][0].name
        assert f"generator.command=_python,{program},_spec_,_out__," in folder, folder
    markdown, _ = write_report(sweep, 0.95)
    rows = md_tables(markdown.read_text())["reviews: utility and fidelity"]
    assert {key for key in rows if not key.startswith("*") and key != "header"} == {f"{name} 2" for name in runs}


def test_the_app_names_a_variant_by_the_option_the_command_line_picked(
    tmp_path: Path, reviews: list[str], capfd: pytest.CaptureFixture[str]
) -> None:
    """A user's variant of the copy control, from a config folder of their own, run by the app: its results name the
    option (`copy_all`), beside the plugin that ran (`copy`)."""
    variants = tmp_path / "conf" / "generator"
    variants.mkdir(parents=True)
    (variants / "copy_all.yaml").write_text("defaults:\n  - copy\n  - _self_\n")
    single = [arg for arg in reviews if arg != "eps=2"]  # a single job of a control runs at eps=inf
    outcome = run_app([f"--config-dir={tmp_path / 'conf'}", *single, "generator=copy_all", "eps=inf"], capfd)
    assert outcome.code == 0, outcome.stderr
    (path,) = (tmp_path / "out" / "names").rglob("results.json")
    results = json.loads(path.read_text())
    assert (results["generator"], results["generator_name"]) == ("copy", "copy_all")
