"""Reports of a sweep (`task=report`): tables and plots from its `results.json` files only.

`load` reads the results into a DataFrame, `benchmark` and `audit` shape the
paper's tables, `plots` draws the figures, `render` writes Markdown and
self-contained HTML, and `build` puts them together (`build.write_report`).
`summary` is the few lines a job prints when it finishes. Nothing here loads
a dataset, a model or a generator: a report can be made anywhere the results
files are, and it can only show what the jobs released.
"""
