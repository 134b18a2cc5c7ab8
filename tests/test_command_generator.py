"""`generator=command`: a program benchmarked, audited and checked by the kit through the file contract."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, command_overrides, compose_config
from synbench.core.errors import ConfigError, SynBenchError
from synbench.core.privacy import PrivacySpec
from synbench.generators.command import (
    DEFAULT_TIMEOUT_S,
    WORK_PREFIX,
    CommandGenerator,
    CommandOptions,
    remove_stale_workspaces,
)
from synbench.job.spec import JobConfig
from synbench.testing import check_generator
from synbench.testing.checks import ConformanceError
from synbench.testing.corpora import public_corpus

HONEST = FIXTURES / "command" / "honest_generator.py"
LEAKY = FIXTURES / "command" / "leaky_generator.py"
KIT_DOCUMENTS = 640  # above the kit's largest sample: its one-run audit asks for about 572


def program(script: Path, tmp_path: Path, **options: object) -> CommandGenerator:
    return CommandGenerator([sys.executable, str(script), "{spec}", "{out}"], log_dir=str(tmp_path / "logs"), **options)


def inline(code: str, tmp_path: Path, **options: object) -> CommandGenerator:
    """A program given as `python -c CODE SPEC OUT` (sys.argv[1] the spec, sys.argv[2] the output folder)."""
    return CommandGenerator([sys.executable, "-c", code, "{spec}", "{out}"], log_dir=str(tmp_path / "logs"), **options)


@pytest.mark.slow
def test_the_kit_passes_the_honest_program_and_fails_the_leaking_one(tmp_path: Path) -> None:
    check_generator(lambda: program(HONEST, tmp_path, n_synthetic=KIT_DOCUMENTS), audit=True)
    with pytest.raises(ConformanceError) as caught:
        check_generator(lambda: program(LEAKY, tmp_path, n_synthetic=KIT_DOCUMENTS), audit=True)
    assert {"sample-leak", "audit"} <= set(caught.value.contracts)


def test_the_program_gets_the_spec_and_its_output_comes_back(tmp_path: Path) -> None:
    corpus = public_corpus(multi_label=True)
    seen = tmp_path / "seen.json"
    code = (
        "import json, os, shutil, stat, sys\n"
        "spec = json.load(open(sys.argv[1]))\n"
        "work = os.path.dirname(sys.argv[1])\n"
        f"json.dump({{'spec': spec, 'mode': stat.S_IMODE(os.stat(work).st_mode), 'out': os.listdir(sys.argv[2]),"
        f" 'private': [json.loads(l) for l in open(spec['private_path'])]}}, open({str(seen)!r}, 'w'))\n"
        "print('a line the program prints')\n"
        "shutil.copy(spec['private_path'], os.path.join(sys.argv[2], 'synthetic.jsonl'))\n"
        "json.dump({'epsilon_spent': spec['epsilon'] / 2}, open(os.path.join(sys.argv[2], 'spent.json'), 'w'))\n"
    )
    generator = inline(code, tmp_path)
    generator.expect_samples(20)
    report = generator.fit(corpus, PrivacySpec(2.0, 1e-5, accountant="rdp"), seed=7)
    got = json.loads(seen.read_text())
    spec = got["spec"]
    assert {k: spec[k] for k in ("epsilon", "delta", "accountant", "n_synthetic", "seed", "label_prior")} == {
        "epsilon": 2.0,
        "delta": 1e-5,
        "accountant": "rdp",
        "n_synthetic": 20,
        "seed": 7,
        "label_prior": "dp",
    }
    assert spec["label_space"] == list(corpus.label_space) and spec["multi_label"] is True
    assert isinstance(spec["noise_seed"], int) and got["mode"] == 0o700 and got["out"] == []
    assert [r["text"] for r in got["private"]] == list(corpus.texts)
    assert not Path(spec["private_path"]).exists()  # the working folder, private set included, is gone
    assert report.epsilon_spent == 1.0 and report.delta == 1e-5  # delta defaults to the spec's
    assert report.details["documents_written"] == len(corpus)
    log = generator.log_path
    assert log is not None and stat.S_IMODE(log.stat().st_mode) == 0o600
    assert log.read_text() == "a line the program prints\n"
    out = generator.sample(5)
    assert out.texts == corpus.texts[:5] and out.labels == corpus.labels[:5]
    wanted = {("relief", "side_effect"): 3, ("no_effect",): 2}
    assert sorted(generator.sample(5, wanted).labels) == sorted(k for k, v in wanted.items() for _ in range(v))
    with pytest.raises(SynBenchError, match=r"sample\(49\) asks for more documents than the program wrote \(48\)"):
        generator.sample(49)
    with pytest.raises(SynBenchError, match="label_counts asks for 13 documents labelled no_effect but the program"):
        generator.sample(13, {("no_effect",): 13})


def test_noise_seed_is_secret_unless_the_job_replicates_one(tmp_path: Path) -> None:
    from synbench.core.privacy import NoiseSource

    code = (
        "import json, os, sys\nspec = json.load(open(sys.argv[1]))\n"
        "open(os.path.join(sys.argv[2], 'synthetic.jsonl'), 'w').write(json.dumps({'text': str(spec['noise_seed']),"
        " 'label': ['relief']}) + '\\n')\n"
        "json.dump({'epsilon_spent': 0}, open(os.path.join(sys.argv[2], 'spent.json'), 'w'))\n"
    )

    def noise_seed(noise: NoiseSource) -> str:
        generator = inline(code, tmp_path, n_synthetic=1)
        generator.fit(public_corpus(), PrivacySpec(1.0, 1e-5, noise=noise, accountant="prv"), seed=0)
        return generator.sample(1).texts[0]

    assert noise_seed(NoiseSource(seed=3)) == noise_seed(NoiseSource(seed=3)) != noise_seed(NoiseSource(seed=4))
    assert noise_seed(NoiseSource()) != noise_seed(NoiseSource())


WRITE_SPENT = "json.dump({'epsilon_spent': 1.0}, open(os.path.join(sys.argv[2], 'spent.json'), 'w'))\n"
SECRET = "zqsecretdocumentword"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("sys.exit(3)\n", r"the program exited with code 3; its output is in .*command-.*\.log$"),
        ("pass\n", r"the program wrote no \{out\}/spent.json"),
        (WRITE_SPENT, r"the program wrote no \{out\}/synthetic.jsonl"),
        ("open(os.path.join(sys.argv[2], 'spent.json'), 'w').write('{oops')\n", r"\{out\}/spent.json is not valid"),
        ("json.dump({'eps': 1}, open(os.path.join(sys.argv[2], 'spent.json'), 'w'))\n", r"no field 'epsilon_spent'"),
        (
            "json.dump({'epsilon_spent': 'lots'}, open(os.path.join(sys.argv[2], 'spent.json'), 'w'))\n",
            r"field 'epsilon_spent' is not a non-negative number",
        ),
        (
            WRITE_SPENT + f"open(os.path.join(sys.argv[2], 'synthetic.jsonl'), 'w').write('{SECRET}\\n')\n",
            r"\{out\}/synthetic.jsonl line 1: not valid JSON",
        ),
        (
            WRITE_SPENT + "open(os.path.join(sys.argv[2], 'synthetic.jsonl'), 'w').write(json.dumps("
            f"{{'text': 'ok', 'label': ['relief']}}) + '\\n' + json.dumps({{'text': 'x', 'label': ['{SECRET}']}}))\n",
            r"\{out\}/synthetic.jsonl line 2: field \"label\" must be a list of one label from the spec's label_space",
        ),
        (
            WRITE_SPENT + "open(os.path.join(sys.argv[2], 'synthetic.jsonl'), 'wb').write(b'\\xff\\xfe')\n",
            r"\{out\}/synthetic.jsonl line 1: byte 1 of the line is not UTF-8",
        ),
        (
            WRITE_SPENT + "open(os.path.join(sys.argv[2], 'synthetic.jsonl'), 'w').write(json.dumps("
            "{'text': 'ok', 'label': ['relief']}))\n",
            r"wrote 1 documents to \{out\}/synthetic.jsonl but the spec asked for n_synthetic=36",
        ),
        ("import time\ntime.sleep(30)\n", r"did not finish within generator.timeout_s=0.5 and was stopped"),
    ],
)
def test_a_broken_program_is_one_line_naming_the_file(tmp_path: Path, body: str, message: str) -> None:
    generator = inline("import json, os, sys\nprint('" + SECRET + "')\n" + body, tmp_path, timeout_s=0.5)
    with pytest.raises(SynBenchError, match=message) as caught:
        generator.fit(public_corpus(), PrivacySpec(1.0, 1e-5, "prv"), seed=0)
    assert "\n" not in str(caught.value) and SECRET not in str(caught.value)


def test_bad_command_configs_are_refused(tmp_path: Path) -> None:
    for command, message in [
        ("python my_gen.py {spec} {out}", "must be a non-empty list of program arguments"),
        ([], "must be a non-empty list"),
        (["python", "my_gen.py"], "names neither {spec} nor {out}"),
    ]:
        with pytest.raises(ConfigError, match=message):
            CommandGenerator(command)
    with pytest.raises(ConfigError, match="generator.label_prior='histogram' must be one of dp, uniform"):
        CommandGenerator(["x", "{spec}"], label_prior="histogram")
    missing = CommandGenerator([str(tmp_path / "no-such-program"), "{spec}", "{out}"], log_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=r"cannot start generator.command\[0\]=.*no-such-program"):
        missing.fit(public_corpus(), PrivacySpec(1.0, 1e-5, "prv"), seed=0)
    with pytest.raises(ConfigError, match="sample\\(\\) called before fit\\(\\)"):
        CommandGenerator(["x", "{spec}"]).sample(1)


# A program that starts a worker (which ignores SIGTERM when asked) and records both pids, then ends with `END`.
WITH_WORKER = (
    "import json, os, subprocess, sys\n"
    "spec = json.load(open(sys.argv[1]))\n"
    "code = 'import signal, time\\n' + ('signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n' if STUBBORN else '')\n"
    "worker = subprocess.Popen([sys.executable, '-c', code + 'time.sleep(120)'])\n"
    "json.dump({'program': os.getpid(), 'worker': worker.pid}, open(PIDS, 'w'))\n"
    "line = json.dumps({'text': 'a note', 'label': ['relief']}) + '\\n'\n"
    "open(os.path.join(sys.argv[2], 'synthetic.jsonl'), 'w').write(line * spec['n_synthetic'])\n"
    "json.dump({'epsilon_spent': 1.0}, open(os.path.join(sys.argv[2], 'spent.json'), 'w'))\n"
    "END\n"
)


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie that its new parent has not reaped yet counts as gone)."""
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state not in ("Z", "X")


def gone_soon(pid: int, seconds: float = 5.0) -> bool:
    """Whether `pid` is gone within `seconds` (a signalled process takes a moment to exit)."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


@pytest.mark.parametrize(
    ("end", "stubborn"),
    [("sys.exit(0)", False), ("sys.exit(3)", False), ("sys.exit(0)", True)],
    ids=["finished", "failed", "a worker that ignores SIGTERM"],
)
def test_no_worker_outlives_its_program(tmp_path: Path, end: str, stubborn: bool) -> None:
    """The job ends the program's session when the program ends, done or failed: a worker it left running gets
    SIGTERM, and SIGKILL after the grace when it ignores that."""
    pids = tmp_path / "pids.json"
    code = WITH_WORKER.replace("END", end).replace("STUBBORN", str(stubborn)).replace("PIDS", repr(str(pids)))
    generator = inline(code, tmp_path, n_synthetic=3)
    try:
        generator.fit(public_corpus(), PrivacySpec(1.0, 1e-5, "prv"), seed=0)
    except SynBenchError as exc:
        assert end == "sys.exit(3)" and "exited with code 3" in str(exc)
    started = json.loads(pids.read_text())
    assert not alive(started["program"]) and gone_soon(started["worker"])


def test_the_program_runs_in_its_own_folder_and_finds_its_files_where_the_job_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No workdir: the program's working directory is its working folder (scratch files go with it), and a relative
    path on the command line (the script, a file it reads) still means the file where the job was started."""
    started = tmp_path / "started"
    started.mkdir()
    (started / "words.txt").write_text("relief\n")
    (started / "my_gen.py").write_text(
        "import json, os, sys\n"
        "spec_path, words, out = sys.argv[1:]\n"
        "open('scratch.txt', 'w').write('scratch')\n"
        "label = open(words).read().strip()\n"
        "seen = {'cwd': os.getcwd(), 'work': os.path.dirname(spec_path)}\n"
        f"json.dump(seen, open({str(tmp_path / 'seen.json')!r}, 'w'))\n"
        "line = json.dumps({'text': 'a note', 'label': [label]})\n"
        "open(os.path.join(out, 'synthetic.jsonl'), 'w').write(line + '\\n')\n"
        "json.dump({'epsilon_spent': 1.0}, open(os.path.join(out, 'spent.json'), 'w'))\n"
    )
    monkeypatch.chdir(started)
    generator = CommandGenerator(
        [sys.executable, "my_gen.py", "{spec}", "words.txt", "{out}"], log_dir=str(tmp_path / "logs"), n_synthetic=1
    )
    generator.fit(public_corpus(), PrivacySpec(1.0, 1e-5, "prv"), seed=0)
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["cwd"] == seen["work"] and not Path(seen["work"]).exists()  # its scratch file went with the folder
    assert sorted(p.name for p in started.iterdir()) == ["my_gen.py", "words.txt"]
    assert generator.sample(1).labels == (("relief",),)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    chosen = CommandGenerator(  # a folder the user chose: the command is relative to it
        [sys.executable, "../started/my_gen.py", "{spec}", "../started/words.txt", "{out}"],
        log_dir=str(tmp_path / "logs"),
        n_synthetic=1,
        workdir=str(elsewhere),
    )
    chosen.fit(public_corpus(), PrivacySpec(1.0, 1e-5, "prv"), seed=0)
    assert json.loads((tmp_path / "seen.json").read_text())["cwd"] == str(elsewhere)
    assert (elsewhere / "scratch.txt").exists()  # a folder the user chose keeps what the program wrote there


def test_a_missing_workdir_names_the_key_not_the_program(tmp_path: Path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for workdir, words in ((tmp_path / "nowhere", "does not exist"), (a_file, "is not a folder")):
        with pytest.raises(ConfigError, match=rf"^generator.workdir={workdir} {words}; create it, or leave"):
            CommandGenerator([sys.executable, "gen.py", "{spec}", "{out}"], workdir=str(workdir))
    folder = tmp_path / "removed_later"
    folder.mkdir()
    generator = CommandGenerator([sys.executable, "gen.py", "{spec}", "{out}"], workdir=str(folder))
    folder.rmdir()  # gone between the config check and the run: still the folder's line, not the program's
    with pytest.raises(ConfigError, match=r"generator.workdir=.*removed_later does not exist"):
        generator.fit(public_corpus(), PrivacySpec(1.0, 1e-5, "prv"), seed=0)


HOLD = "import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"


def work_folder(root: Path, name: str, *files: str) -> Path:
    folder = root / f"{WORK_PREFIX}{name}"
    (folder / "out").mkdir(parents=True)
    for file in files:
        (folder / file).write_text("private")
    return folder


def test_stale_folders_of_killed_runs_are_removed_and_no_other(tmp_path: Path) -> None:
    """Only a `synbench-command-*` working folder this user owns that no live process holds is removed: not one a
    live process holds (until it is gone), another user's, a link, the log folder, or a folder of other files."""
    root = tmp_path / "tmp"
    stale = work_folder(root, "stale123", "private.jsonl", "spec.json")
    empty = root / f"{WORK_PREFIX}empty123"  # killed before it held anything
    empty.mkdir()
    held = work_folder(root, "held1234", "private.jsonl")
    others = work_folder(root, "others12")
    os.chown(others, 4242, 4242)
    target = work_folder(tmp_path, "target12", "private.jsonl")
    (root / f"{WORK_PREFIX}linked12").symlink_to(target)
    logs = root / f"{WORK_PREFIX}logs"
    logs.mkdir()
    (logs / "command-x.log").write_text("log")
    unrelated = root / f"{WORK_PREFIX}notes123"
    unrelated.mkdir()
    (unrelated / "notes.txt").write_text("mine")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD + "print(1, flush=True)\ntime.sleep(60)", str(held)], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"1"
        assert remove_stale_workspaces(root) == 2
        assert not stale.exists() and not empty.exists()
        kept = [held, others, target, logs, unrelated, root / f"{WORK_PREFIX}linked12"]
        assert all(path.exists() for path in kept) and (target / "private.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    assert remove_stale_workspaces(root) == 1 and not held.exists()  # its holder is gone: stale now


def test_the_folder_of_a_killed_job_is_removed_once_its_program_is_gone(tmp_path: Path) -> None:
    """SIGKILL to the job while its program runs: the program (its own session) holds the folder on, so it stays
    while the program lives, and the next run's cleanup removes it, private set included, once it is gone."""
    root, record = tmp_path / "tmp", tmp_path / "running.json"
    root.mkdir()
    program = (
        "import json, os, sys, time\n"
        f"json.dump({{'pid': os.getpid(), 'spec': sys.argv[1]}}, open({str(record)!r}, 'w'))\n"
        "time.sleep(120)\n"
    )
    job = (
        "import sys\n"
        "from synbench.core.privacy import PrivacySpec\n"
        "from synbench.generators.command import CommandGenerator\n"
        "from synbench.testing.corpora import public_corpus\n"
        f"CommandGenerator([sys.executable, '-c', {program!r}, '{{spec}}', '{{out}}'], log_dir={str(tmp_path)!r})"
        ".fit(public_corpus(), PrivacySpec(1.0, 1e-5, 'prv'), seed=0)\n"
    )
    killed = subprocess.Popen([sys.executable, "-c", job], env={**os.environ, "TMPDIR": str(root)})
    deadline = time.monotonic() + 60
    while not record.exists() or not record.read_text():
        assert killed.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    running = json.loads(record.read_text())
    work = Path(running["spec"]).parent
    killed.kill()
    killed.wait()
    assert (work / "private.jsonl").exists() and alive(running["pid"])
    assert remove_stale_workspaces(root) == 0 and work.exists()  # held by the program, which runs on
    os.kill(running["pid"], signal.SIGKILL)
    assert gone_soon(running["pid"])
    assert remove_stale_workspaces(root) == 1 and not work.exists()


def test_every_torch_thread_count_below_one_is_refused_naming_its_key() -> None:
    """One check for every `num_threads` (lm.settings.check_num_threads): 0 is not taken for null, nor -2 passed on
    to torch; a filter's is checked too, though a job builds its filter only after the generator has run."""
    from synbench.contamination.config import MinKOptions
    from synbench.filters.settings import PYesPNoOptions
    from synbench.generators.dpgen.settings import DPGenTrainingOptions
    from synbench.generators.public import PublicOptions
    from synbench.lm.settings import LocalBackendOptions

    for build, key in [
        (lambda n: LocalBackendOptions(num_threads=n), "generator.backend.num_threads"),
        (lambda n: PublicOptions(model={}, domain="drug", num_threads=n), "generator.num_threads"),
        (lambda n: DPGenTrainingOptions(num_threads=n), "generator.num_threads"),
        (lambda n: MinKOptions(num_threads=n), "contamination.mink.num_threads"),
        (lambda n: PYesPNoOptions(model={}, domain="medical", num_threads=n), "filter.num_threads"),
    ]:
        for bad in (0, -2):
            with pytest.raises(ConfigError, match=rf"^{key}={bad} must be at least 1 .* or null for PyTorch's"):
                build(bad)
        assert build(None).num_threads is None and build(2).num_threads == 2


def test_the_default_timeout_is_the_documented_one() -> None:
    page = (REPO / "docs" / "generators" / "command.md").read_text()
    assert DEFAULT_TIMEOUT_S == 6 * 3600 and CommandOptions(command=["x", "{spec}"]).timeout_s == DEFAULT_TIMEOUT_S
    assert f"| `generator.timeout_s` | `{DEFAULT_TIMEOUT_S:g}` (6 h) |" in page


@pytest.mark.slow
def test_a_program_is_benchmarked_and_audited_as_a_job(tmp_path: Path, reviews: list[str]) -> None:
    from synbench.tasks import audit, benchmark

    cfg = compose_config([*reviews, *command_overrides(HONEST, tmp_path), "eps=2", "metrics=[utility]"])
    results = benchmark.run(JobConfig.from_config(cfg), tmp_path / "bench")
    assert results["status"] == "complete" and results["generator"] == "command"
    assert results["epsilon_spent"] == 2.0 and results["generation"]["documents_written"] == 60
    assert "f1_macro" in results["utility"]
    synthetic = (tmp_path / "bench").rglob("*.jsonl")
    assert not any("w0" in line for path in synthetic for line in path.read_text().splitlines())

    for script, leaks in ((HONEST, False), (LEAKY, True)):
        overrides = [*reviews, *command_overrides(script, tmp_path), "task=audit", "eps=1", "audit.mode=one_run"]
        # a replicated noise seed: a sound bound still exceeds eps in up to 5% of secret-noise draws
        cfg = compose_config([*overrides, "audit.n_canaries=200", "audit.targets=canaries", "privacy.noise_seed=0"])
        found = audit.run(JobConfig.from_config(cfg), tmp_path / script.stem)["audit"]
        assert (found["eps_emp_lower"] > 1.0) is leaks and (found["auc"] > 0.9) is leaks, found


def test_a_withheld_program_never_gets_the_private_set_and_is_a_public_baseline(
    tmp_path: Path, reviews: list[str]
) -> None:
    """`generator.withhold_private=true`: no private JSONL is written anywhere the program can see (its spec's
    private_path is null, its working folder holds the spec alone) and the job records reads_private false; the same
    program without the switch is given the set and is no baseline, though it reports spending nothing."""
    from synbench.tasks import benchmark

    seen = tmp_path / "seen.jsonl"
    script = tmp_path / "zero_claim.py"
    script.write_text(
        "import json, os, sys\n"
        "spec = json.load(open(sys.argv[1]))\n"
        "work = os.path.dirname(sys.argv[1])\n"
        "files = sorted(os.path.relpath(os.path.join(d, f), work) for d, _, fs in os.walk(work) for f in fs)\n"
        "seen = {'private_path': spec['private_path'], 'files': files}\n"
        f"open({str(seen)!r}, 'a').write(json.dumps(seen) + '\\n')\n"
        "with open(os.path.join(sys.argv[2], 'synthetic.jsonl'), 'w') as out:\n"
        "    for i in range(spec['n_synthetic']):\n"
        "        label = spec['label_space'][i % len(spec['label_space'])]\n"
        "        out.write(json.dumps({'text': f'a public sentence about {label}', 'label': [label]}) + '\\n')\n"
        "json.dump({'epsilon_spent': 0}, open(os.path.join(sys.argv[2], 'spent.json'), 'w'))\n"
    )
    base = [*reviews, *command_overrides(script, tmp_path), "eps=1", "metrics=[utility]"]
    withheld = benchmark.run(
        JobConfig.from_config(compose_config([*base, "generator.withhold_private=true"])), tmp_path / "a"
    )
    given = benchmark.run(JobConfig.from_config(compose_config(base)), tmp_path / "b")
    first, second = (json.loads(line) for line in seen.read_text().splitlines())
    assert first == {"private_path": None, "files": ["spec.json"]}  # nothing but the spec, and no path to a set
    assert second["private_path"] is not None and "private.jsonl" in second["files"]
    assert (withheld["status"], withheld["reads_private"], withheld["epsilon_spent"]) == ("complete", False, 0.0)
    assert (given["status"], given["reads_private"], given["epsilon_spent"]) == ("complete", True, 0.0)


def test_a_program_is_model_audited(tmp_path: Path, reviews: list[str]) -> None:
    from synbench.tasks.model_audit import run

    overrides = [*reviews, *command_overrides(HONEST, tmp_path), "task=model_audit", "eps=2"]
    tiny = [
        "model_audit.regimes=[syn_dp]",
        "model_audit.n_targets=20",
        "model_audit.n_population=20",
        "model_audit.head.features=hashing",
        "model_audit.head.hashing_features=512",
        "model_audit.max_docs=null",
    ]
    cfg = compose_config([*overrides, *tiny])
    results = run(JobConfig.from_config(cfg), tmp_path / "job")
    assert results["status"] == "complete" and results["model_audit"]["syn_dp.epsilon_spent"] == 2.0
    assert any(key.startswith("syn_dp.") and key.endswith(".auc") for key in results["model_audit"])


COPY_ALL = (
    "import json, os, sys\n"
    "spec = json.load(open(sys.argv[1]))\n"
    "rows = [json.loads(line) for line in open(spec['private_path'])]\n"
    "with open(os.path.join(sys.argv[2], 'synthetic.jsonl'), 'w') as f:\n"
    "    f.writelines(json.dumps({'text': r['text'], 'label': r['label']}) + '\\n' for r in rows)\n"
    "json.dump({'epsilon_spent': 1.0}, open(os.path.join(sys.argv[2], 'spent.json'), 'w'))\n"
)


def test_a_program_short_of_documents_because_the_private_set_is_small_is_told_which_number_to_set(
    tmp_path: Path,
) -> None:
    """One document per private one (36 here) for a spec asking 50: the line names the key to set and its bound."""
    private = public_corpus()
    configured = inline(COPY_ALL, tmp_path, n_synthetic=50)
    with pytest.raises(SynBenchError, match=r"more than the 36 private .* set generator.n_synthetic to at most 36"):
        configured.fit(private, PrivacySpec(1.0, 1e-5, "prv"), seed=0)
    by_job = inline(COPY_ALL, tmp_path)
    by_job.expect_samples(50)
    with pytest.raises(
        SynBenchError, match=r"set the job's sample size \(task.n_synthetic or audit.n_synthetic\) to at"
    ):
        by_job.fit(private, PrivacySpec(1.0, 1e-5, "prv"), seed=0)
    by_job.expect_samples(36)  # what the private set allows: it runs
    assert len(by_job.fit(private, PrivacySpec(1.0, 1e-5, "prv"), seed=0).details) and len(by_job.sample(36)) == 36


def test_job_config_is_part_of_the_public_api() -> None:
    import synbench.api as api

    assert api.JobConfig is JobConfig and "JobConfig" in api.__all__
