"""A job's `results.json` as one type, `JobRecord`: the fields every job writes are its attributes, and the
sections a task declares beyond them (`Task.results_sections`) its `sections`.

The type is the release allow-list's header (`synbench.job.release.RESULT_FIELDS` is its field names): a field
is added here, once, with the comment that says why it is public. Tasks fill a record (`JobRun.results`), the
writer checks and writes its JSON form (`to_json`), and every reader (`synbench.results.load`, the report, the
sweep's closing table) reads a file back through `from_json`, so a file written before a field existed reads with
that field's default rather than as a missing key each reader guesses at.

A record is also a mapping over its JSON keys (`record["utility"]`, `record["disclosure"]`), so the helpers that
fill a section (`record_disclosure`, the filter) and a plugin task's `job.results[...]` write into the same record.
Section contents stay open mappings: what a metric, generator or task may put in them is checked by their own
declarations (`results_sections`, `generation_fields`, `public_details`) when the record is written.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterator, Mapping

from synbench.core.files import to_json

RUNNING, COMPLETE, FAILED = "running", "complete", "failed"
NON_FINITE = ("inf", "-inf", "nan")  # how strict JSON (`synbench.core.files.to_json`) writes non-finite numbers
STILL_RUNNING = "still running, or stopped before it finished (no final results)"


def number(value: Any) -> float | None:
    """A number of results.json as a float (non-finite ones are written "inf", "-inf", "nan"); None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in NON_FINITE:
        return float(value)
    return None


@dataclass
class JobRecord(MutableMapping[str, Any]):
    """One job's results: what ran, how it ended, what it spent, and its sections (in this order in the file)."""

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
    utility: dict[str, Any] = field(default_factory=dict)
    fidelity: dict[str, Any] = field(default_factory=dict)
    audit: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)  # seconds per step of the job
    config: dict[str, Any] = field(default_factory=dict)  # the job's description (a public plan)
    report_section: str | None = None  # the report table the job's task declares (`Task.report_section`)
    generation: dict[str, Any] = field(default_factory=dict)  # sizes, health and the generator's public details
    diagnostic_outputs: list[str] = field(default_factory=list)  # the operator's reference among non_dp_outputs
    # a failed job: the error's type and, for SynBench's own errors (which never quote data), its message; the file
    # holds it only for a failed job
    error: dict[str, str] | None = None
    sections: dict[str, Any] = field(default_factory=dict)  # the task's declared sections, each a top-level key

    def __post_init__(self) -> None:
        clash = sorted(set(self.sections) & set(HEADER))
        if clash:
            raise ValueError(f"JobRecord.sections holds header field(s) {clash}: set them as attributes")

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
        every other key is a section, kept as written.
        """
        values = {name: READERS[str(HEADER[name].type)](data[name]) for name in HEADER if name in data}
        if "report_section" not in data:
            values["report_section"] = values.get("task")
        return cls(**values, sections={key: value for key, value in data.items() if key not in HEADER})

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
            setattr(self, key, value)
        else:
            self.sections[key] = value

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
}
