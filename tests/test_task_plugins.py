"""A new task and a new LM backend, each added by one class, one YAML file and one entry point.

The fixture is a package as a third party would ship it, made on disk: a
module (importing only `synbench.api`), its config folder, and a
`.dist-info` folder with the entry points, put on `PYTHONPATH`. Nothing in
SynBench lists tasks or backends, so the jobs below find them by name.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

from conftest import compose_config, run_cli
from synbench.core import registry
from synbench.job.release import ReleaseError
from synbench.job.spec import JobConfig
from synbench.tasks import get_task
from synbench.tasks.base import Task

MODULE = '''
from synbench.api import LMBackend, Task


class CountTask(Task):
    """Counts the splits: the smallest job task (its sections and generation keys declared, no report table)."""

    results_sections = frozenset({"counts"})
    generation_fields = frozenset({"n_private", "n_eval"})
    report_section = None

    def body(self, job):
        splits = job.load_splits()
        job.record_release(splits, generation={"n_private": len(splits.train), "n_eval": len(splits.eval)})
        job.results["counts"] = {"labels": len(splits.eval.label_space)}


class EchoBackend(LMBackend):
    """Answers each request with its prefix and the request's first words (no model)."""

    def __init__(self, prefix: str = "echo") -> None:
        self.prefix, self.name = prefix, f"echo-{prefix}"

    def complete(self, requests, *, max_new_tokens, temperature, top_p, seed):
        return [f"{self.prefix} " + " ".join(r.user.split()[:6]) for r in requests]
'''
ENTRY_POINTS = """[synbench.tasks]
count = sbfixture.plugins:CountTask

[synbench.lm_backends]
echo = sbfixture.plugins:EchoBackend
"""


@pytest.fixture()
def fixture_package(tmp_path: Path) -> Path:
    """The folder to put on PYTHONPATH: the package (its module, and its two YAML files in the `conf` folder beside
    it) and its entry points, one per class."""
    site = tmp_path / "site"
    conf = site / "sbfixture" / "conf"
    (conf / "task").mkdir(parents=True)
    (conf / "generator" / "backend").mkdir(parents=True)
    (site / "sbfixture" / "__init__.py").write_text("")
    (site / "sbfixture" / "plugins.py").write_text(MODULE)
    (conf / "task" / "count.yaml").write_text("name: count\n")
    (conf / "generator" / "backend" / "echo.yaml").write_text("_plugin_: echo\nprefix: hello\n")
    dist = site / "sbfixture-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sbfixture\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    return site


@pytest.fixture()
def installed(fixture_package: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fixture package on `sys.path` of this process (and on PYTHONPATH for jobs run as subprocesses)."""
    import synbench.cli.app  # noqa: F401  (registers the search-path plugin that finds the package's conf folder)

    monkeypatch.syspath_prepend(str(fixture_package))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(fixture_package), os.environ.get("PYTHONPATH")]))
    )
    registry._scan.cache_clear()
    yield fixture_package
    for name in ("sbfixture.plugins", "sbfixture"):
        sys.modules.pop(name, None)
    registry._scan.cache_clear()


def run_job(overrides: list[str], job_dir: Path) -> dict:
    """The job the overrides compose, run in this process as the app runs it (its task found by name)."""
    cfg = compose_config(overrides)
    get_task(str(cfg.task.name)).run(JobConfig.from_config(cfg), job_dir)
    return json.loads((job_dir / "results.json").read_text())


def test_a_new_task_runs_writes_its_declared_sections_and_the_report_reads_them(
    installed: Path, tmp_path: Path, tiny_dataset: list[str]
) -> None:
    from synbench.report.build import write_report

    assert registry.available(Task)["count"].package == "sbfixture"
    sweep = tmp_path / "s"
    results = run_job(
        ["task=count", "generator=copy", *tiny_dataset, "tracking=none", f"output_root={tmp_path}"],
        sweep / "count" / "j",
    )
    assert results["status"] == "complete" and results["counts"] == {"labels": 2}
    assert results["generation"] == {"n_private": 30, "n_eval": 10} and results["report_section"] is None
    markdown, _ = write_report(sweep, 0.95)
    report = markdown.read_text()
    assert "by task: count (1)" in report and "Complete results of task(s) count are counted above" in report


def test_a_task_writing_an_undeclared_section_fails_its_job(
    installed: Path, tmp_path: Path, tiny_dataset: list[str]
) -> None:
    module = installed / "sbfixture" / "plugins.py"
    module.write_text(module.read_text().replace('frozenset({"counts"})', "frozenset()"))
    with pytest.raises(ReleaseError, match="outside the release allow-list: counts"):
        run_job(
            ["task=count", "generator=copy", *tiny_dataset, "tracking=none", f"output_root={tmp_path}"],
            tmp_path / "job",
        )
    assert json.loads((tmp_path / "job" / "results.json").read_text())["status"] == "failed"


def test_a_new_lm_backend_is_picked_by_its_yaml(installed: Path) -> None:
    from omegaconf import OmegaConf

    from synbench.core.base import ChatRequest
    from synbench.lm.backends import make_backend

    node = OmegaConf.to_container(compose_config(["generator=augpe", "generator/backend=echo"]).generator, resolve=True)
    assert node["backend"] == {"_plugin_": "echo", "prefix": "hello"}
    backend = make_backend(node["backend"], node["model"])
    replies = backend.complete(
        [ChatRequest("write a review of a drug")], max_new_tokens=8, temperature=1.0, top_p=1.0, seed=0
    )
    assert type(backend).__name__ == "EchoBackend" and replies == ["hello write a review of a drug"]


@pytest.mark.slow
def test_both_from_the_command_line_and_aug_pe_on_the_new_backend(
    installed: Path, tmp_path: Path, tiny_dataset: list[str]
) -> None:
    """The jobs a user starts: `task=plugins` lists both, and AUG-PE runs through the echo backend."""
    out = tmp_path / "out"
    listing = run_cli(["task=plugins", f"output_root={out}"], cwd=tmp_path).stdout
    assert f"{'count':<16} sbfixture" in listing and f"{'echo':<16} sbfixture" in listing
    run_cli(
        [
            "generator=augpe",
            "generator/backend=echo",
            *tiny_dataset,
            "eps=inf",
            "metrics=[length]",
            "generator.population=8",
            "generator.iterations=1",
            "generator.variations=2",
            "task.n_synthetic=6",
            "tracking=none",
            f"output_root={out}",
        ],
        cwd=tmp_path,
    )
    [path] = list(out.rglob("results.json"))
    results = json.loads(path.read_text())
    assert results["status"] == "complete" and results["generation"]["backend"] == "echo-hello"
    texts = [json.loads(line)["text"] for line in next(out.rglob("synthetic.jsonl")).read_text().splitlines()]
    assert len(texts) == 6 and all(t.startswith("hello") for t in texts)
