"""`task=export`: a sweep as one table file (`results.csv` or `results.parquet`) in the sweep folder.

The table is `synbench.results.load(sweep)`: one row per job, the fields of
its results.json flattened with "." (the job description under `config.`),
its status, and why it is not complete. It is written atomically, so a
reader never sees half a file, and from results.json files only: the
allow-listed release, never synthetic text or private data.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from synbench.core import schema
from synbench.core.errors import ConfigError
from synbench.core.files import atomic_path
from synbench.job import results
from synbench.job.spec import JobConfig
from synbench.tasks.base import Task
from synbench.tasks.options import ExportOptions


def parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns that mix text with other values (a delta given as a number in one job and a rule in another) as text:
    Parquet columns hold one type."""
    mixed = [
        column
        for column in frame.columns
        if frame[column].map(lambda v: isinstance(v, str)).any() and frame[column].map(_other).any()
    ]
    return frame.assign(**{c: frame[c].map(lambda v: str(v) if _other(v) else v) for c in mixed})


def _other(value: object) -> bool:
    return value is not None and not isinstance(value, str) and not (isinstance(value, float) and value != value)


def export(sweep: Path, fmt: str) -> Path:
    """Write the sweep's table as `results.<fmt>` (csv or parquet: `ExportOptions` checks it) into the sweep folder;
    returns its path."""
    frame = results.load(sweep)
    if frame.empty:
        raise ConfigError(
            f"task=export: no {results.RESULTS_FILE} under {sweep}; name the sweep with sweep=<name> (and "
            f"output_root=<folder> if its outputs are elsewhere), or set task.root=<folder>"
        )
    path = sweep / f"results.{fmt}"
    with atomic_path(path) as tmp:
        if fmt == "csv":
            frame.to_csv(tmp, index=False)
        else:
            parquet_safe(frame).to_parquet(tmp, index=False)
    return path


class ExportTask(Task):
    """`task=export` (conf/task/export.yaml): reads a sweep's results files, writes one table, no results.json."""

    options = ExportOptions
    writes_results = False

    def run(self, config: JobConfig, job_dir: Path) -> None:
        options = schema.typed(ExportOptions, config.task, "task")
        path = export(Path(options.root), options.format)
        print(f"export: {path}")
