"""A sweep's report: `report.md` and `report.html` in the sweep folder, from its `results.json` files.

Reads what a job releases and nothing else: the results files (through
`load`) and the audit's own ROC image next to them. Synthetic corpora,
audit designs and caches in the same folders are never opened, so no private
text can reach a report. Figures for the Markdown go to `report_figures/`;
the HTML page embeds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from synbench.core.files import write_text_atomic
from synbench.report.audit import TASK as AUDIT
from synbench.report.audit import (
    attack_note,
    attack_table,
    audit_detail_table,
    audit_table,
    bound_note,
    paper_region_note,
    paper_region_table,
    pooled_note,
    pooled_table,
    roc_images,
)
from synbench.report.benchmark import DISCLOSURE_HEAD, benchmark_tables, gain_note
from synbench.report.benchmark import TASK as BENCHMARK
from synbench.report.comparison import comparison_note, comparison_rows, comparison_table
from synbench.report.contamination import TASK as CONTAMINATION
from synbench.report.contamination import contamination_blocks
from synbench.report.load import COMPLETE, SECTION, load_results, task_jobs
from synbench.report.model_audit import TASK as MODEL_AUDIT
from synbench.report.model_audit import model_audit_note, model_audit_table
from synbench.report.plots import lower_bound_vs_nominal, metric_vs_eps
from synbench.report.render import Block, Details, Gallery, Heading, Image, Notes, Text, to_html, to_markdown
from synbench.report.stats import interval_note
from synbench.report.table import disclosure_note, incomplete_table, marker_notes
from synbench.report.verdicts import summary_lines

MARKDOWN_FILE = "report.md"
HTML_FILE = "report.html"
FIGURES_DIR = "report_figures"


@dataclass
class Document:
    """The blocks of a report and the figures its Markdown refers to (file name -> PNG)."""

    blocks: list[Block] = field(default_factory=list)
    figures: dict[str, bytes] = field(default_factory=dict)

    def figure(self, caption: str, png: bytes | None, name: str) -> None:
        if png is not None:
            file_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".png"
            self.figures[file_name] = png
            self.blocks.append(Image(caption, png, f"{FIGURES_DIR}/{file_name}"))


def overview(frame: pd.DataFrame, root: Path) -> str:
    """One sentence: how many jobs the report covers, by status and task."""
    statuses = ", ".join(f"{n} {status}" for status, n in frame["status"].value_counts().sort_index().items())
    tasks = ", ".join(f"{task} ({n})" for task, n in frame["task"].value_counts().sort_index().items())
    return f"{len(frame)} results.json file(s) under {root}: {statuses or 'none'}; by task: {tasks or 'none'}."


def benchmark_section(doc: Document, frame: pd.DataFrame, confidence: float) -> None:
    doc.blocks.append(Heading(2, "Utility and fidelity"))
    tables = benchmark_tables(frame, confidence)
    if not tables:
        doc.blocks.append(Text("No benchmark results in this sweep."))
    for found in tables:
        doc.blocks += [Heading(3, found.dataset), found.main]
        if found.gains is not None:
            doc.blocks.append(Text(gain_note(found.gains)))
        if DISCLOSURE_HEAD in found.main.columns:
            doc.blocks.append(Text(disclosure_note(confidence)))
        if found.excluded:
            doc.blocks.append(Notes(found.excluded))
        jobs = task_jobs(frame, BENCHMARK)
        jobs = jobs[jobs["dataset"] == found.dataset]
        doc.figure(
            f"{found.dataset}: F1 and MAUVE against nominal ε per generator (horizontal lines: baselines)",
            metric_vs_eps(jobs, confidence),
            f"metrics_vs_eps_{found.dataset}",
        )
        if found.other is not None:
            doc.blocks.append(Details("Other metric keys", (found.other,)))
    compared = comparison_rows(frame, confidence)
    if compared:
        doc.blocks.append(Heading(3, "Generators compared"))
        doc.blocks += [comparison_table(dataset, rows, confidence) for dataset, rows in compared.items()]
        doc.blocks.append(Text(comparison_note(confidence)))


def audit_section(doc: Document, root: Path, frame: pd.DataFrame, confidence: float) -> None:
    doc.blocks.append(Heading(2, "Privacy audit"))
    table = audit_table(frame, confidence)
    if table is None:
        doc.blocks.append(Text("No audit results in this sweep."))
        return
    doc.blocks += [table, Text(bound_note(frame))]
    if DISCLOSURE_HEAD in table.columns:
        doc.blocks.append(Text(disclosure_note(confidence)))
    per_attack, pooled = attack_table(frame, confidence), pooled_table(frame, confidence)
    for extra, note in ((per_attack, attack_note()), (pooled, pooled_note())):
        if extra is not None:
            doc.blocks += [extra, Text(note)]
    paper = paper_region_table(frame, confidence)
    if paper is not None:
        doc.blocks += [paper, Text(paper_region_note())]
    detail = audit_detail_table(frame, confidence)
    if detail is not None:
        doc.blocks.append(Details("Bounds behind eps_emp_lower, per target kind, over repeats", (detail,)))
    doc.figure(
        "eps_emp_lower against nominal ε (finite ε only); above the line y = x is a violation",
        lower_bound_vs_nominal(frame, confidence),
        "eps_lower_vs_nominal",
    )
    rocs = tuple(Image(caption, (root / href).read_bytes(), href) for href, caption in roc_images(frame))
    if rocs:
        doc.blocks += [Heading(3, "ROC against the DP region, per audit job"), Gallery(rocs)]


def model_audit_section(doc: Document, frame: pd.DataFrame, confidence: float) -> None:
    table = model_audit_table(frame, confidence)
    if table is not None:
        doc.blocks += [Heading(2, "Membership attacks on downstream models"), table, Text(model_audit_note())]


def build(root: Path, confidence: float, title: str) -> Document:
    """The whole report of the sweep folder `root`."""
    frame = load_results(root)
    doc = Document([Heading(1, title), Text(overview(frame, root)), Text(interval_note(confidence))])
    lines = summary_lines(frame, confidence)
    if lines:
        doc.blocks += [Heading(2, "Summary"), Notes(tuple(lines))]
    notes = marker_notes(frame)
    if notes:
        doc.blocks.append(Notes(tuple(notes)))
    benchmark_section(doc, frame, confidence)
    audit_section(doc, root, frame, confidence)
    model_audit_section(doc, frame, confidence)
    doc.blocks += contamination_blocks(root, frame, confidence)
    doc.blocks.append(Heading(2, "Jobs not complete"))
    unfinished = incomplete_table(frame)
    doc.blocks.append(unfinished if unfinished is not None else Text("Every job has final results."))
    tabulated = frame[SECTION].isin([BENCHMARK, AUDIT, MODEL_AUDIT, CONTAMINATION])
    others = sorted(set(frame.loc[(frame["status"] == COMPLETE) & ~tabulated, "task"]))
    if others:
        doc.blocks.append(Text(f"Complete results of task(s) {', '.join(others)} are counted above but not tabulated."))
    return doc


def write_report(root: Path, confidence: float, title: str | None = None) -> tuple[Path, Path]:
    """Write `report.md` (with `report_figures/`) and the self-contained `report.html` into `root`."""
    title = title or f"SynBench report: {root.name}"
    doc = build(root, confidence, title)
    for name, png in doc.figures.items():
        (root / FIGURES_DIR).mkdir(exist_ok=True)
        (root / FIGURES_DIR / name).write_bytes(png)
    markdown, page = root / MARKDOWN_FILE, root / HTML_FILE
    write_text_atomic(markdown, to_markdown(doc.blocks))
    write_text_atomic(page, to_html(doc.blocks, title))
    return markdown, page
