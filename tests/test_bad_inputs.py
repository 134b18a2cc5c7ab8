"""The bad-input battery: every input a user can get wrong ends in one line that names the field and the fix.

Each case runs the app's entry point (`synbench.cli.app.main`) in this process, on
a tiny dataset whose every record carries a sentinel, and checks: a non-zero
exit, exactly one `synbench: error:` line holding the expected words, no
traceback anywhere, and the sentinel in no output (stdout, stderr, and every
file the job wrote: results.json, app.log, .hydra/). The edges that need a
real process (a signal during a `generator=command` program) run one at the
end; more of them (Ctrl-C in a plugin, two jobs at once) are in
tests/test_job_identity.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import OFFLINE_ENV, SENTINEL, run_app, write_jsonl, written_bytes
from synbench.job.lock import ALREADY_RUNNING_EXIT

AS_ROOT = pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every input file of the battery, each record holding the sentinel; the working folder is tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SYNBENCH_SECRET_FILE", str(tmp_path / "secret" / "resume.key"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("SYNBENCH_DEBUG", raising=False)
    s = SENTINEL
    rows = [{"text": f"patient {i} {s} reports headache", "label": ["pos" if i % 2 else "neg"]} for i in range(40)]
    folder = tmp_path / "data"
    folder.mkdir()
    paths = {
        "train": write_jsonl(folder / "train.jsonl", rows[:30]),
        "eval": write_jsonl(folder / "eval.jsonl", rows[30:]),
        "folder": folder,
        "out": tmp_path / "out",
    }
    paths["a_file"] = folder / "not_a_folder"
    paths["a_file"].write_text("a file\n")
    paths["read_only"] = tmp_path / "read_only"
    paths["read_only"].mkdir()
    paths["read_only"].chmod(stat.S_IRUSR | stat.S_IXUSR)
    paths["latin1"] = folder / "latin1.jsonl"
    lines = [json.dumps(r) for r in rows[:30]]
    lines[6] = lines[6].replace("headache", "caf\u00e9")
    paths["latin1"].write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    paths["long"] = write_jsonl(
        folder / "long.jsonl", [*rows[:3], {"text": f"{s} " + "x" * 1_000_001, "label": ["pos"]}, *rows[3:30]]
    )
    paths["bad_json"] = folder / "bad_json.jsonl"
    paths["bad_json"].write_text(json.dumps(rows[0]) + "\n" + f'{{"text": "{s}", "label": {s}}}\n')
    paths["not_object"] = folder / "not_object.jsonl"
    paths["not_object"].write_text(json.dumps(rows[0]) + "\n" + json.dumps([s, "pos"]) + "\n")
    paths["duplicate_id"] = write_jsonl(
        folder / "duplicate_id.jsonl", [{**r, "id": f"{s}-{i % 15}"} for i, r in enumerate(rows[:30])]
    )
    paths["empty"] = folder / "empty.jsonl"
    paths["empty"].write_text("")
    paths["empty_text"] = write_jsonl(folder / "empty_text.jsonl", [*rows[:5], {"text": "  ", "label": ["pos"]}])
    paths["no_label"] = write_jsonl(folder / "no_label.jsonl", [*rows[:5], {"text": f"{s} note", "label": []}])
    paths["two_labels"] = write_jsonl(folder / "two_labels.jsonl", [*rows[:5], {"text": s, "label": ["pos", "neg"]}])
    paths["text_labels"] = write_jsonl(
        folder / "text_labels.jsonl", [{"text": r["text"], "label": f"{s} label {i}"} for i, r in enumerate(rows)]
    )
    paths["abc"] = write_jsonl(folder / "abc.jsonl", [{**r, "label": ["abc"[i % 3]]} for i, r in enumerate(rows)])
    paths["csv"] = folder / "ragged.csv"
    paths["csv"].write_text("text,label\n" + "".join(f'"{s} {i}",pos\n' for i in range(5)) + f"{s},pos,extra\n")
    paths["txt"] = folder / "train.txt"
    paths["txt"].write_text(f"{s}\n")
    paths["plugin"] = tmp_path / "raising_plugin.py"
    paths["plugin"].write_text(RAISING_PLUGIN)
    paths["flagged_plugin"] = tmp_path / "flagged_plugin.py"
    paths["flagged_plugin"].write_text(FLAGGED_PLUGIN)
    paths["config_dir"] = tmp_path / "conf"  # a user's own config folder (--config-dir), values as a YAML file has them
    (paths["config_dir"] / "experiment").mkdir(parents=True)
    for name, text in USER_EXPERIMENTS.items():
        (paths["config_dir"] / "experiment" / f"{name}.yaml").write_text(f"# @package _global_\n{text}")
    return paths


USER_EXPERIMENTS = {
    "overflow": "eps: 1e400\n",
    "bool2": "privacy:\n  secure_mode: 2\n",
    "fine": "eps: 2.0\nprivacy:\n  secure_mode: on\n",
    "unparsable": "eps: [2.0\n",
}


# A generator that raises with the document's text in its message, as a careless plugin would.
RAISING_PLUGIN = """
from synbench.api import FitReport, Generator, register


@register(Generator, "raising")
class RaisingGenerator(Generator):
    def fit(self, corpus, privacy, seed):
        raise ValueError(f"cannot handle {corpus.texts[0]!r}")

    def sample(self, n, label_counts=None):
        raise NotImplementedError

"""
# A generator whose options are typed by its constructor only (schema.signature_options), as a third party's are.
FLAGGED_PLUGIN = """
from synbench.api import Generator, register


@register(Generator, "flagged")
class FlaggedGenerator(Generator):
    def __init__(self, greedy: bool = False):
        self.greedy = greedy

    def fit(self, corpus, privacy, seed):
        raise NotImplementedError

    def sample(self, n, label_counts=None):
        raise NotImplementedError
"""


def base_args(paths: dict[str, Path]) -> list[str]:
    return [
        "dataset=files",
        f"dataset.train={paths['train']}",
        f"dataset.eval={paths['eval']}",
        "dataset.name=tiny",
        "generator=copy",
        "tracking=none",
        "metrics=[]",
        f"output_root={paths['out']}",
    ]


def key_of(arg: str) -> str:
    return arg.partition("=")[0].lstrip("+~")


def command(case: list[str], paths: dict[str, Path]) -> list[str]:
    """The battery's base command with the case's overrides (a key the case sets is dropped from the base)."""
    args = [arg.format(**{k: str(v) for k, v in paths.items()}) for arg in case]
    keys = {key_of(a) for a in args}
    flags = [a for a in args if a.startswith("-")]
    return [*flags, *(a for a in base_args(paths) if key_of(a) not in keys), *(a for a in args if a not in flags)]


def no_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.netrc with a W&B key


# A program that never runs: the cases that use it are refused before the job starts.
COMMAND = 'generator.command=[python,my_gen.py,"{{spec}}","{{out}}"]'
# (id, overrides, words the one error line must hold); `{name}` is a path of the `inputs` fixture.
REFUSED: list[tuple[Any, ...]] = [
    # the command line, before Hydra composes anything
    ("unknown key +epsilon", ["+epsilon=0.5"], ["'+epsilon' is not a config key", "did you mean eps?"]),
    ("unknown key epsilon", ["epsilon=0.5"], ["did you mean eps?"]),
    ("unknown key +foo", ["+foo=1"], ["'+foo' is not a config key", "the top-level keys are"]),
    ("a key given twice", ["eps=1", "eps=2"], ["eps is given twice", "give it once"]),
    ("a group given twice", ["generator=copy", "generator=public"], ["generator is given twice"]),
    ("~eps", ["~eps"], ["'~eps' deletes eps", "set eps=<value>"]),
    ("~seed", ["~seed"], ["'~seed' deletes seed"]),
    ("generator=cpy", ["generator=cpy"], ["generator=cpy is not an option", "did you mean copy?", "dpgen"]),
    ("dataset=mimc", ["dataset=mimc"], ["did you mean mimic?", "drugreview"]),
    ("metrics=[utility,mauv]", ["metrics=[utility,mauv]"], ["metrics=mauv", "did you mean mauve?"]),
    ("tracking=wandbb", ["tracking=wandbb"], ["did you mean wandb?"]),
    ("backend=opena", ["generator=augpe", "generator/backend=opena"], ["did you mean openai?", "local"]),
    ("sweep outside output_root", ["sweep=../../x"], ["sweep=../../x would write outside output_root"]),
    ("sweep absolute", ["sweep=/tmp/x"], ["sweep=/tmp/x would write outside output_root"]),
    ("an override that does not parse", ["eps=[1"], ["cannot parse the command line", "key=value"]),
    ("an unknown option", ["--foo"], ["unrecognized arguments: --foo", "--hydra-help lists the options"]),
    ("a URL with credentials", ["generator=augpe", "generator.backend.base_url=http://u:pw@h/v1"], ["credentials"]),
    # values, checked before anything runs
    ("eps=0", ["eps=0"], ["eps=0.0 is invalid", "eps=inf"]),  # eps is a float in the schema
    ("eps=-1", ["eps=-1"], ["eps=-1.0 is invalid"]),
    ("eps=nan", ["eps=nan"], ["eps=nan is invalid"]),
    ("eps=abc", ["eps=abc"], ["override eps=abc", "'abc' of type 'str' could not be converted to Float"]),
    ("eps=1e300", ["eps=1e300"], ["is above 100", "eps<=100"]),
    ("eps=1e6", ["eps=1e6"], ["eps=1000000.0 is above 100"]),
    ("eps=1e400", ["eps=1e400"], ["eps: a number in 'eps=1e400' is too large for a float", "write inf itself"]),
    ("eps='1e400'", ["eps='1e400'"], ["a number in 'eps='1e400'' is too large"]),
    ("eps=-1e400", ["eps=-1e400"], ["a number in 'eps=-1e400' is too large"]),
    ("delta=1.5", ["delta=1.5"], ["delta=1.5 is invalid", "between 0 and 1"]),
    ("delta=0", ["delta=0"], ["delta=0 is invalid"]),
    ("delta=abc", ["delta=abc"], ["delta='abc' is unknown", "1/N^2"]),
    ("delta=0.5", ["delta=0.5"], ["at least 1/N", "privacy.allow_large_delta=true"]),
    ("accountant=foo", ["accountant=foo"], ["accountant='foo' is unknown", "prv"]),
    ("seed=-1", ["seed=-1"], ["seed=-1 is invalid", "non-negative integer"]),
    ("seed=abc", ["seed=abc"], ["override seed=abc", "could not be converted to Integer"]),
    ("n_synthetic=-5", ["task.n_synthetic=-5"], ["task.n_synthetic=-5 is invalid"]),
    ("n_synthetic=0", ["task.n_synthetic=0"], ["task.n_synthetic=0 is invalid"]),
    ("n_synthetic=abc", ["task.n_synthetic=abc"], ["task.n_synthetic", "could not be converted to Integer"]),
    ("n_synthetic ceiling", ["task.n_synthetic=1000000000000"], ["task.n_synthetic=1000000000000", "at most"]),
    # every n_synthetic key has the one check (the audit's section is typed when its task starts, before any data)
    ("audit.n_synthetic=0", ["task=audit", "audit.n_synthetic=0"], ["audit.n_synthetic=0 is invalid", "or null for"]),
    (  # a release dataset's folder is looked for before the task imports its scoring code
        "a release folder that is not there",
        ["dataset=psytar", "dataset.train=null", "dataset.eval=null", "dataset.data_dir={folder}/missing"],
        ["dataset.data_dir", "missing' is not a folder", "set it to the PsyTAR download folder"],
    ),
    ("noise_seed=-3", ["privacy.noise_seed=-3"], ["privacy.noise_seed=-3", "non-negative integer"]),
    ("cache_dir outside", ["cache_dir=/tmp/elsewhere"], ["cache_dir=/tmp/elsewhere is outside output_root"]),
    ("unknown generator plugin", ["generator._plugin_=nosuchgen"], ["unknown generator plugin 'nosuchgen'"]),
    ("unknown privacy key", ["+privacy.noise=1"], ["privacy.noise", "not in 'PrivacyOptions'", "remove or rename it"]),
    ("tracking.mode=bogus", ["tracking=wandb", "tracking.mode=bogus"], ["tracking.mode='bogus' is unknown"]),
    ("tracking online without a key", ["tracking=wandb", "tracking.mode=online"], ["WANDB_API_KEY", "offline"]),
    ("??? of the openai backend", ["generator=augpe", "generator/backend=openai"], ["'generator.backend.model'"]),
    (  # the experiment's dataset paths (the base command's own dataset files would leave data_root unread)
        "??? of a paper experiment",
        [
            "+experiment=paper_psytar_dpgen",
            "generator=dpgen",
            "dataset.train=${{data_root}}/psytar/train.jsonl",
            "dataset.eval=${{data_root}}/psytar/test.jsonl",
        ],
        ["config value 'data_root'"],
    ),
    (
        "a paper experiment's keys on another generator",
        ["+experiment=paper_psytar_dpgen", "generator=copy"],
        ["Key 'epochs' not in 'CopyGeneratorOptions'"],
    ),
    # a control under a finite eps, in a task that does not test the claim
    ("copy eps=4", ["eps=4"], ["generator=copy is a control and does not apply eps=4", "set eps=inf"]),
    ("public eps=1", ["generator=public", "eps=1"], ["generator=public is a control", "sweep it with -m"]),
    # a plugin's options, typed before any data is read (a list given as a word)
    ("a scalar list", ["generator=dpgen", "generator.lora.target_modules=q_proj"], ["target_modules=[q_proj]"]),
    # the filter's options, typed before any data is read (the filter runs after the generator)
    ("filter.num_threads=0", ["filter=pyes_pno", "filter.num_threads=0"], ["filter.num_threads=0 must be at least 1"]),
    (
        "a filter prompt with an unknown placeholder",
        ["filter=pyes_pno", 'filter.prompt="{{text}} {{drug}}"'],
        ["filter.prompt has an unknown placeholder {drug}", "{text} (required)"],
    ),
    # the audit's options, refused where they are set
    ("audit.eps_grid=[-1]", ["task=audit", "audit.eps_grid=[-1]"], ["audit.eps_grid=[-1.0]", "positive finite"]),
    ("audit.min_count=-1", ["task=audit", "audit.min_count=-1"], ["audit.min_count=-1", "at least 0"]),
    ("audit.lof_neighbors=0", ["task=audit", "audit.lof_neighbors=0"], ["audit.lof_neighbors=0", "positive whole"]),
    ("audit.lof_contamination=abc", ["task=audit", "audit.lof_contamination=abc"], ["audit.lof_contamination='abc'"]),
    ("model_audit.min_count=-1", ["task=model_audit", "model_audit.min_count=-1"], ["model_audit.min_count=-1"]),
    # where the job writes
    ("output_root=/proc/foo", ["output_root=/proc/foo"], ["/proc/foo", "output_root"]),
    ("output_root is a file", ["output_root={a_file}"], ["not_a_folder", "output_root"]),
    ("output_root read-only", ["output_root={read_only}/out"], ["read_only", "output_root"], AS_ROOT),
    ("hydra.run.dir outside", ["hydra.run.dir={folder}/elsewhere"], ["elsewhere is not inside output_root"]),
    # a sweep: every point validated before its first job runs
    ("sweep eps=1,abc", ["-m", "eps=1,abc"], ["eps=abc", "could not be converted to Float"]),
    (
        "sweep a scalar list",
        ["-m", "generator=dpgen", "generator.lora.target_modules=q_proj", "seed=0,1"],
        ["is not a list"],
    ),
    ("sweep seed=0,-1", ["-m", "seed=0,-1"], ["seed=-1 is invalid"]),
    ("sweep delta", ["-m", "delta=1e-5,2"], ["delta=2 is invalid"]),
    ("sweep eps=1,1e400", ["-m", "eps=1,1e400"], ["a number in 'eps=1,1e400' is too large"]),
    # data files
    ("text_field", ["dataset.text_field=body"], ["no field 'body'", "dataset.text_field="]),
    ("label_field", ["dataset.label_field=tag"], ["no field 'tag'", "dataset.label_field="]),
    ("id_field", ["+dataset.id_field=pid"], ["no field 'pid'", "dataset.id_field="]),
    ("a missing file", ["dataset.train={folder}/missing.jsonl"], ["missing.jsonl' does not exist"]),
    ("a directory", ["dataset.train={folder}"], ["is a directory", "dataset.train="]),
    ("non-UTF-8", ["dataset.train={latin1}"], ["latin1.jsonl line 7", "UTF-8"]),
    ("a record over max_chars", ["dataset.train={long}"], ["long.jsonl line 4", "dataset.max_chars"]),
    ("max_chars lowered", ["dataset.max_chars=10"], ["train.jsonl line 1", "dataset.max_chars"]),
    ("bad JSON", ["dataset.train={bad_json}"], ["bad_json.jsonl line 2: not valid JSON"]),
    ("a JSON list line", ["dataset.train={not_object}"], ["not_object.jsonl line 2: expected a JSON object"]),
    ("duplicate ids", ["dataset.train={duplicate_id}", "+dataset.id_field=id"], ["ids must be unique"]),
    ("an empty file", ["dataset.train={empty}"], ["empty.jsonl has no records"]),
    ("an empty text", ["dataset.train={empty_text}"], ["empty_text.jsonl line 6", "is empty"]),
    ("no label", ["dataset.train={no_label}"], ["no_label.jsonl line 6", "at least one label"]),
    ("two labels, single-label", ["dataset.train={two_labels}"], ["has 2 labels", "dataset.multi_label=true"]),
    ("labels that look like text", ["dataset.train={text_labels}", "dataset.label_space=null"], ["label_space"]),
    ("a label outside the space", ["dataset.label_space=[neg,other]"], ["not in the configured label space"]),
    ("a ragged CSV", ["dataset.train={csv}"], ["ragged.csv line 7", "the header has 2"]),
    ("an unknown suffix", ["dataset.train={txt}"], ["cannot tell the format", "dataset.format"]),
    ("dataset.format=xml", ["dataset.format=xml"], ["dataset.format='xml' is not one of"]),
    ("a plugins file that is missing", ["plugins=[{folder}/nope.py]"], ["plugins[0]", "does not exist"]),
    # a plugin that raises with a record in its message
    (
        "a plugin's exception",
        ["plugins=[{plugin}]", "generator._plugin_=raising"],
        ["generator plugin 'raising' raised ValueError at raising_plugin.py:8", "SYNBENCH_DEBUG=1"],
    ),
    # typed values (the schema: synbench/core/schema.py)
    (
        "allow_inferred_label_space=no",
        ["dataset.train={text_labels}", "dataset.label_space=null", "dataset.allow_inferred_label_space=no"],
        ["label_space"],
    ),
    ("allow_large_delta=no", ["delta=0.5", "privacy.allow_large_delta=no"], ["privacy.allow_large_delta=true"]),
    ("multi_label=maybe", ["dataset.multi_label=maybe"], ["dataset.multi_label"]),
    (
        "label_space=abc",
        ["dataset.train={abc}", "dataset.eval=null", "dataset.label_space=abc"],
        ["dataset.label_space"],
    ),
    ("label_space duplicate", ["dataset.label_space=[neg,pos,neg]"], ["dataset.label_space", "neg"]),
    ("max_length=0", ["dataset.max_length=0"], ["dataset.max_length"]),
    ("model.max_length=abc", ["model.max_length=abc"], ["model.max_length", "not in 'ModelSpec'"]),
    ("model.dtype=float64", ["generator=public", "model.dtype=float64"], ["model.dtype='float64' is unknown"]),
    ("encoder.normalize=maybe", ["encoder.normalize=maybe"], ["encoder.normalize", "not a valid bool"]),
    ("save_synthetic=maybe", ["task.save_synthetic=maybe"], ["task.save_synthetic", "not a valid bool"]),
    ("filter.keep_share=most", ["filter=pyes_pno", "filter.keep_share=most"], ["filter.keep_share"]),
    # checked where they are set, whichever part of the job reads them (and whether it reads them in this job)
    ("long_documents=squash", ["dataset.long_documents=squash"], ["dataset.long_documents='squash' is not one of"]),
    ("eval_fraction=1.5 beside an eval split", ["dataset.eval_fraction=1.5"], ["dataset.eval_fraction=1.5 must be"]),
    ("lock_wait_s=-1", ["lock_wait_s=-1"], ["lock_wait_s=-1.0 is invalid", "0 or more"]),
    (
        "a scalar for a list",
        ["generator=dpgen", "generator.lora.target_modules=q_proj"],
        ["generator.lora.target_modules='q_proj' is not a list", "generator.lora.target_modules=[q_proj]"],
    ),
    ("task.format=xlsx", ["task=export", "task.format=xlsx"], ["task.format='xlsx' must be one of csv, parquet"]),
    ("task.confidence=2 (no sweep yet)", ["task=report", "task.confidence=2"], ["task.confidence=2.0 must be between"]),
    ("sweep task.format=xlsx", ["-m", "task=export", "task.format=xlsx"], ["task.format='xlsx' must be one of"]),
    ("sweep eval_fraction=0.2,1.5", ["-m", "dataset.eval_fraction=0.2,1.5"], ["dataset.eval_fraction=1.5 must be"]),
    # a bool takes true/false, yes/no, on/off and nothing else (OmegaConf alone reads 2 and y as true)
    ("secure_mode=2", ["privacy.secure_mode=2"], ["privacy.secure_mode=2 is not a bool", "true or false"]),
    ("secure_mode=y", ["privacy.secure_mode=y"], ["privacy.secure_mode='y' is not a bool"]),
    ("secure_mode=0", ["privacy.secure_mode=0"], ["privacy.secure_mode=0 is not a bool"]),
    ("log_private_stats=2", ["tracking.log_private_stats=2"], ["tracking.log_private_stats=2 is not a bool"]),
    ("sweep multi_label=no,n", ["-m", "dataset.multi_label=no,n"], ["dataset.multi_label='n' is not a bool"]),
    # values a YAML file gives (the user's own config folder), which Hydra has read as inf and true
    (
        "a YAML file's eps: 1e400",
        ["--config-dir={config_dir}", "+experiment=overflow"],
        ["experiment/overflow.yaml line 2: eps: 1e400 is too large for a float", "write inf itself"],
    ),
    (
        "a YAML file's secure_mode: 2",
        ["--config-dir={config_dir}", "+experiment=bool2"],
        ["experiment/bool2.yaml line 3: privacy.secure_mode='2' is not a bool", "write true or false"],
    ),
    (  # read for its keys before Hydra composes anything: one line naming the file and line, not an internal error
        "a YAML file that does not parse",
        ["--config-dir={config_dir}", "+experiment=unparsable"],
        ["experiment/unparsable.yaml line 3: not valid YAML", "fix the file"],
    ),
    (  # a plugin's options are typed when it is built: a sweep types each point's before its first job
        "sweep a plugin's int option=abc",
        ["-m", "generator=example", "eps=1,4", "generator.max_tokens_per_doc=abc"],
        ["generator.max_tokens_per_doc: Value 'abc'", "could not be converted to Integer"],
    ),
    (
        "sweep a plugin's bool option=2",
        ["-m", "plugins=[{flagged_plugin}]", "generator._plugin_=flagged", "+generator.greedy=2", "seed=0,1"],
        ["generator.greedy=2 is not a bool"],
    ),
    (
        "a plugin's bool option=2",
        ["plugins=[{flagged_plugin}]", "generator._plugin_=flagged", "+generator.greedy=2"],
        ["generator.greedy=2 is not a bool"],
    ),
    # a command program's and the public control's keys, and every torch thread count, refused before any work
    ("no generator.command", ["generator=command"], ["'generator.command' is not set", "pass generator.command="]),
    (
        "generator.command=[]",
        ["generator=command", "generator.command=[]"],
        ["generator.command must be a non-empty list", 'e.g. generator.command=[python,my_gen.py,"{spec}","{out}"]'],
    ),
    (
        "a generator.workdir that does not exist",
        ["generator=command", COMMAND, "generator.workdir={folder}/nowhere"],
        ["generator.workdir=", "nowhere does not exist", "leave generator.workdir unset"],
    ),
    (
        "a generator.log_dir inside output_root",
        ["generator=command", COMMAND, "generator.log_dir={out}/logs"],
        ["generator.log_dir=", "logs is inside output_root=", "outside output_root"],
    ),
    (
        "a public prompt with an unknown placeholder",
        ["generator=public", "generator.prompt='Write a {{label}} note on {{drug}}'"],
        ["generator.prompt has an unknown placeholder {drug}", "{label} (required) and {domain}"],
    ),
    (
        "a public prompt with an unmatched brace",
        ["generator=public", "generator.prompt='Write a {{label}} note {{'"],
        ["generator.prompt has an unmatched brace", "write a literal brace as {{ or }}"],
    ),
    ("generator.num_threads=-2", ["generator=public", "generator.num_threads=-2"], ["generator.num_threads=-2 must"]),
    (
        "generator.num_threads=0",
        ["generator=public", "generator.num_threads=0"],
        ["generator.num_threads=0 must be at least 1", "or null for PyTorch's default"],
    ),
    ("dpgen num_threads=0", ["generator=dpgen", "generator.num_threads=0"], ["generator.num_threads=0 must be"]),
    (
        "generator.backend.num_threads=0",
        ["generator=augpe", "generator.backend.num_threads=0"],
        ["generator.backend.num_threads=0 must be at least 1"],
    ),
    (
        "contamination.mink.num_threads=0",
        ["task=contamination", "contamination.mink.num_threads=0"],
        ["contamination.mink.num_threads=0 must be at least 1"],
    ),
    (
        "model_audit.head.num_threads=0",
        ["task=model_audit", "model_audit.head.num_threads=0"],
        ["model_audit.head.num_threads=0 must be at least 1"],
    ),
    (
        "sweep generator.num_threads=1,0",
        ["-m", "generator=public", "generator.num_threads=1,0"],
        ["generator.num_threads=0 must be at least 1"],
    ),
]


def cases(table: list[tuple[Any, ...]]) -> list[Any]:
    """A case table as parameters: its id first; elements after the third are its marks."""
    return [pytest.param(*case[:3], id=case[0], marks=list(case[3:])) for case in table]


@pytest.mark.parametrize(
    ("name", "case", "expected"),
    cases(REFUSED),
)
def test_a_bad_input_is_refused_with_one_line(
    name: str,
    case: list[str],
    expected: list[str],
    inputs: dict[str, Path],
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    no_key(monkeypatch, tmp_path)
    outcome = run_app(command(case, inputs), capfd)
    everything = outcome.stdout + outcome.stderr
    assert outcome.code != 0, everything
    assert "Traceback" not in everything, everything
    assert len(outcome.errors) == 1, everything
    assert all(word in outcome.errors[0] for word in expected), outcome.errors[0]
    assert SENTINEL not in everything
    written = written_bytes(inputs["out"]) if inputs["out"].exists() else b""
    assert SENTINEL.encode() not in written and b"Traceback" not in written
    if "-m" in case:  # validated before the first job: nothing ran
        assert not list(inputs["out"].rglob("results.json"))


@pytest.mark.parametrize(
    "late", [["-m", "seed=0,1"], ["--cfg", "job", "seed=1"]], ids=["-m after an override", "--cfg after an override"]
)
def test_an_option_after_an_override_is_one_line(
    late: list[str], inputs: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    """Not Hydra's 7-line argparse usage naming __main__.py: one line that says to put options first."""
    outcome = run_app([*base_args(inputs), *late], capfd)
    assert outcome.code == 2 and len(outcome.stderr.strip().splitlines()) == 1, outcome.stderr
    assert (
        f"the option {late[0]} comes after the override" in outcome.errors[0]
        and "put options first" in outcome.errors[0]
    )
    assert "usage:" not in outcome.stderr and not inputs["out"].exists()


# (id, overrides, the values the job must have run with: results.json key path -> value)
RUN: list[tuple[Any, ...]] = [
    ("eps=1.0", ["generator=example", "eps=1.0"], {"epsilon": 1.0}),
    ("eps=1e0", ["generator=example", "eps=1e0"], {"epsilon": 1.0}),
    ("eps=inf", ["eps=inf"], {"epsilon": "inf"}),
    ("delta rule", ["delta='1/(N ln N)'"], {"config.delta": "1/(N ln N)"}),
    ("n_synthetic=7", ["task.n_synthetic=7"], {"generation.n_synthetic": 7}),
    ("seed=3", ["seed=3"], {"seed": 3}),
    ("a tiny eps is not the plugin's fault", ["generator=example", "eps=1e-9"], {"epsilon": 1e-9}),
    ("secure_mode=off", ["privacy.secure_mode=off"], {"config.privacy.secure_mode": False}),
    ("log_private_stats=no", ["tracking.log_private_stats=no"], {"config.tracking": None}),
    ("multi_label=no", ["dataset.multi_label=no"], {"config.dataset.multi_label": False}),
    ("save_synthetic=no", ["task.save_synthetic=no"], {"config.task.save_synthetic": False}),
    ("save_synthetic=Off", ["task.save_synthetic=Off"], {"config.task.save_synthetic": False}),
    (
        "a YAML file's eps and secure_mode: on",
        ["--config-dir={config_dir}", "+experiment=fine"],
        {"epsilon": 2.0, "config.privacy.secure_mode": True},
    ),
]


def _at(results: dict[str, Any], path: str) -> Any:
    value: Any = results
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


@pytest.mark.parametrize(
    ("name", "case", "ran"),
    cases(RUN),
)
def test_an_edge_input_runs_with_the_values_it_names(
    name: str,
    case: list[str],
    ran: dict[str, Any],
    inputs: dict[str, Path],
    capfd: pytest.CaptureFixture[str],
) -> None:
    outcome = run_app(command(case, inputs), capfd)
    everything = outcome.stdout + outcome.stderr
    assert outcome.code == 0 and "Traceback" not in everything, everything
    [path] = inputs["out"].rglob("results.json")
    results = json.loads(path.read_text())
    assert results["status"] == "complete"
    for key, value in ran.items():
        assert _at(results, key) == value, key
    assert SENTINEL not in everything
    released = (
        {p for p in inputs["out"].rglob("synthetic.jsonl")} if "generator=copy" in command(case, inputs) else set()
    )
    assert SENTINEL.encode() not in written_bytes(inputs["out"], skip=released)  # copy releases its input by design


def test_a_control_says_what_it_did_not_do(inputs: dict[str, Path], capfd: pytest.CaptureFixture[str]) -> None:
    """The copy control under a finite eps of a sweep (its reference row there) and asked for more documents than the
    private set holds: one warning line each, and the job's summary line and the report's tables show its eps as
    "control", not 4. A single job that sets it is refused (the REFUSED table)."""
    from synbench.report.build import write_report

    outcome = run_app(command(["-m", "eps=4", "task.n_synthetic=100"], inputs), capfd)
    assert outcome.code == 0, outcome.stderr
    lines = (outcome.stdout + outcome.stderr).splitlines()
    assert len([line for line in lines if "is a control and does not apply eps=4" in line]) == 1
    assert len([line for line in lines if "task.n_synthetic=100 is more than the 30 private documents" in line]) == 1
    assert any(
        line.startswith("benchmark copy on tiny: eps=control (4 not applied), epsilon_spent=inf") for line in lines
    )
    markdown, _ = write_report(inputs["out"] / "default", 0.95)
    rows = [line for line in markdown.read_text().splitlines() if line.startswith("| copy")]
    assert rows and all([cell.strip() for cell in row.split("|")][2] == "control (4 not applied)" for row in rows), rows


REPO = Path(__file__).resolve().parents[1]
CORE_CONF = REPO / "conf"
# the config folders this repository ships: its own and its plugin packages' (another installed plugin's options show
# in --help too, but are not this project's to document)
SHIPPED_CONF = [CORE_CONF, *REPO.glob("plugins/*/*/conf")]


def options_in(folders: list[Path], group: str) -> set[str]:
    """The options of a config group that these config folders hold (one YAML file each)."""
    return {path.stem for folder in folders for path in (folder / group).glob("*.yaml")}


def test_help_describes_synbench_and_its_groups_not_the_config(capfd: pytest.CaptureFixture[str]) -> None:
    """--help: a paragraph, three example commands, the groups a user picks (no internal schema/* group, no config
    dump), each option this repository ships documented in docs/config.md (whatever other plugins are installed);
    the README's set-up shows `make test` and `.venv/bin/python`."""
    outcome = run_app(["--help"], capfd)
    lines = outcome.stdout.splitlines()
    assert outcome.code == 0 and not outcome.stderr and lines[0].startswith("SynBench benchmarks")
    assert len([line for line in lines if line.startswith("  python -m synbench")]) == 3
    assert "--cfg job" in outcome.stdout and len(lines) < 60 and "schema" not in outcome.stdout
    config_md = (REPO / "docs" / "config.md").read_text()
    groups = dict(
        line.strip().split(": ", 1) for line in lines[lines.index(next(x for x in lines if "Config groups" in x)) + 1 :]
    )
    assert "generator" in groups and "schema/generator" not in groups
    listed = {group: set(options.split(", ")) for group, options in groups.items()}
    assert all(options_in([CORE_CONF], group) <= options for group, options in listed.items())
    undocumented = [
        f"{g}={o}"
        for g, options in listed.items()
        for o in sorted(options & options_in(SHIPPED_CONF, g))
        if f"`{o}`" not in config_md
    ]
    assert undocumented == []
    assert "| `lock_wait_s` |" in config_md and "| `data_root` |" in config_md
    readme = (REPO / "README.md").read_text()
    assert "\nmake test " in readme and readme.index(".venv/bin/python") < readme.index("\npython -m synbench ")


def test_the_battery_has_at_least_60_inputs() -> None:
    assert len(REFUSED) + len(RUN) >= 60
    assert len({case[0] for case in [*REFUSED, *RUN]}) == len(REFUSED) + len(RUN)


# A `generator=command` program that says where it runs, then takes 20 s before writing a complete output.
SLOW_PROGRAM = """
import json, os, signal, sys, time

if os.environ.get("SLOW_PROGRAM_IGNORES_SIGTERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
spec_path, out = sys.argv[1], sys.argv[2]
with open(os.environ["SLOW_PROGRAM_STARTED"], "w") as f:
    json.dump({"pid": os.getpid(), "spec": spec_path}, f)
time.sleep(20)
spec = json.load(open(spec_path))
with open(os.path.join(out, "synthetic.jsonl"), "w") as f:
    for i in range(spec["n_synthetic"]):
        f.write(json.dumps({"text": f"note {i}", "label": [spec["label_space"][0]]}) + "\\n")
json.dump({"epsilon_spent": "inf"}, open(os.path.join(out, "spent.json"), "w"))
"""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    ("sig", "inherited", "stubborn"),
    [
        (signal.SIGINT, signal.SIG_DFL, False),
        (signal.SIGINT, signal.SIG_IGN, False),
        (signal.SIGTERM, signal.SIG_DFL, False),
        (signal.SIGINT, signal.SIG_DFL, True),
    ],
    ids=[
        "SIGINT",
        "SIGINT, ignored as by a shell's background job",
        "SIGTERM",
        "SIGINT twice, to a program that ignores SIGTERM",
    ],
)
def test_a_signal_stops_a_command_program_at_once(
    sig: signal.Signals, inherited: Any, stubborn: bool, inputs: dict[str, Path], tmp_path: Path
) -> None:
    """Ctrl-C (SIGINT to the process group) or SIGTERM while the program runs: the job ends within 5 s with exit 130
    and one line, the program's session stopped (killed after a grace when it ignores SIGTERM, even with a second
    Ctrl-C meanwhile), its folder (the private set) removed, and no complete result."""
    program, started = tmp_path / "slow_program.py", tmp_path / "started.json"
    program.write_text(SLOW_PROGRAM)
    argv = f"{sys.executable},{program}" + ',"{{spec}}","{{out}}"'  # `command` formats {{...}} to {...}
    case = ["generator=command", f"generator.command=[{argv}]", "eps=inf"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "synbench", *command(case, inputs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            **OFFLINE_ENV,
            "SLOW_PROGRAM_STARTED": str(started),
            **({"SLOW_PROGRAM_IGNORES_SIGTERM": "1"} if stubborn else {}),
        },
        start_new_session=True,  # its own process group, which the signal goes to as a terminal's Ctrl-C does
        preexec_fn=_ignore_sigint if inherited is signal.SIG_IGN else None,
    )
    deadline = time.monotonic() + 120
    while not started.exists() or not started.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    running = json.loads(started.read_text())
    sent = time.monotonic()
    os.killpg(proc.pid, sig)
    if stubborn:
        time.sleep(0.5)  # the job is stopping the program now: a second Ctrl-C must not leave it running
        os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert proc.returncode == 130 and took < 5, (took, out + err)
    assert err.strip().splitlines() == ["synbench: interrupted; the same command resumes"], err
    with pytest.raises(ProcessLookupError):
        os.kill(running["pid"], 0)
    assert not Path(running["spec"]).parent.exists()
    [results] = inputs["out"].rglob("results.json")
    assert json.loads(results.read_text())["status"] == "failed"
    assert not list(inputs["out"].rglob("synthetic.jsonl"))
    assert SENTINEL not in out + err and SENTINEL.encode() not in written_bytes(inputs["out"])


def test_a_job_already_running_elsewhere_stops_with_its_own_code(
    inputs: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    """The same job, its folder held by another process past lock_wait_s: not an error of the job but its own line
    and exit code, and nothing of this process written into the other's folder."""
    assert run_app(command(["eps=inf"], inputs), capfd).code == 0
    [done] = inputs["out"].rglob("results.json")
    done.unlink()  # the job is to run again, and another process holds its folder
    with (done.parent / ".lock").open("r+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        key = json.loads(held.read())["job_key"]
        held.seek(0)
        held.write(json.dumps({"pid": 4242, "job_key": key}))
        held.truncate()
        held.flush()
        before = time.monotonic()
        outcome = run_app(command(["eps=inf", "lock_wait_s=0.5"], inputs), capfd)  # the same job, told to wait
        waited = time.monotonic() - before
    assert outcome.code == ALREADY_RUNNING_EXIT and not outcome.errors, outcome.stderr
    [line] = outcome.stderr.strip().splitlines()
    assert line.startswith("synbench: already running: the job folder") and "is locked by pid 4242" in line
    assert "lock_wait_s" in line and waited >= 0.5
    assert not done.exists()


@pytest.mark.parametrize("task", ["report", "export"])
def test_a_task_on_a_sweep_that_never_ran_leaves_no_folder(
    task: str, inputs: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    """The one-line error is the whole answer: no `<sweep>/<task>/...` folder is left to be taken for the sweep."""
    outcome = run_app([f"task={task}", "sweep=never_ran", f"output_root={inputs['out']}"], capfd)
    assert outcome.code == 2 and len(outcome.errors) == 1, outcome.stderr
    assert "no results.json under" in outcome.errors[0] and "sweep=<name>" in outcome.errors[0]
    assert not inputs["out"].exists() or not any(inputs["out"].iterdir())
