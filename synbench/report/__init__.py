"""Reports of a sweep (`task=report`): tables and plots from its `results.json` files only.

`load` reads the results into a DataFrame, `benchmark` and `audit` shape the
paper's tables, `plots` draws the figures, `render` writes Markdown and
self-contained HTML, and `build` puts them together. Nothing here loads a
dataset, a model or a generator: a report can be made anywhere the results
files are, and it can only show what the jobs released.
"""
from synbench.report.build import write_report

__all__ = ["write_report"]
