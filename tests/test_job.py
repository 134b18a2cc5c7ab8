"""Job identity, folder names and atomic results."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from synbench.core.files import to_json, write_json_atomic
from synbench.job.spec import FOLDER_NAME_LIMIT, job_dirname


def test_job_dirname_is_readable_and_safe() -> None:
    assert job_dirname("") == "defaults"
    assert job_dirname("dataset=mimic,eps=1") == "dataset=mimic,eps=1"
    odd = job_dirname("dataset.train=/data/x y.jsonl")
    assert "/" not in odd and " " not in odd
    assert odd != job_dirname("dataset.train=/data/x_y.jsonl")  # sanitising never merges two jobs
    long = job_dirname("a=" + "x" * 500)
    assert len(long) <= FOLDER_NAME_LIMIT


def test_to_json_makes_strict_json() -> None:
    data = to_json({"a": math.inf, "b": [-math.inf, math.nan], "c": 1.5})
    assert data == {"a": "inf", "b": ["-inf", "nan"], "c": 1.5}
    json.dumps(data, allow_nan=False)


def test_atomic_write_leaves_old_file_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    write_json_atomic(path, {"ok": 1})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"bad": object()})
    assert json.loads(path.read_text()) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("seed=-1", "seed=-1"),
        ("delta=often", "delta='often'"),
        ("accountant=moments", "accountant='moments'"),
    ],
)
def test_every_top_level_key_is_checked_once(override: str, expected: str) -> None:
    from conftest import compose_config
    from synbench.core.errors import ConfigError
    from synbench.job.spec import JobConfig

    with pytest.raises(ConfigError) as err:
        JobConfig.from_config(compose_config([override]))
    assert expected in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("override", "expected"),
    [("eps=abc", "eps: Value 'abc' of type 'str' could not be converted to Float"), ("seed=1.5", "seed: Value '1.5'")],
)
def test_a_top_level_value_of_the_wrong_type_does_not_compose(override: str, expected: str) -> None:
    """The schema types `eps` (a float) and `seed` (an int) as Hydra merges the command line: one line says which."""
    from hydra.errors import ConfigCompositionException

    from conftest import compose_config
    from synbench.core.schema import config_error

    with pytest.raises(ConfigCompositionException) as err:
        compose_config([override])
    assert str(config_error(err.value)).startswith(expected)


def test_the_job_config_carries_every_setting_of_the_schema_typed_and_frozen() -> None:
    """A setting the schema gains reaches the task through JobConfig, or this test names where it goes instead."""
    import dataclasses

    from conftest import compose_config
    from synbench.core.schema import PrivacyOptions, SynBenchConfig
    from synbench.job.spec import JobConfig

    # eps and seed are the spec's (`config.spec.epsilon`, `.seed`); the app loads `plugins` before the job, and
    # `data_root` only feeds the dataset's paths
    elsewhere = {"eps", "seed", "plugins", "data_root"}
    carried = {f.name for f in dataclasses.fields(JobConfig)}
    assert {f.name for f in dataclasses.fields(SynBenchConfig)} - carried == elsewhere
    config = JobConfig.from_config(compose_config(["generator=copy", "eps=2", "privacy.secure_mode=on"]))
    assert isinstance(config.privacy, PrivacyOptions) and config.privacy.secure_mode is True
    assert (
        config.spec.epsilon == 2.0 and config.generator["_plugin_"] == "copy" and isinstance(config.lock_wait_s, float)
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.sweep = "elsewhere"  # type: ignore[misc]
