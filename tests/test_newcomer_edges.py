"""A newcomer's first slips, through the app's entry point as tests/test_bad_inputs.py runs it: a comma list
without `-m` says to add `-m`; a key a plugin's node does not have names the nearest one it has, in one line; a
job the checks refuse leaves no folder behind (one that started and failed keeps its record)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_app
from test_bad_inputs import command, inputs, no_key  # noqa: F401  (`inputs`: the battery's files, a fixture)


def one_error_line(case: list[str], paths: dict[str, Path], capfd: pytest.CaptureFixture[str]) -> str:
    """The one `synbench: error:` line the case ends with (a non-zero exit, no traceback)."""
    outcome = run_app(command(case, paths), capfd)
    everything = outcome.stdout + outcome.stderr
    assert outcome.code != 0 and "Traceback" not in everything and len(outcome.errors) == 1, everything
    return outcome.errors[0]


def job_folders(out: Path) -> list[Path]:
    """The job folders under `out`: each holds Hydra's copy of its config."""
    return sorted(hydra.parent for hydra in out.rglob(".hydra")) if out.exists() else []


def test_a_comma_list_without_m_says_to_add_m(inputs: dict[str, Path], capfd: pytest.CaptureFixture[str]) -> None:
    line = one_error_line(["eps=1,4"], inputs, capfd)
    assert "eps=1,4 gives several values, which only a sweep runs" in line
    assert "add -m first, python -m synbench -m eps=1,4" in line and "Ambiguous" not in line
    assert not job_folders(inputs["out"])


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # a node typed by its options dataclass, the key set as Hydra overrides it
        (["generator=dpgen", "generator.epoch=3"], "Key 'epoch' not in 'DPGenOptions' (did you mean epochs?)"),
        # a third party's plugin, typed by its constructor
        (["generator=example", "generator.max_tokens_per_dok=3"], "(did you mean max_tokens_per_doc?)"),
        # the key appended with +, refused when the plugin is built
        (
            ["generator=example", "+generator.max_tokens_per_dok=3"],
            "generator plugin 'example' does not take 'max_tokens_per_dok' (did you mean max_tokens_per_doc?)",
        ),
    ],
    ids=["generator.epoch", "a plugin's own option", "+ a plugin's own option"],
)
def test_an_unknown_key_of_a_plugin_names_the_nearest_in_one_line(
    case: list[str], expected: str, inputs: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    line = one_error_line(case, inputs, capfd)
    assert expected in line and ".;" not in line, line


@pytest.mark.parametrize(
    "case",
    [["eps=0"], ["delta=1.5"], ["cache_dir=/tmp/elsewhere"], ["hydra.run.dir={folder}/elsewhere"]],
    ids=["eps=0", "delta=1.5", "cache_dir outside", "the job folder outside output_root"],
)
def test_a_refused_job_leaves_no_folder(
    case: list[str],
    inputs: dict[str, Path],
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    no_key(monkeypatch, tmp_path)
    one_error_line(case, inputs, capfd)
    assert not job_folders(inputs["out"]) and not (inputs["folder"] / "elsewhere").exists()


def test_a_refused_job_keeps_a_folder_that_holds_an_earlier_run(
    inputs: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    earlier = inputs["out"] / "kept" / "results.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text('{"status": "complete"}')
    one_error_line(["hydra.run.dir={out}/kept", "eps=0"], inputs, capfd)
    assert json.loads(earlier.read_text()) == {"status": "complete"}


def test_a_job_that_started_and_failed_keeps_its_record(
    inputs: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    """Not a refusal: the plugin raised while the job ran, so its folder holds the failed results.json a re-run
    and the sweep's table read."""
    one_error_line(["plugins=[{plugin}]", "generator._plugin_=raising"], inputs, capfd)
    [folder] = job_folders(inputs["out"])
    assert json.loads((folder / "results.json").read_text())["status"] == "failed"
