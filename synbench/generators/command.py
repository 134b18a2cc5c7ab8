"""`generator=command`: any program as a generator, through a file contract.

A generator written in another language, another framework or another
environment (microsoft/DPSDA's `pe`, dp-transformers, a research script) is
benchmarked and audited without a plugin. `fit` writes the private set as
JSONL (`text`, `label` list, `id`) and a spec JSON into a fresh 0700 folder,
runs the configured argv once (no shell; `{spec}` and `{out}` are substituted
in each element, `{out}` an empty folder), and reads back what the program
wrote:

- `{out}/synthetic.jsonl`: one JSON object a line, `text` (a string) and
  `label` (a list of labels from the spec's `label_space`; one on a
  single-label task);
- `{out}/spent.json`: `{"epsilon_spent": <number or "inf">}` and optionally
  `"delta"` (default: the spec's delta, which the program was given).

The spec holds `private_path` (null when the private set is withheld,
below), `epsilon` (a number, or `"inf"` for no DP), `delta`, `accountant`,
`n_synthetic` (documents to write), `label_space`,
`multi_label`, `label_prior` (the label plan: `dp`, a label mix the program
releases with DP inside its budget, or `uniform`, the public prior), the
public `seed` (decoding, subsampling) and `noise_seed`: the seed of the
program's privacy noise, drawn from the job's secret noise source (fresh OS
entropy, or reproducible under a replication `privacy.noise_seed`), so it is
never a function of the published seed.

`generator.withhold_private=true` runs the program without the private
set: the job never writes it (the spec's `private_path` is null and the
working folder holds no private JSONL; `Generator.reads_private`), so what the
program writes is public knowledge alone, and the job is recorded as a public
baseline (`reads_private: false` in results.json) beside `public` and
`template`. That is the only way a program becomes a baseline: what it
writes in `spent.json` (an `epsilon_spent` of 0 included) never makes it one.

`generator.name` names the run in results.json (`generator_name`), the
report and the program's log file; its default is the program's file name
stem (`program_name`: `copier` for `[python, copier.py, "{spec}", "{out}"]`),
set in conf/generator/command.yaml through the `synbench_program_name`
resolver this module registers, so two programs run as `generator=command`
show as two generators.

The program runs once, during `fit`, while it holds the private data: it
writes `n_synthetic` documents (the run's sample size, `expect_samples`, or
`generator.n_synthetic`), and `sample(n)` returns the first n of them (or,
with `label_counts`, the first documents of each label set), refusing more
than were written. What comes back goes through `GeneratorRun` like any
plugin's output: the budget check, the label check and the results
allow-list. The program's stdout and stderr may quote records, so they go to
a 0600 log file outside the job folder (never `app.log`); messages name that
file and the contract file at fault, never a value from a record.

The program leaves nothing behind it. It runs in its working folder, with
each argument that names a file or folder where the job was started passed as
its absolute path, so scratch files it writes there are removed with the
folder (or in `generator.workdir`, with the command as written). When it ends (done,
failed, out of time or interrupted) its whole session is ended, workers it
started included. The folder is held (an flock on it, by the job and by the
program, which inherits it) while either lives: a folder of a job that was
killed (SIGKILL, a power cut) is one no live process holds, and the next
command run of the same user removes it, private set included
(`remove_stale_workspaces`). What a program writes outside its folder, or a
worker it moves to a session of its own, only a sandbox can stop
(docs/generators/command.md).
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import numbers
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, List, Mapping, Optional, Sequence

import numpy as np
from omegaconf import MISSING, OmegaConf

from synbench.core.base import FitReport, Generator
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError, DataError, SynBenchError, check_n_synthetic
from synbench.core.files import FOLDER_MODE, write_corpus_jsonl, write_json_atomic
from synbench.core.privacy import PrivacySpec
from synbench.data.files import jsonl_rows
from synbench.dp import label_sets
from synbench.job import failures

log = logging.getLogger(__name__)

PLACEHOLDERS = ("{spec}", "{out}")
LABEL_PRIORS = ("dp", "uniform")
SYNTHETIC_FILE = "synthetic.jsonl"
SPENT_FILE = "spent.json"
NAME = "generator 'command'"
STOP_GRACE_S = 3.0  # after SIGTERM, the program's session is killed (an interrupted job ends within seconds)
# 6 hours, the default job limit of GitHub Actions: a DP fine-tune or a Private Evolution run of a paper-sized set
# on one GPU finishes well inside it, a program that hangs is stopped the same working day, and a job under the
# SLURM launcher (conf/hydra/launcher/slurm_gpu_node.yaml: 12 h) ends with this message, not the scheduler's kill
DEFAULT_TIMEOUT_S = 6 * 3600.0
# The working folders: tempfile.mkdtemp's names (8 characters of [a-z0-9_] after the prefix), which the default
# log folder (<tmp>/synbench-command-logs) does not match
WORK_PREFIX = "synbench-command-"
WORK_NAME = re.compile(re.escape(WORK_PREFIX) + r"[a-z0-9_]{8}")
OUT_FOLDER = "out"
# A run's name: shown in tables and in the log file's name, so letters, digits and . _ - + only
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
UNSAFE_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._+-]+")
PATH_ARGUMENT = re.compile(r"[\w./~+-]+")  # an argument that can be the program's path (not code, not a URL)


def program_path(command: Sequence[str]) -> str:
    """The argument of `command` that is the program: the last path before the first argument that holds `{spec}`
    or `{out}`, options (`-u`) and code (`-c "..."`) aside, so `copier.py` in `[python, copier.py, "{spec}",
    "{out}"]` (not the interpreter, which every Python program shares), `./copier` in `[./copier, "{spec}",
    "{out}"]`, and the interpreter itself for `[python, -c, CODE, ...]`."""
    args = [str(arg) for arg in command]
    first = next((i for i, arg in enumerate(args) if any(p in arg for p in PLACEHOLDERS)), len(args))
    paths = [arg for arg in args[:first] if PATH_ARGUMENT.fullmatch(arg) and not arg.startswith("-")]
    return (paths or args[:1] or ["command"])[-1]


def program_name(command: Sequence[str]) -> str:
    """The default `generator.name` of a command: its program's file name stem (`program_path`) in `NAME_PATTERN`'s
    characters, e.g. `copier` for `/abs/path/copier.py`."""
    stem = UNSAFE_NAME_CHARACTERS.sub("_", Path(program_path(command)).stem).lstrip("._+-")
    return stem or "command"


# The default of `generator.name` in conf/generator/command.yaml: `${synbench_program_name:${.command}}`. Registered
# when this module is imported, which synbench.conf does before Hydra reads any of its config files.
OmegaConf.register_new_resolver("synbench_program_name", lambda command: program_name(list(command)), replace=True)


@dataclass(frozen=True)
class CommandOptions:
    """`generator=command`'s keys (conf/generator/command.yaml, docs/generators/command.md), each refused where it is
    set: a sweep checks every point's before its first job. `generator.log_dir` inside output_root is refused with
    the job's other paths (synbench.job.spec), which know output_root."""

    command: List[str] = MISSING  # the program's argv, no shell; {spec} and {out} substituted in each element
    n_synthetic: Optional[int] = None  # documents to ask for; null = as many as the run samples
    timeout_s: float = DEFAULT_TIMEOUT_S  # the program and its session are stopped after this
    label_prior: str = "dp"  # passed in the spec: dp | uniform
    log_dir: Optional[str] = None  # where the program's output goes; null = <tmp>/synbench-command-logs
    workdir: Optional[str] = None  # the program's working directory; null = its own working folder (removed after)
    name: Optional[str] = None  # what results and the report call the run; null = the program's file name stem
    withhold_private: bool = False  # true: the job writes no private set and the run is a public baseline

    def __post_init__(self) -> None:
        command = self.command
        if isinstance(command, str) or not command or not all(isinstance(a, str) and a for a in command):
            raise ConfigError(
                "generator.command must be a non-empty list of program arguments (no shell), e.g. "
                'generator.command=[python,my_gen.py,"{spec}","{out}"]'
            )
        if not any(p in arg for arg in command for p in PLACEHOLDERS):
            raise ConfigError(
                "generator.command names neither {spec} nor {out}: the program cannot find the spec or where to "
                'write; pass them as arguments, e.g. generator.command=[python,my_gen.py,"{spec}","{out}"]'
            )
        if self.name is not None and not NAME_PATTERN.fullmatch(self.name):
            raise ConfigError(
                f"generator.name={self.name!r} is not a usable name: use letters, digits and . _ - + (starting with "
                "a letter or digit), e.g. generator.name=my_gen, or leave it out for the program's file name"
            )
        check_n_synthetic(self.n_synthetic, "generator.n_synthetic", "as many documents as the run samples")
        if not float(self.timeout_s) > 0:
            raise ConfigError(f"generator.timeout_s={self.timeout_s!r} must be a positive number of seconds")
        if self.label_prior not in LABEL_PRIORS:
            raise ConfigError(f"generator.label_prior={self.label_prior!r} must be one of {', '.join(LABEL_PRIORS)}")
        if self.workdir is not None:
            existing_workdir(self.workdir)


def existing_workdir(workdir: str) -> Path:
    """`generator.workdir` as a folder that exists, or one line naming the key (not the program, which never ran)."""
    folder = Path(workdir).expanduser()
    if not folder.is_dir():
        raise ConfigError(
            f"generator.workdir={workdir} {'is not a folder' if folder.exists() else 'does not exist'}; create it, "
            "or leave generator.workdir unset to run the program in its own working folder (removed after the run)"
        )
    return folder.absolute()


def absolute_paths(command: Sequence[str]) -> list[str]:
    """`command` with each argument that names an existing file or folder relative to the current directory (where
    the job was started) as its absolute path, so `[python,my_gen.py,...]` still finds `my_gen.py` when the program
    runs in its working folder. The first argument only with a `/` in it (a bare name is looked up on PATH);
    options (`-m`, `--config=x`) and arguments holding `{spec}` or `{out}` are passed as written."""
    return [
        os.path.abspath(arg)
        if not os.path.isabs(arg)
        and not arg.startswith("-")
        and not any(p in arg for p in PLACEHOLDERS)
        and (i > 0 or "/" in arg)
        and os.path.exists(arg)
        else arg
        for i, arg in enumerate(command)
    ]


class CommandGenerator(Generator):
    """Runs an outside program once per fit through the spec / synthetic.jsonl / spent.json contract."""

    options = CommandOptions
    public_details = frozenset({"program", "program_seconds", "documents_written"})

    def __init__(self, command: Sequence[str], **options: Any) -> None:
        try:
            settings = CommandOptions(command=command, **options)  # type: ignore[arg-type]
        except TypeError as exc:
            raise ConfigError(f"{NAME}: {exc}; see docs/generators/command.md for its keys") from None
        self.command = [str(a) for a in settings.command]
        # relative paths mean the files where the job was started, unless the user chose the program's folder
        self.argv = self.command if settings.workdir is not None else absolute_paths(self.command)
        self.name = settings.name or program_name(self.command)
        self.n_synthetic = None if settings.n_synthetic is None else int(settings.n_synthetic)
        self.timeout_s = float(settings.timeout_s)
        self.label_prior = settings.label_prior
        log_dir = settings.log_dir
        self.log_dir = Path(log_dir).expanduser() if log_dir else Path(tempfile.gettempdir()) / "synbench-command-logs"
        self.workdir = settings.workdir
        self.withhold_private = bool(settings.withhold_private)
        self._expected: int | None = None
        self._written: Corpus | None = None
        self._rng = np.random.default_rng(0)
        self.log_path: Path | None = None

    @classmethod
    def reads_private(cls, options: Mapping[str, Any]) -> bool:
        """Unless `generator.withhold_private` is set: then the job gives `fit` no private document."""
        return not options.get("withhold_private", False)

    def expect_samples(self, n: int) -> None:
        self._expected = int(n)

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        """Write the private set (unless withheld) and the spec, run the program once, read back its documents and
        its spend."""
        n = max(self.n_synthetic or 0, self._expected or 0) or len(corpus)
        with workspace() as (work, held):
            out = work / OUT_FOLDER
            out.mkdir(mode=FOLDER_MODE)
            private_path = None if self.withhold_private else work / "private.jsonl"
            if private_path is not None:
                write_corpus_jsonl(private_path, corpus)
            spec = {
                "private_path": None if private_path is None else str(private_path),
                "epsilon": privacy.epsilon if privacy.is_private else "inf",
                "delta": privacy.delta,
                "accountant": privacy.accountant,
                "n_synthetic": n,
                "label_space": list(corpus.label_space),
                "multi_label": corpus.multi_label,
                "label_prior": self.label_prior,
                "seed": int(seed),
                "noise_seed": int(privacy.noise.numpy("command").integers(2**63)),
            }
            spec_path = work / "spec.json"
            write_json_atomic(spec_path, spec)
            seconds = self._run(spec_path, out, work, held)
            epsilon, delta = _read_spent(out / SPENT_FILE, privacy)
            written = _read_synthetic(out / SYNTHETIC_FILE, corpus)
        if len(written) < n:
            raise SynBenchError(_too_few(len(written), n, len(corpus), self.n_synthetic, self.log_path))
        self._written, self._rng = written, np.random.default_rng(seed)
        return FitReport(
            epsilon_spent=epsilon,
            delta=delta,
            details={
                "program": Path(program_path(self.command)).name,
                "program_seconds": seconds,
                "documents_written": len(written),
            },
        )

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """The first `n` documents the program wrote (the first of each label set with `label_counts`)."""
        written = self._written
        if written is None:
            raise ConfigError(f"{NAME}: sample() called before fit()")
        if n > len(written):
            raise SynBenchError(
                f"{NAME}: sample({n}) asks for more documents than the program wrote ({len(written)}): the program "
                f"runs once, in fit, for spec n_synthetic documents; set generator.n_synthetic >= {n}"
            )
        if label_counts is None:
            return written.subset(range(n), name="command-synthetic")
        space = written.label_space
        plan = label_sets.plan(n, label_sets.uniform(space), space, written.multi_label, self._rng, label_counts)
        return self._by_label([label_sets.canonical(labels, label_sets.positions(space)) for labels in plan])

    def _by_label(self, plan: list[Labels]) -> Corpus:
        """For each label set of `plan`, the next document the program wrote with that set, in its order."""
        written = self._written
        assert written is not None
        pools: dict[Labels, Iterator[int]] = {}
        sets = label_sets.label_sets(written)
        idx = []
        for labels in plan:
            pool = pools.setdefault(labels, iter(i for i, s in enumerate(sets) if s == labels))
            i = next(pool, None)
            if i is None:
                raise SynBenchError(
                    f"{NAME}: label_counts asks for {plan.count(labels)} documents labelled {'+'.join(labels)} but "
                    f"the program wrote {sets.count(labels)}; raise generator.n_synthetic or have the program cover "
                    "every label set"
                )
            idx.append(i)
        return written.subset(idx, name="command-synthetic")

    def _run(self, spec_path: Path, out: Path, work: Path, held: int) -> float:
        """Run the program (no shell, its own session, in `work` unless generator.workdir is set, holding the lock
        `held` on `work`) with output to a fresh 0600 log, and end its session when it ends; the seconds it took."""
        argv = [_substitute(arg, spec_path, out) for arg in self.argv]
        cwd = work if self.workdir is None else existing_workdir(self.workdir)  # it may be gone since the config
        self.log_dir.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
        # mode 0600; named by the run, so the logs of a sweep's programs can be told apart
        fd, log_name = tempfile.mkstemp(prefix=f"command-{self.name}-", suffix=".log", dir=self.log_dir)
        self.log_path = Path(log_name)
        start = time.monotonic()
        with os.fdopen(fd, "wb") as output:
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    cwd=cwd,
                    start_new_session=True,
                    pass_fds=(held,),  # the folder stays held while the program lives, even if the job is killed
                )
            except OSError as exc:
                raise ConfigError(
                    f"{NAME}: cannot start generator.command[0]={self.command[0]!r} ({exc.strerror}); give the path "
                    "of an executable or a program on PATH"
                ) from None
            try:
                finished = _exits_within(process, self.timeout_s)
            finally:  # done, failed, out of time or interrupted: its session (workers it started) ends with it
                _stop(process)
        if not finished:
            raise SynBenchError(
                f"{NAME}: the program did not finish within generator.timeout_s={self.timeout_s:g} and was stopped; "
                f"its output is in {self.log_path}; raise generator.timeout_s if it needs longer"
            )
        code = process.returncode
        if code != 0:
            raise SynBenchError(f"{NAME}: the program exited with code {code}; its output is in {self.log_path}")
        return time.monotonic() - start


def _too_few(written: int, asked: int, private: int, configured: int | None, log: Path | None) -> str:
    """One line for a program that wrote fewer documents than the spec's `n_synthetic`, naming the number to set.

    A program that writes at most one document per private one (a copy, a per-document rewrite) comes short when the
    job's sample size is above the private set's size (the size is public: delta and the accountant use it).
    """
    line = f"{NAME}: the program wrote {written} documents to {{out}}/{SYNTHETIC_FILE} but the spec asked for "
    line += f"n_synthetic={asked}"
    if 0 < private and written <= private < asked:
        key = (
            "generator.n_synthetic"
            if configured == asked
            else "the job's sample size (task.n_synthetic or audit.n_synthetic)"
        )
        return (
            f"{line}, more than the {private} private documents it was given: if it writes at most one per private "
            f"document, set {key} to at most {private}; otherwise write {asked} (see {log} for its output)"
        )
    return f"{line}; write that many (see {log} for its output)"


def _substitute(arg: str, spec_path: Path, out: Path) -> str:
    return arg.replace("{spec}", str(spec_path)).replace("{out}", str(out))


def _exits_within(process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Whether the program exits within `timeout_s`, waited for without reaping it: until it is reaped its process id
    is still its session's, so the signals that end the session (`_terminate`) can reach no one else's."""
    deadline = time.monotonic() + timeout_s
    pause = 0.001
    while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(2 * pause, 0.1)
    return True


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End the program's whole session (`_terminate`); a Ctrl-C or SIGTERM meanwhile interrupts once it is gone."""
    noted: list[int] = []
    with failures.on_interrupt(lambda signum, _: noted.append(signum)):
        _terminate(process)
    if noted:
        raise KeyboardInterrupt


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the program's session (the program and the workers it started), SIGKILL to what is left of it
    after STOP_GRACE_S; the program is reaped. A worker that moved to a session of its own is out of reach."""
    session = process.pid
    _signal_session(session, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    while (alive := _signal_session(session, 0)) and time.monotonic() < deadline:
        time.sleep(0.02)
    if alive:
        _signal_session(session, signal.SIGKILL)
        process.wait()


def _signal_session(session: int, sig: int) -> bool:
    """Send `sig` to every process of the session's group; False when none is left."""
    try:
        os.killpg(session, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@contextmanager
def workspace() -> Iterator[tuple[Path, int]]:
    """A fresh 0700 `synbench-command-*` folder for one run and a descriptor holding an flock on it, the folder
    removed with all it holds (private set included) when the run ends. Stale folders of killed runs are removed
    first (`remove_stale_workspaces`)."""
    remove_stale_workspaces()
    while True:
        work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))  # mode 0700
        held = _hold(work, wait=True)
        if held is not None and os.fstat(held).st_nlink:
            break
        if held is not None:  # another job's cleanup took it for stale before it was held, and removed it
            os.close(held)
    try:
        yield work, held
    finally:
        try:
            _remove(work)
        finally:
            os.close(held)


def remove_stale_workspaces(root: Path | None = None) -> int:
    """Remove the working folders that runs killed without cleaning up (SIGKILL, a power cut) left in `root` (the
    temp folder): each `synbench-command-*` folder this user owns, whose flock no live process holds (a running job
    and its program hold theirs), holding an `out` folder or nothing. A folder another user owns, a link, or one
    a live process holds is never touched. Returns how many were removed."""
    root = Path(tempfile.gettempdir()) if root is None else root
    removed = 0
    with os.scandir(root) as entries:
        candidates = [e.path for e in entries if WORK_NAME.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
    for path in candidates:
        held = _hold(Path(path), wait=False)
        if held is None:
            continue
        try:
            mine = os.fstat(held)
            contents = os.listdir(held)
            if (
                mine.st_uid == os.getuid()
                and mine.st_nlink  # not removed meanwhile by another job's cleanup
                and (not contents or (OUT_FOLDER in contents and os.path.isdir(Path(path, OUT_FOLDER))))
            ):
                _remove(Path(path))
                removed += 1
        finally:
            os.close(held)
    if removed:
        log.info("removed %d working folder(s) of command runs that were killed, under %s", removed, root)
    return removed


def _hold(folder: Path, wait: bool) -> int | None:
    """A descriptor of `folder` holding an exclusive flock on it (the kernel drops it when every process holding the
    descriptor is gone, killed or not); None when it is gone, not a folder, or held and `wait` is false."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _remove(folder: Path) -> None:
    """Remove a working folder with all a program left in it, its read-only folders made writable first."""
    try:
        os.chmod(folder, FOLDER_MODE)
        for parent, folders, _ in os.walk(folder):
            for name in folders:
                path = os.path.join(parent, name)
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    os.chmod(path, FOLDER_MODE)
        shutil.rmtree(folder)
    except FileNotFoundError:  # removed meanwhile
        pass


def _json_file(path: Path) -> Any:
    """A contract file's JSON, or one line naming the file (never its content)."""
    where = f"{{out}}/{path.name}"
    if not path.is_file():
        raise SynBenchError(f"{NAME}: the program wrote no {where}; the contract is in docs/generators/command.md")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SynBenchError(f"{NAME}: {where} is not UTF-8 text; write it as UTF-8 JSON") from None
    except json.JSONDecodeError as exc:
        raise SynBenchError(f"{NAME}: {where} is not valid JSON ({exc.msg} at line {exc.lineno}); fix it") from None


def _number(value: Any) -> float | None:
    """A JSON number or "inf" as a float; None for anything else."""
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        return None
    return float(value)


def _read_spent(path: Path, privacy: PrivacySpec) -> tuple[float, float]:
    """(epsilon_spent, delta) from `spent.json`; delta defaults to the spec's."""
    spent = _json_file(path)
    fix = 'write {"epsilon_spent": <the epsilon your accountant computed>, "delta": <the delta used>}'
    if not isinstance(spent, dict) or "epsilon_spent" not in spent:
        raise SynBenchError(f"{NAME}: {{out}}/{SPENT_FILE} has no field 'epsilon_spent'; {fix}")
    epsilon = _number(spent["epsilon_spent"])
    delta = _number(spent.get("delta", privacy.delta))
    for field, value in (("epsilon_spent", epsilon), ("delta", delta)):
        if value is None or value < 0:
            raise SynBenchError(f"{NAME}: {{out}}/{SPENT_FILE} field '{field}' is not a non-negative number; {fix}")
    assert epsilon is not None and delta is not None
    return epsilon, delta


def _read_synthetic(path: Path, corpus: Corpus) -> Corpus:
    """The documents of `synthetic.jsonl`, each checked against the label space; errors name the line and field."""
    where = f"{{out}}/{SYNTHETIC_FILE}"
    if not path.is_file():
        raise SynBenchError(f"{NAME}: the program wrote no {where}; the contract is in docs/generators/command.md")
    space, position = set(corpus.label_space), label_sets.positions(corpus.label_space)
    texts: list[str] = []
    labels: list[Labels] = []
    try:
        for line, record in jsonl_rows(path, shown=where):
            label = record.get("label")
            if not isinstance(record.get("text"), str):
                raise SynBenchError(f'{NAME}: {where} {line}: expected a string field "text"; fix the program')
            if (
                not isinstance(label, list)
                or not label
                or not all(isinstance(x, str) and x in space for x in label)
                or (not corpus.multi_label and len(label) != 1)
            ):
                raise SynBenchError(
                    f'{NAME}: {where} {line}: field "label" must be a list of '
                    f"{'labels' if corpus.multi_label else 'one label'} from the spec's label_space; fix the program"
                )
            texts.append(record["text"])
            labels.append(label_sets.canonical(label, position))
    except DataError as exc:  # not UTF-8, not JSON, or not an object: the reader's line, with this generator's name
        raise SynBenchError(f"{NAME}: {exc}") from None
    return Corpus.build(
        texts,
        labels,
        corpus.label_space,
        multi_label=corpus.multi_label,
        name="command-written",
        ids=[f"command-{i}" for i in range(len(texts))],
    )
