"""`task=prepare` never loses work: a prepared folder of one release is never replaced by another's without
`task.overwrite=true`, two jobs of one sweep never share a folder, a prepared file changed afterwards is refused when
it is read, and every prepare, complete or failed, leaves its record.

The releases are the fabricated MIMIC-III folders of `release_fixtures` (the publisher's file and column names,
gzipped as PhysioNet ships them); every text in them is made up.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

import release_fixtures
from conftest import compose_config, run_cli
from synbench.core import registry
from synbench.core.base import DatasetLoader, Splits
from synbench.core.errors import ConfigError, DataError
from synbench.core.keyed import SECRET_ENV
from synbench.data.prepared import MANIFEST_FILE, scan
from synbench.job.record import HEADER
from synbench.tasks.prepare import prepare

# a second release of the same dataset: the same admissions with other discharge summaries
OTHER_SUMMARIES = [
    f"Discharge summary {i}: a second release's made-up text." for i in range(len(release_fixtures.ADMISSIONS))
]


def node(option: str, *overrides: str) -> dict[str, Any]:
    """The dataset's config node as a job gets it (`dataset=<option>` with `overrides`)."""
    built = OmegaConf.to_container(compose_config([f"dataset={option}", *overrides]).dataset, resolve=True)
    assert isinstance(built, dict)
    return built


def loader(option: str, *overrides: str) -> DatasetLoader:
    return registry.create(DatasetLoader, node(option, *overrides))


def prepared_from(release: Path, out: Path, **options: Any) -> Path:
    """Prepare the MIMIC release in `release` under `out` in this process (what `task=prepare` runs); its folder."""
    config = node("mimic", f"dataset.data_dir={release}")
    prepare(registry.create(DatasetLoader, config), config, 0, out, **{"overwrite": False, **options})
    return out / "mimic"


def read_back(folder: Path) -> Splits:
    """The prepared files read back as the paper experiments read them (`dataset.train` / `dataset.eval`)."""
    return loader("mimic", f"dataset.train={folder / 'train.jsonl'}", f"dataset.eval={folder / 'test.jsonl'}").load(0)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def job_results(out: Path, data_dir: Path, overwrite: bool = False) -> dict[str, Any]:
    """The results.json of the prepare job of the release `data_dir` (its description names it and `overwrite`)."""
    found = [
        results
        for results in (json.loads(p.read_text()) for p in (out / "default" / "prepare").glob("*/results.json"))
        if results["config"]["dataset"]["data_dir"] == str(data_dir)
        and results["config"]["task"]["overwrite"] == overwrite
    ]
    assert len(found) == 1, found
    return found[0]


def cli(out: Path, release: Path | str, *extra: str, check: bool = True) -> Any:
    return run_cli(
        ["task=prepare", "dataset=mimic", f"dataset.data_dir={release}", f"output_root={out}", *extra],
        cwd=out.parent,
        check=check,
    )


# --- a second release --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_release_is_refused_and_the_first_kept_until_overwrite_and_every_job_has_its_record(
    tmp_path: Path,
) -> None:
    first = release_fixtures.write_mimic(tmp_path / "a" / "mimic-iii-clinical-database-1.4")
    second = release_fixtures.write_mimic(tmp_path / "b" / "mimic-iii-clinical-database-1.4", summaries=OTHER_SUMMARIES)
    out = tmp_path / "out"
    folder = out / "prepared" / "mimic"
    cli(out, first)
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    assert manifest["source"]["data_dir"] == str(first.resolve()) and manifest["source"]["split_seed"] == 0
    assert manifest["source_revision"] is None  # a local release
    assert set(manifest["files"]) == {"train.jsonl", "test.jsonl"}
    kept = snapshot(folder)
    done = job_results(out, first)
    assert done["status"] == "complete" and done["prepare"] == {"folder": str(folder.resolve())}
    written = json.dumps(done)  # no count and no digest of the manifest's: the folder's path only
    assert set(done) - set(HEADER) == {"prepare"} and done["generation"] == {} and '"documents"' not in written
    assert not any(entry["digest"] in written for entry in manifest["files"].values())

    refused = cli(out, second, check=False)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("synbench: error:")]
    assert refused.returncode == 2 and len(errors) == 1
    assert str(Path("out") / "prepared" / "mimic") in errors[0] or str(folder) in errors[0]
    assert "dataset.data_dir" in errors[0] and "task.overwrite=true" in errors[0] and "task.out_dir" in errors[0]
    assert snapshot(folder) == kept  # the first release's files and manifest, byte for byte
    failed = job_results(out, second)
    assert failed["status"] == "failed" and failed["error"]["type"] == "ConfigError" and "prepare" not in failed

    cli(out, second, "task.overwrite=true")
    assert json.loads((folder / MANIFEST_FILE).read_text())["source"]["data_dir"] == str(second.resolve())
    assert read_back(folder).train.texts == loader("mimic", f"dataset.data_dir={second}").load(0).train.texts
    assert job_results(out, second, overwrite=True)["status"] == "complete"

    again = snapshot(folder)
    cli(out, second)  # the same release and config: prepared again in place, no overwrite needed
    assert snapshot(folder) == again
    assert job_results(out, second)["status"] == "complete"  # run anew: the failed record replaced
    for text in (json.dumps(job_results(out, second)), (folder / MANIFEST_FILE).read_text(), refused.stderr):
        assert release_fixtures.SECRET not in text and "admission-" not in text


def test_a_failed_prepare_records_its_error_and_leaves_no_folder(tmp_path: Path) -> None:
    """The reader's check of its source (a release folder without NOTEEVENTS) refuses the job before it starts: one
    line naming the file and the key, and no job folder, results.json or prepared folder left behind."""
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    proc = cli(out, empty, check=False)
    assert proc.returncode == 2
    assert "NOTEEVENTS.csv.gz" in proc.stderr and "dataset.notes_file" in proc.stderr
    assert not list(out.rglob("results.json")) and not (out / "prepared" / "mimic").exists()


def test_another_source_that_lands_while_a_prepare_reads_is_refused_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two jobs started together on one folder (a parallel launcher): the one that finishes second finds the other's
    folder, not the one it checked, and refuses it even with overwrite."""
    first = release_fixtures.write_mimic(tmp_path / "a")
    second = release_fixtures.write_mimic(tmp_path / "b", summaries=OTHER_SUMMARIES)
    out = tmp_path / "out"
    config = node("mimic", f"dataset.data_dir={first}")
    dataset = registry.create(DatasetLoader, config)
    read = dataset.load

    def load_while_another_job_publishes(seed: int) -> Splits:
        prepared_from(second, out)
        return read(seed)

    monkeypatch.setattr(dataset, "load", load_while_another_job_publishes)
    with pytest.raises(ConfigError, match=r"prepared from another source \(it differs in dataset.data_dir\)"):
        prepare(dataset, config, 0, out, overwrite=True)
    assert json.loads((out / "mimic" / MANIFEST_FILE).read_text())["source"]["data_dir"] == str(second.resolve())
    assert read_back(out / "mimic").train.texts == loader("mimic", f"dataset.data_dir={second}").load(0).train.texts


# --- a sweep -----------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_jobs_of_a_sweep_never_share_a_prepared_folder(tmp_path: Path) -> None:
    first = release_fixtures.write_mimic(tmp_path / "a")
    second = release_fixtures.write_mimic(tmp_path / "b", summaries=OTHER_SUMMARIES)
    out = tmp_path / "out"
    sweep = ["-m", "task=prepare", "dataset=mimic", f"dataset.data_dir={first},{second}", f"output_root={out}"]
    proc = run_cli(sweep, cwd=tmp_path, check=False)
    assert proc.returncode != 0 and "1 of 2 job(s) did not complete" in proc.stdout + proc.stderr
    outcomes = {release: job_results(out, release) for release in (first, second)}
    assert sorted(r["status"] for r in outcomes.values()) == ["complete", "failed"]
    (kept,) = [release for release, results in outcomes.items() if results["status"] == "complete"]
    (refused,) = [results for results in outcomes.values() if results["status"] == "failed"]
    assert "dataset.data_dir" in refused["error"]["message"]
    folder = out / "prepared" / "mimic"
    assert json.loads((folder / MANIFEST_FILE).read_text())["source"]["data_dir"] == str(kept.resolve())
    assert read_back(folder).train.texts == loader("mimic", f"dataset.data_dir={kept}").load(0).train.texts

    # overwrite, which would let the later job replace the earlier one's folder, is refused in a sweep
    proc = run_cli([*sweep, f"output_root={tmp_path / 'out2'}", "task.overwrite=true"], cwd=tmp_path, check=False)
    assert proc.returncode != 0 and "2 of 2 job(s) did not complete" in proc.stdout + proc.stderr
    assert "task.overwrite=true replaces a prepared folder" in proc.stdout + proc.stderr
    assert not (tmp_path / "out2" / "prepared").exists()


# --- reading a prepared folder -----------------------------------------------------------------------------------


def test_a_prepared_file_edited_afterwards_is_refused_and_preparing_again_fixes_it(tmp_path: Path) -> None:
    release = release_fixtures.write_mimic(tmp_path / "mimic-iii-clinical-database-1.4")
    folder = prepared_from(release, tmp_path / "prepared")
    train = folder / "train.jsonl"
    assert read_back(folder).train.texts == loader("mimic", f"dataset.data_dir={release}").load(0).train.texts

    lines = train.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = json.loads(lines[0])
    edited["text"] = edited["text"].replace("stable", "stabel")  # one letter, the number of documents unchanged
    train.write_text(json.dumps(edited) + "\n" + "".join(lines[1:]), encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_back(folder)
    message = str(caught.value)
    assert "\n" not in message and str(train) in message and "differs from the file task=prepare wrote" in message
    assert "run task=prepare for dataset 'mimic' again" in message and str(folder / MANIFEST_FILE) in message
    assert "stabel" not in message and release_fixtures.SECRET not in message

    train.write_text("".join(lines[1:]), encoding="utf-8")  # a document removed
    with pytest.raises(DataError, match=r"does not hold the number of documents .* lists for its split"):
        read_back(folder)

    prepared_from(release, tmp_path / "prepared")  # the same source: prepared again, no overwrite needed
    assert read_back(folder).train.texts == loader("mimic", f"dataset.data_dir={release}").load(0).train.texts


def test_the_digest_is_keyed_and_another_users_files_are_checked_by_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Under another secret (another user, another machine) the digest cannot be checked: a warning says so and the
    document counts still are. The digest itself is no plain hash of the file."""
    import hashlib

    release = release_fixtures.write_mimic(tmp_path / "mimic-iii-clinical-database-1.4")
    folder = prepared_from(release, tmp_path / "prepared")
    train = folder / "train.jsonl"
    digest = json.loads((folder / MANIFEST_FILE).read_text())["files"]["train.jsonl"]["digest"]
    assert digest == scan(train)[1] and digest not in hashlib.sha256(train.read_bytes()).hexdigest()

    monkeypatch.setenv(SECRET_ENV, str(tmp_path / "other-user.key"))
    assert scan(train)[1] != digest  # keyed: another secret, another digest
    with caplog.at_level(logging.WARNING, logger="synbench.data.prepared"):
        assert (
            len(read_back(folder).train)
            == json.loads((folder / MANIFEST_FILE).read_text())["splits"]["train"]["documents"]
        )
    assert f"{train} was prepared under another user's or machine's secret" in caplog.text
    train.write_text("".join(train.read_text(encoding="utf-8").splitlines(keepends=True)[1:]), encoding="utf-8")
    with pytest.raises(DataError, match="does not hold the number of documents"):
        read_back(folder)


def test_a_jsonl_file_no_manifest_lists_is_read_as_it_is(tmp_path: Path) -> None:
    """A user's own JSONL: alone in its folder, or beside a manifest.json of another tool, or one a prepare manifest
    does not list."""
    rows = [{"text": f"note {i} on dose {i % 5}", "label": ["a" if i % 2 else "b"]} for i in range(20)]
    own = tmp_path / "own"
    own.mkdir()
    (own / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    files = ("files", f"dataset.train={own / 'train.jsonl'}", "dataset.label_space=[a,b]")
    plain = loader(*files).load(0)
    assert len(plain.train) + len(plain.eval) == 20
    (own / MANIFEST_FILE).write_text(json.dumps({"name": "another tool's manifest", "files": 3}), encoding="utf-8")
    assert loader(*files).load(0) == plain
    (own / MANIFEST_FILE).write_text("not json", encoding="utf-8")
    assert loader(*files).load(0) == plain

    release = release_fixtures.write_mimic(tmp_path / "mimic-iii-clinical-database-1.4")
    folder = prepared_from(release, tmp_path / "prepared")
    (folder / "mine.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    mine = loader("files", f"dataset.train={folder / 'mine.jsonl'}", "dataset.label_space=[a,b]").load(0)
    assert mine == plain
