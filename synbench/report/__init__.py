"""Reports of a sweep (`task=report`): tables and plots from its `results.json` files only.

`load` reads the results into a DataFrame, `benchmark` and `audit` shape the
paper's tables, `plots` draws the figures, `render` writes Markdown and
self-contained HTML, and `build` puts them together. Nothing here loads a
dataset, a model or a generator: a report can be made anywhere the results
files are, and it can only show what the jobs released.

`write_report` is imported on first use (PEP 562), so a job that needs only
`stats` (its summary's rule for which F1 leads) does not load pandas and
matplotlib.
"""

from __future__ import annotations

from typing import Any

__all__ = ["write_report"]


def __getattr__(name: str) -> Any:
    if name == "write_report":
        from synbench.report.build import write_report

        return write_report
    raise AttributeError(f"module 'synbench.report' has no attribute {name!r}")
