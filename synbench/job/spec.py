"""A job's frozen description and typed config: what it computes, its key, and the checks of its top-level settings.

`JobSpec` is the serialisable description of one job (HELM's RunSpec idea):
the resolved config minus where-to-log settings. Its hash identifies the job,
so an interrupted sweep re-run skips jobs whose results are already complete
and re-runs the rest. `JobConfig` is the typed config a task receives: the
spec and every setting, built once from Hydra's composed config, the one
place that reads it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from omegaconf import DictConfig, OmegaConf

from synbench.core import schema
from synbench.core.credentials import check_no_credentials
from synbench.core.errors import ConfigError, check_n_synthetic
from synbench.core.files import to_json
from synbench.core.privacy import NoiseSource, PrivacySpec, check_accountant, check_delta_setting, check_epsilon

# Keys that change where a job logs, not what it computes.
# `data_root` only feeds the dataset's paths, which the description holds (and it is `???` where no experiment sets it).
NON_SPEC_KEYS = ("hydra", "tracking", "output_root", "sweep", "cache_dir", "lock_wait_s", "data_root")


@dataclass(frozen=True)
class JobSpec:
    task: str
    dataset: str
    generator: str  # the plugin that ran (`_plugin_`)
    epsilon: float
    seed: int
    config: Mapping[str, Any]
    # What the report calls the generator (`generator_name` in results.json): `generator_name_of`. Not part of the
    # key, which the config alone makes: the name labels a job, and whatever it names is in the config already.
    generator_name: str

    @property
    def key(self) -> str:
        """A stable hash of the canonical description: the job's identity, whatever its folder is called.

        Numbers are canonical (`canonical`), so eps=1, eps=1.0 and eps=1e0
        are one job, as are a single run and the same point of a sweep.
        """
        text = json.dumps(canonical(to_json(self.config)), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def canonical(value: Any) -> Any:
    """A JSON value with each whole-number float written as an int (1.0 -> 1), at any depth: one text per value."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


Node = Mapping[str, Any]  # a plugin's config node: `_plugin_` and its options, typed when the plugin is built


@dataclass(frozen=True)
class JobConfig:
    """The one typed config of a job: built once from Hydra's composed config (`from_config`), handed to its task.

    Tasks and everything below them read its attributes, never the composed
    config by string key. The job's own values are typed by the schema;
    `privacy` is built into its dataclass; a plugin's node (`generator`, each
    of `metrics`, a task section such as `audit`) stays the plain mapping that
    `registry.create` (or the section's dataclass) types on the plugin's
    options, since which options a node has depends on the plugin it names.
    Frozen, its nodes read-only mappings: a task that changes a node builds a
    new one. `plugins` and `data_root` are not here: the app loads the former
    before the job, and the latter only feeds the dataset's paths.
    """

    spec: JobSpec  # what the job computes, and its key
    privacy: schema.PrivacyOptions
    log_private_stats: bool  # `tracking.log_private_stats`, typed whichever tracker the node is for
    delta: float | str | None  # a number, null (1/N^2) or a rule: privacy.check_delta_setting
    accountant: str
    dataset: Node
    generator: Node
    model: Node | None
    encoder: Node | None
    classifier: Node | None
    metrics: Mapping[str, Node]
    attack: Node | None
    filter: Node | None
    task: Node  # `name` (the task plugin) and the task's options
    tracking: Node | None
    audit: Node | None  # the sections of the tasks that have one; None for the other tasks
    model_audit: Node | None
    model_attacks: Mapping[str, Node] | None
    contamination: Node | None
    plugin: Node | None
    sweep: str
    output_root: str
    cache_dir: str
    lock_wait_s: float

    @classmethod
    def from_config(
        cls, cfg: DictConfig, overrides: Sequence[str] = (), choices: Mapping[str, str | None] | None = None
    ) -> "JobConfig":
        """The job of a composed config; every top-level key is checked here, once, with a one-line error (and the
        command line's `overrides` of bool keys as written: `schema.check_bool_overrides`).

        `choices` is Hydra's `runtime.choices` of the run (the option each config group was composed from), which
        names the generator (`generator_name_of`); a job built without a Hydra run (a test, a sweep's check) has
        none, and its generator is named by its node or its plugin.
        """
        check_top_level(cfg)
        schema.check_bool_overrides(cfg, overrides)
        # A value left `???` (a backend's model, a paper dataset's data_root) fails here, naming its key, before
        # any request or any work: a plain to_container would pass the string "???" on.
        # A top-level `???` that nothing reads (the schema's data_root outside the paper experiments) is no error.
        values = {str(key): plain(cfg[key]) for key in cfg if not OmegaConf.is_missing(cfg, key)}
        check_no_credentials({k: v for k, v in values.items() if k != "hydra"})
        opt_in = schema.log_private_stats(values.get("tracking"))
        config = {k: v for k, v in values.items() if k not in NON_SPEC_KEYS}
        if opt_in:
            # It changes what the job releases, so it is part of the job (and its key); absent when off, so the
            # keys of default jobs stay as they were.
            config["tracking"] = {"log_private_stats": True}
        spec = JobSpec(
            task=str(values["task"]["name"]),
            dataset=str(values["dataset"].get("name", "?")),
            generator=str(values["generator"].get(schema.PLUGIN_KEY, "?")),
            epsilon=float(values["eps"]),
            seed=int(values["seed"]),
            config=config,
            generator_name=generator_name_of(values["generator"], (choices or {}).get("generator")),
        )
        built = {"spec", "privacy", "log_private_stats"}
        return cls(
            spec=spec,
            privacy=schema.typed(schema.PrivacyOptions, values["privacy"], "privacy"),
            log_private_stats=opt_in,
            **{f.name: values[f.name] for f in fields(cls) if f.name not in built},
        )

    def budget(self, n_private: int) -> PrivacySpec:
        """The job's budget for a private set of `n_private` documents: delta resolved once here, noise secret unless
        seeded (`privacy.noise_seed`)."""
        return PrivacySpec.for_private_set(
            n_private,
            self.spec.epsilon,
            self.delta,
            self.accountant,
            NoiseSource(seed=self.privacy.noise_seed, secure_mode=self.privacy.secure_mode),
            allow_large_delta=self.privacy.allow_large_delta,
        )


def generator_name_of(node: Mapping[str, Any], choice: str | None) -> str:
    """What ran, by the name its user gave it: the generator node's own `name` option where its plugin has one (a
    command program's `generator.name`), else the config option it was composed from (`dpgen_grid`, which the
    plugin name `dpgen` would merge with `dpgen`), else its plugin. Two variants of one plugin, or two programs
    run through `generator=command`, are then two generators in the report."""
    own = node.get("name")
    return str(own) if isinstance(own, str) and own else str(choice or node.get(schema.PLUGIN_KEY, "?"))


def plain(value: Any) -> Any:
    """A config value as plain data, interpolations resolved; a `???` left inside it fails, naming its key."""
    return OmegaConf.to_container(value, resolve=True, throw_on_missing=True) if OmegaConf.is_config(value) else value


def derive_seed(seed: int, *path: int) -> int:
    """The public seed of one part of a job (`path`: run k, repeat r, ...); the empty path is the job's seed itself.

    The one recipe for every seed below a job's, so runs get independent
    streams that a re-run reproduces. It is public: privacy noise never comes
    from it (that is `synbench.core.privacy.NoiseSource`).
    """
    return seed if not path else int(np.random.SeedSequence([seed, *path]).generate_state(1)[0])


def check_top_level(cfg: DictConfig) -> None:
    """`eps`, `delta`, `accountant`, `seed`, `task.n_synthetic`, `lock_wait_s` as the command line gave them, checked
    before anything runs."""
    check_epsilon(cfg.eps)
    check_delta_setting(cfg.delta)
    check_accountant(cfg.accountant)
    seed = cfg.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed={seed!r} is invalid: use a non-negative integer")
    check_task_n_synthetic(OmegaConf.select(cfg, "task.n_synthetic", default=None))
    lock_wait_s = OmegaConf.select(cfg, "lock_wait_s")
    if lock_wait_s is not None and not lock_wait_s >= 0:
        raise ConfigError(
            f"lock_wait_s={lock_wait_s} is invalid: use the seconds (0 or more) a job waits for the same job "
            "running in another process"
        )
    check_cache_dir(OmegaConf.select(cfg, "cache_dir"), OmegaConf.select(cfg, "output_root"))
    check_log_dir(OmegaConf.select(cfg, "generator.log_dir", default=None), OmegaConf.select(cfg, "output_root"))


def check_cache_dir(cache_dir: str | None, output_root: str | None) -> None:
    """Caches (embeddings of private text, scores) live under the output root, private like the jobs beside them."""
    if cache_dir is None or output_root is None:
        return
    if not Path(cache_dir).expanduser().resolve().is_relative_to(Path(output_root).expanduser().resolve()):
        raise ConfigError(
            f"cache_dir={cache_dir} is outside output_root={output_root}: caches hold embeddings of private "
            "text, so they stay under the output root; set cache_dir=${output_root}/cache (the default)"
        )


def check_log_dir(log_dir: str | None, output_root: str | None) -> None:
    """A generator's `log_dir` (generator=command: the program's stdout and stderr, which may quote records) stays
    out of output_root, where the jobs write what they release."""
    if log_dir is None or output_root is None:
        return
    if Path(log_dir).expanduser().resolve().is_relative_to(Path(output_root).expanduser().resolve()):
        raise ConfigError(
            f"generator.log_dir={log_dir} is inside output_root={output_root}, beside what the jobs release, and the "
            "program's output may quote private records; set generator.log_dir to a private folder outside "
            "output_root, or leave it unset for <tmp>/synbench-command-logs"
        )


# The folders of a path in an override's value (`/abs/path/` of `generator.command=[python,/abs/path/copier.py]`): the
# value's start, up to its last `/` before a file name that ends the value or the list element
PATH_FOLDERS = re.compile(r"(?<=[=\[,'\"])(?:[\w.~+-]*/)+(?=[\w.~+-]+(?:['\"\],]|$))")
QUOTES = str.maketrans("", "", "'\"")  # override syntax, not part of a value
SAFE_CHARACTERS = "=,._-+"  # beside ASCII letters and digits, the characters a job folder's name keeps
# The longest folder name: under the 255 bytes a file name may have, with room for the overrides of a job on a
# dataset of files (dataset.train=..., dataset.eval=..., its label space) and a command program before the cut.
FOLDER_NAME_LIMIT = 200


def job_dirname(override_dirname: str, limit: int = FOLDER_NAME_LIMIT) -> str:
    """A folder name for a job from Hydra's `override_dirname`: readable, filesystem-safe, unique.

    A path in a value is shown by its file name, so a command program's job
    reads `generator.command=_python,copier.py,_spec_,_out__` rather than a
    cut-off absolute path; quotes are dropped and other characters than ASCII
    letters, digits and `SAFE_CHARACTERS` replaced. A name so changed, or cut
    to `limit`, ends with a digest of the whole `override_dirname` (public
    config values), so two jobs that differ only in a folder (two `copier.py`
    programs) never share a folder.
    """
    if not override_dirname:
        return "defaults"
    shown = PATH_FOLDERS.sub("", override_dirname).translate(QUOTES)
    safe = "".join(c if (c.isascii() and c.isalnum()) or c in SAFE_CHARACTERS else "_" for c in shown)
    if len(safe) <= limit and safe == override_dirname:
        return safe
    digest = hashlib.sha256(override_dirname.encode()).hexdigest()[:10]
    return f"{safe[: limit - 11]}-{digest}"


def check_task_n_synthetic(value: object) -> None:
    """`task.n_synthetic`: the documents a job asks its generator for (null: as many as the private set)."""
    check_n_synthetic(value, "task.n_synthetic", "as many documents as the private set")
