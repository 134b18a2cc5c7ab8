"""A job's `results.json` as one type, `JobRecord`: the fields every job writes are its attributes, each part of the
file a typed section (`Utility`, `Fidelity`, `Audit`, `Disclosure`, `Timing`, `Generation`, and the task sections
`Filter`, `Directions`, `Contamination`, `ModelAudit`), and a plugin task's own sections its `sections`.

The type is the release allow-list's header (`synbench.job.release.RESULT_FIELDS` is its field names): a field
is added here, once, with the comment that says why it is public. Tasks fill a record (`JobRun.results`) by
attribute, the writer checks and writes its JSON form (`to_json`), and every reader (`synbench.results.load`, the
report, the sweep's closing table) reads a file back through `from_json` and reads attributes, so a file written
before a field existed reads with that field's default rather than as a missing key each reader guesses at.
`schema_version` names the layout (a file without it is version 1).

A section types the keys SynBench writes; what a metric, generator or plugin task adds stays as written in the
section's `extra` (checked by their own declarations, `results_sections`, `generation_fields`, `public_details`,
when the record is written), so the file's layout does not depend on the types. The record and its sections are
also mappings over their JSON keys, which the release check and `to_json` walk and a plugin task writes through
(`job.results[...]`).

Names: this module is the record's type; `synbench.job.results` writes and reads the file (and walks a sweep);
`synbench.results` is the public reader of a sweep (`load`).
"""

from __future__ import annotations

import functools
from collections.abc import MutableMapping
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterator, Mapping, TypeVar

from synbench.core.files import to_json

RUNNING, COMPLETE, FAILED = "running", "complete", "failed"
NON_FINITE = ("inf", "-inf", "nan")  # how strict JSON (`synbench.core.files.to_json`) writes non-finite numbers
STILL_RUNNING = "still running, or stopped before it finished (no final results)"
# The layout of results.json this code writes. 1: files written before the field (the same layout, sections untyped
# in the code that wrote them); 2: the same keys, now read and written through the typed sections below.
SCHEMA_VERSION = 2


def number(value: Any) -> float | None:
    """A number of results.json as a float (non-finite ones are written "inf", "-inf", "nan"); None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in NON_FINITE:
        return float(value)
    return None


# ---- the sections: one typed class per part of results.json ----


class Section(MutableMapping[str, Any]):
    """A results.json section: the keys SynBench writes are typed attributes (None: not written); every other key (a
    plugin metric's, a generator's public detail, a value of another type than declared, an explicit null) is kept
    as written in `extra`. It is also a mapping over its JSON keys, so the release check, `to_json` and a plugin's
    `section[key] = value` see the same keys the file holds; SynBench's own readers use the attributes."""

    extra: dict[str, Any]

    @classmethod
    @functools.cache
    def declared(cls) -> dict[str, str]:
        """The typed keys, by name, with their declared type as written in the class."""
        return {f.name: str(f.type) for f in fields(cls) if f.name != "extra"}  # type: ignore[arg-type]

    @classmethod
    def of(cls: type[S], values: Mapping[str, Any]) -> S:
        """A section holding `values` as a writer gives them (a nested typed section from its mapping)."""
        section = cls()  # type: ignore[call-arg]
        section.update(values)
        return section

    @classmethod
    def from_json(cls: type[S], data: Mapping[str, Any]) -> S:
        """The section a file holds, read tolerantly: a typed key whose value is not of its type (or null) stays in
        `extra` as written, so a record read and written again is the same file."""
        section = cls()  # type: ignore[call-arg]
        kinds = cls.declared()
        for key, value in data.items():
            read = SECTION_READERS[kinds[key]](value) if key in kinds else None
            if read is None:
                section.extra[key] = value
            else:
                setattr(section, key, read)
        return section

    def __getitem__(self, key: str) -> Any:
        value = getattr(self, key) if key in self.declared() else None
        if value is not None:
            return value
        return self.extra[key]

    def __setitem__(self, key: str, value: Any) -> None:
        kind = self.declared().get(key)
        if kind is None or value is None:
            self.extra[key] = value
            return
        nested = SECTION_TYPES.get(kind.removesuffix(" | None"))
        setattr(self, key, nested.of(value) if nested and not isinstance(value, nested) else value)
        self.extra.pop(key, None)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        if key in self.declared():
            setattr(self, key, None)
        self.extra.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        written = [name for name in self.declared() if getattr(self, name) is not None]
        yield from written
        yield from (key for key in self.extra if key not in written)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __eq__(self, other: object) -> bool:
        """Equal to a section of its class, or a plain mapping, that holds the same JSON keys and values: how it is
        written is what it is."""
        if isinstance(other, Section) and type(other) is not type(self):
            return False
        return dict(self) == dict(other) if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable


S = TypeVar("S", bound=Section)


@dataclass(eq=False)
class Utility(Section):
    """`utility` (and `utility_filtered`): the utility metric's F1 of a classifier trained on the synthetic text,
    beside its reference rows (random, majority, real data, real data at the synthetic set's size)."""

    f1_micro: float | None = None
    f1_macro: float | None = None
    random_f1: float | None = None
    random_f1_macro: float | None = None
    majority_f1: float | None = None
    majority_f1_macro: float | None = None
    real_f1: float | None = None
    real_f1_macro: float | None = None
    matched_real_f1: float | None = None
    matched_real_f1_macro: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Fidelity(Section):
    """`fidelity` (and `fidelity_filtered`): how the synthetic text compares with the real text; `_ref` keys are real
    against real, the reference row."""

    mauve: float | None = None
    mauve_ref: float | None = None
    label_cardinality_div: float | None = None
    label_cardinality_div_ref: float | None = None
    label_multi_share_real: float | None = None  # share of real documents with two or more labels
    label_multi_share_syn: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Audit(Section):
    """`audit`: the membership audit's figures (synbench.audit.summary); per-attack and per-kind figures
    (`ngram.auc`, `canaries.eps_emp_lower`, `tpr_at_fpr_0.01`) are in `extra` under their dotted keys."""

    mode: str | None = None
    confidence: float | None = None
    auc: float | None = None
    eps_emp: float | None = None
    eps_emp_lower: float | None = None
    eps_ceiling: float | None = None
    eps_perfect: float | None = None
    gdp_mu_lower: float | None = None
    p_value: float | None = None
    claim_epsilon: float | None = None
    verdict: str | None = None
    verdict_line: str | None = None
    n_needed: int | None = None  # the design size a perfect attack would need (an inconclusive audit)
    n_needed_unit: str | None = None  # what n_needed counts (targets or runs), as the audit wrote it
    attack_chosen: str | None = None
    n_trials: int | None = None
    n_member_trials: int | None = None
    targets: str | None = None
    canary_repeats: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Disclosure(Section):
    """`disclosure`: how many private documents the release reproduces against unseen ones, and the exact test
    (synbench.audit.disclosure)."""

    private_reappear: int | None = None
    n_private: int | None = None
    unseen_reappear: int | None = None
    n_unseen: int | None = None
    private_uncheckable: int | None = None
    unseen_uncheckable: int | None = None
    p_value: float | None = None
    flagged: bool | None = None
    min_flaggable: int | None = None  # None (written null, kept in extra): no count could be flagged
    status: str | None = None
    rule: str | None = None
    test: str | None = None
    strata: dict[str, Any] | None = None  # each stratum's four counts
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Timing(Section):
    """`timing`: seconds per step of the job, one `<step>_s` key each (steps are named by the task, so all keys are
    in `extra`)."""

    extra: dict[str, Any] = field(default_factory=dict)

    def total(self) -> float | None:
        """The job's seconds, its steps summed; None when it timed none."""
        found = [s for s in (number(v) for v in self.extra.values()) if s is not None]
        return float(sum(found)) if found else None


@dataclass(eq=False)
class Generation(Section):
    """`generation`: sizes and health of what the job generated, as its task declares them (`generation_fields`);
    a generator's `public_details` are in `extra`."""

    n_private: int | None = None
    n_eval: int | None = None
    n_aux: int | None = None
    n_pool: int | None = None
    planned_private_size: int | None = None
    n_synthetic: int | None = None
    n_empty: int | None = None
    n_degenerate: int | None = None
    empty_share: float | None = None
    degenerate_share: float | None = None
    n_runs: int | None = None
    runs_resumed: int | None = None
    n_models: int | None = None
    models_resumed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Filter(Section):
    """`filter`: the post-hoc filter's plugin and what it kept (its own settings in `extra`)."""

    name: str | None = None
    n_before: int | None = None
    n_kept: int | None = None
    private_data_used: bool | None = None
    mean_score: float | None = None
    mean_score_kept: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Directions(Section):
    """`higher_is_better`: `<section>.<key>` -> whether higher is better, as each metric's class declares it."""

    extra: dict[str, Any] = field(default_factory=dict)

    def of_metric(self) -> dict[str, bool]:
        """The declared directions (true/false values only)."""
        return {key: value for key, value in self.extra.items() if isinstance(value, bool)}


@dataclass(eq=False)
class Detector(Section):
    """One contamination detector's figures (`contamination.exact`, `.mink`, `.minkpp`)."""

    exposed_share: float | None = None
    n_flagged: int | None = None
    auc: float | None = None  # only where known members and non-members were given
    index: str | None = None  # exact: the infini-gram index and its size
    index_tokens: int | None = None
    n: int | None = None
    k: float | None = None  # Min-K%: the share of lowest-probability tokens, and its calibration
    calibration: str | None = None
    fpr: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Ablation(Section):
    """`contamination.ablation`: the removal ablation's runs (each arm, step and repetition) and its table."""

    detector: str | None = None
    n_flagged: int | None = None
    reps: int | None = None
    steps: list[Any] | None = None
    n_runs: int | None = None
    runs_resumed: int | None = None
    epsilon_spent: float | None = None
    table: list[Any] | None = None
    runs: list[Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Contamination(Section):
    """`contamination`: each detector's share of the private set flagged, the planted known-answer figures and the
    ablation."""

    n_documents: int | None = None
    model: str | None = None
    exact: Detector | None = None
    mink: Detector | None = None
    minkpp: Detector | None = None
    planted: dict[str, Any] | None = None
    ablation: Ablation | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def detectors(self) -> dict[str, Detector]:
        """The detectors that ran, by name."""
        found = {"exact": self.exact, "mink": self.mink, "minkpp": self.minkpp}
        return {name: detector for name, detector in found.items() if detector is not None}


@dataclass(eq=False)
class ModelAudit(Section):
    """`model_audit`: the downstream-model audit's design; each regime's figures are in `extra` (`syn.auc`)."""

    n_targets: int | None = None
    n_members: int | None = None
    n_references: int | None = None
    n_population: int | None = None
    references: str | None = None
    confidence: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobRecord(MutableMapping[str, Any]):
    """One job's results: what ran, how it ended, what it spent, and its sections (in this order in the file)."""

    schema_version: int = SCHEMA_VERSION  # the layout the file was written in (1: written before the field)
    task: str | None = None
    dataset: str | None = None
    generator: str | None = None  # the generator's plugin
    generator_name: str | None = None  # what ran, as configured: the config option (dpgen_grid) or generator.name
    epsilon: float | None = None  # the nominal budget the job asked for
    delta: float | None = None  # the job's delta, resolved once by the core (a public function of the dataset)
    epsilon_spent: float | None = None  # what the accountant computed for what ran (the largest of a job's runs)
    seed: int | None = None
    status: str = RUNNING
    job_key: str | None = None  # the job's canonical description's key: a complete record of it is skipped
    noise: str | None = None  # the noise source's mode (secure, seeded), or "n/a" for a control
    label_space_inferred: bool = False  # the label space came from the data rather than the dataset's config
    # the hub commit the dataset was read at, as the hub resolved it (public: a commit id of a public repository, no
    # function of its records); None for a local release, or when the load could not tell
    source_revision: str | None = None
    non_private_control: bool = False  # a built-in control (`is_control`) that spent inf: `copy`, at any eps
    # whether the job gave its generator the private documents, decided by the job from the generator's class and
    # config before it ran (`GeneratorRun.reads_private`; public: a plan value); False makes the job a public
    # baseline. None: no generator ran, or the file was written before the field
    reads_private: bool | None = None
    non_dp_outputs: list[str] = field(default_factory=list)  # fields (and tracker curves) that are not DP
    utility: Utility = field(default_factory=Utility)
    fidelity: Fidelity = field(default_factory=Fidelity)
    audit: Audit = field(default_factory=Audit)
    timing: Timing = field(default_factory=Timing)  # seconds per step of the job
    # the job's description (a public plan): the config groups as composed, an open mapping like the config itself
    config: dict[str, Any] = field(default_factory=dict)
    report_section: str | None = None  # the report table the job's task declares (`Task.report_section`)
    generation: Generation = field(default_factory=Generation)  # sizes, health and the generator's public details
    diagnostic_outputs: list[str] = field(default_factory=list)  # the operator's reference among non_dp_outputs
    # a failed job: the error's type and, for SynBench's own errors (which never quote data), its message; the file
    # holds it only for a failed job
    error: dict[str, str] | None = None
    # the task's declared sections, each a top-level key: SynBench's own (`TASK_SECTIONS`) typed, a plugin task's as
    # it wrote them
    sections: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clash = sorted(set(self.sections) & set(HEADER))
        if clash:
            raise ValueError(f"JobRecord.sections holds header field(s) {clash}: set them as attributes")
        self.sections = {key: _typed(TASK_SECTIONS.get(key), value) for key, value in self.sections.items()}

    # SynBench's own task sections, typed (None where the job wrote none)
    @property
    def disclosure(self) -> Disclosure | None:
        return self._task_section(DISCLOSURE, Disclosure)

    @disclosure.setter
    def disclosure(self, value: Disclosure) -> None:
        self.sections[DISCLOSURE] = value

    @property
    def filter(self) -> Filter | None:
        return self._task_section("filter", Filter)

    @property
    def contamination(self) -> Contamination | None:
        return self._task_section("contamination", Contamination)

    @contamination.setter
    def contamination(self, value: Contamination) -> None:
        self.sections["contamination"] = value

    @property
    def model_audit(self) -> ModelAudit | None:
        return self._task_section("model_audit", ModelAudit)

    @model_audit.setter
    def model_audit(self, value: ModelAudit) -> None:
        self.sections["model_audit"] = value

    @property
    def higher_is_better(self) -> Directions:
        return self._task_section("higher_is_better", Directions) or Directions()

    @property
    def utility_filtered(self) -> Utility:
        """The utility metric on the filter's kept corpus (empty without a filter)."""
        return self._task_section("utility_filtered", Utility) or Utility()

    @property
    def fidelity_filtered(self) -> Fidelity:
        """The fidelity metrics on the filter's kept corpus (empty without a filter)."""
        return self._task_section("fidelity_filtered", Fidelity) or Fidelity()

    def _task_section(self, name: str, kind: type[S]) -> S | None:
        found = self.sections.get(name)
        return found if isinstance(found, kind) else None

    def section(self, name: str) -> MutableMapping[str, Any]:
        """The section `name` for a writer to fill by key, made empty when the record has none: a header section,
        a typed task section, or a plugin task's own (a plain mapping)."""
        if name in HEADER:
            found = getattr(self, name)
            if not isinstance(found, MutableMapping):
                raise KeyError(f"{name} is a header field of results.json, not a section")
            return found
        if name not in self.sections:
            self[name] = {}
        return self.sections[name]

    def mark_diagnostic(self, keys: list[str]) -> None:
        """Name `keys` in `diagnostic_outputs`: the operator's reference figures among the non-DP ones."""
        self.diagnostic_outputs = sorted({*self.diagnostic_outputs, *keys})

    def to_json(self) -> dict[str, Any]:
        """The record as `results.json` holds it: header fields, then the sections; strict JSON (non-finite numbers
        as "inf", "-inf", "nan")."""
        return to_json({key: self[key] for key in self})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "JobRecord":
        """The record a `results.json` holds, read tolerantly, for files of every SynBench version.

        A field the file lacks (written before the field existed) takes its
        default, and one of another type the default of its kind (a list, a
        map, None); a job's `report_section` was its task's name before tasks
        declared one. Header numbers come back as floats ("inf" is inf again);
        every other key is a section: SynBench's own read into their types
        (`Section.from_json`), a plugin task's kept as written. A file without
        `schema_version` was written before it: version 1.
        """
        values = {name: READERS[str(HEADER[name].type)](data[name]) for name in HEADER if name in data}
        if "report_section" not in data:
            values["report_section"] = values.get("task")
        if "schema_version" not in data:
            values["schema_version"] = 1
        sections = {
            key: _read_section(TASK_SECTIONS.get(key), value) for key, value in data.items() if key not in HEADER
        }
        return cls(**values, sections=sections)

    def reason(self) -> str:
        """Why the job has no final results, in words (empty for a complete job)."""
        if self.status == COMPLETE:
            return ""
        if self.status == FAILED:
            error = self.error or {}
            return f"{error.get('type', 'error')}: {error.get('message', 'no message recorded')}"
        return STILL_RUNNING if self.status == RUNNING else f"unexpected status {self.status!r}"

    def mark_non_dp(self, keys: list[str]) -> None:
        """Name `keys` (fields of results, or `tracker:` curves) in `non_dp_outputs`, beside those named already."""
        self.non_dp_outputs = sorted({*self.non_dp_outputs, *keys})

    # the mapping over the JSON keys: header fields are attributes, every other key a section
    def __getitem__(self, key: str) -> Any:
        if key not in HEADER:
            return self.sections[key]
        if key == "error" and self.error is None:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key in HEADER:
            setattr(self, key, _typed(SECTION_TYPES.get(str(HEADER[key].type)), value))
        else:
            self.sections[key] = _typed(TASK_SECTIONS.get(key), value)

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The value at `key`, set to `default` first when absent; the value held (a typed section made of a
        mapping default), so a writer's update lands in the record."""
        if key not in self:
            self[key] = default
        return self[key]

    def __delitem__(self, key: str) -> None:
        if key in HEADER:
            raise KeyError(f"{key} is a field of every results.json: set it, it cannot be removed")
        del self.sections[key]

    def __iter__(self) -> Iterator[str]:
        yield from (name for name in HEADER if name != "error" or self.error is not None)
        yield from self.sections

    def __len__(self) -> int:
        return sum(1 for _ in self)


# the header fields by name, in file order: the release allow-list (`release.RESULT_FIELDS`) is their names
HEADER = {f.name: f for f in fields(JobRecord) if f.name != "sections"}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# how a header field of each declared type is read from a file (`JobRecord.from_json`)
READERS: dict[str, Callable[[Any], Any]] = {
    "str | None": _text,
    "str": lambda value: RUNNING if value is None else str(value),
    "float | None": number,
    "int | None": _whole,
    "bool": bool,
    "bool | None": lambda value: value if isinstance(value, bool) else None,
    "list[str]": lambda value: [str(v) for v in value] if isinstance(value, list) else [],
    "dict[str, Any]": lambda value: dict(value) if isinstance(value, Mapping) else {},
    "dict[str, str] | None": lambda value: dict(value) if isinstance(value, Mapping) else None,
    "int": lambda value: _whole(value) or 1,  # schema_version: a version is 1 or more
}


def _float(value: Any) -> float | None:
    """A number as written (an int stays an int, so a file read and written again is itself); "inf" and the like
    as floats; None if not a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return number(value)


def _read_section(kind: type[Section] | None, value: Any) -> Any:
    """A section's value from a file: typed where its name has a type and it is a mapping, else as written."""
    return kind.from_json(value) if kind is not None and isinstance(value, Mapping) else value


def _typed(kind: type[Section] | None, value: Any) -> Any:
    """A writer's section value as its type (a mapping taken over as it is given); a value of no section type, or
    already typed, as it is."""
    if kind is None or isinstance(value, kind) or not isinstance(value, Mapping):
        return value
    return kind.of(value)


def _nested(kind: type[Section], value: Any) -> Section | None:
    """A nested section (`contamination.exact`) from a file; None if not a mapping."""
    return kind.from_json(value) if isinstance(value, Mapping) else None


# the section classes by name: a header field's or a nested field's declared type names one
SECTION_TYPES: dict[str, type[Section]] = {
    kind.__name__: kind
    for kind in (
        Utility,
        Fidelity,
        Audit,
        Disclosure,
        Timing,
        Generation,
        Filter,
        Directions,
        Detector,
        Ablation,
        Contamination,
        ModelAudit,
    )
}
DISCLOSURE = "disclosure"
# SynBench's own task sections (`Task.results_sections` of its tasks and the metrics' filtered copies), typed
TASK_SECTIONS: dict[str, type[Section]] = {
    DISCLOSURE: Disclosure,
    "filter": Filter,
    "higher_is_better": Directions,
    "utility_filtered": Utility,
    "fidelity_filtered": Fidelity,
    "contamination": Contamination,
    "model_audit": ModelAudit,
}
# a header section from a file: a value that is not a mapping reads as the empty section
READERS |= {
    name: functools.partial(lambda kind, value: _nested(kind, value) or kind(), kind)
    for name, kind in SECTION_TYPES.items()
}
# how a typed key of a section is read from a file (`Section.from_json`): None where the value is not of its type
SECTION_READERS: dict[str, Callable[[Any], Any]] = {
    "float | None": _float,
    "int | None": _whole,
    "str | None": lambda value: value if isinstance(value, str) else None,
    "bool | None": lambda value: value if isinstance(value, bool) else None,
    "list[Any] | None": lambda value: value if isinstance(value, list) else None,
    "dict[str, Any] | None": lambda value: dict(value) if isinstance(value, Mapping) else None,
} | {f"{name} | None": functools.partial(_nested, kind) for name, kind in SECTION_TYPES.items()}
