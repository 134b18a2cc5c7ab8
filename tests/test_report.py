"""`task=report`: tables and plots of a sweep from its results.json files only, as Markdown and self-contained HTML.

The sweep is written by hand, so every expected cell is known: two
generators x eps {1, 4, inf} x two seeds of `benchmark`, two audits (one
whose lower bound exceeds its nominal eps), one failed job, and private-
looking files beside the results that the report must never read.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from conftest import run_cli
from synbench.audit.config import AuditOptions
from synbench.audit.plot import plot_roc
from synbench.audit.roc import RocCurve
from synbench.job.record import JobRecord
from synbench.report.build import write_report

SENTINEL = "PATIENT-ZZQX-7731 private discharge note"
SWEEP = "toy"
EPS = {"1": 1.0, "4": 4.0, "inf": "inf"}
F1 = {"alpha": 0.5, "beta": 0.3}  # seed 0 at eps=1; +0.1 per seed, +0.05 per step up in eps


def write_job(root: Path, task: str, name: str, results: dict[str, Any]) -> Path:
    job = root / task / name
    job.mkdir(parents=True)
    (job / "results.json").write_text(
        json.dumps(
            {
                "task": task,
                "dataset": "toyset",
                "delta": 1e-5,
                "noise": "secure",
                "non_dp_outputs": [],
                "label_space_inferred": False,
                "config": {"note": "x"},
                **results,
            }
        )
    )
    (job / "synthetic.jsonl").write_text(json.dumps({"text": SENTINEL, "label": ["pos"]}) + "\n")
    return job


def benchmark_results(generator: str, step: int, eps: float | str, seed: int) -> dict[str, Any]:
    f1 = F1[generator] + 0.05 * step + 0.1 * seed
    return {
        "generator": generator,
        "epsilon": eps,
        "seed": seed,
        "status": "complete",
        "utility": {
            "f1_micro": f1,
            "f1_macro": f1 - 0.2,
            "random_f1": 0.33 + 0.02 * seed,
            "random_f1_macro": 0.3,
            "majority_f1": 0.5,
            "majority_f1_macro": 0.2,
            "real_f1": 0.8 + 0.02 * seed,
            "real_f1_macro": 0.6,
            "n_train": 30,
        },
        "fidelity": {
            "mauve": 0.2 + 0.2 * step - F1[generator] / 5,
            "mauve_ref": 0.9,
            "entity_div": 0.3,
            "entity_div_ref": 0.1,
            "length_div": 0.4,
            "length_div_ref": 0.05,
            "length_mean_syn": 42.0,
        },
        # as task=benchmark writes it from the metrics it ran (`Metric.higher_is_better`): the report reads it here
        "higher_is_better": {
            "utility.f1_micro": True,
            "utility.f1_macro": True,
            "fidelity.mauve": True,
            "fidelity.entity_div": False,
            "fidelity.length_div": False,
        },
    }


def audit_results(generator: str, eps: float, lower: float) -> dict[str, Any]:
    """A k-subset audit's figures, on a design whose ceiling (3.9, a perfect attack's p-value 0.08 against eps = 4)
    could not have shown a violation at eps = 4, which a perfect attack would need 124 runs for."""
    return {
        "generator": generator,
        "epsilon": eps,
        "seed": 0,
        "status": "complete",
        "audit": {
            "mode": "k_subsets",
            "auc": 0.9,
            "tpr_at_fpr_0.001": 0.05,
            "tpr_at_fpr_0.01": 0.2,
            "tpr_at_fpr_0.1": 0.6,
            "eps_emp": lower + 0.5,
            "eps_emp_lower": lower,
            "eps_ceiling": 3.9,
            "p_value_floor": 0.08,
            "n_needed": 124,
            "n_needed_unit": "runs",
            "confidence": 0.95,
        },
    }


def one_run_audit(plugin: str, name: str, eps: float | str, seed: int, p_value: float) -> dict[str, Any]:
    """A one-run audit's results with every key task=audit writes (both target kinds, four FPRs, the paper reading's
    calibration), its figures varying with the seed so each cell is an interval: the widest audit rows a sweep makes.
    """
    shift = 0.05 * seed
    kinds = {
        f"{kind}.{key}": value
        for kind, n in (("outliers", 24), ("canaries", 300))
        for key, value in (
            ("n_targets", n),
            ("auc", 0.93 + shift),
            ("eps_emp", 2.3 + shift),
            ("eps_emp_lower", 1.1 + shift),
            ("gdp_mu_lower", 0.6 + shift),
            ("p_value", p_value),
            ("claim_epsilon", eps),
            ("claim_delta", 1.87e-05),
            ("eps_ceiling", 3.87 + shift),
            ("p_value_floor", 0.08 if eps == 4.0 else 1e-4),
        )
    }
    return {
        "generator": plugin,
        "generator_name": name,
        "dataset": "drugreview_condition6",
        "epsilon": eps,
        "seed": seed,
        "status": "complete",
        "audit": {
            "mode": "one_run",
            "n_runs": 1,
            "n_trials": 324,
            "confidence": 0.95,
            "auc": 0.912 + shift,
            **{f"tpr_at_fpr_{f}": 0.6 + f + shift for f in (0.001, 0.01, 0.1, 0.2)},
            "eps_emp": 5.0186 + shift,
            "eps_emp_lower_holdout": 3.4845 + shift,
            "eps_emp_lower_bonferroni": 3.2825 + shift,
            "eps_emp_lower": 3.4845 + shift,
            "p_value": p_value,
            "claim_epsilon": eps,
            # a perfect attack's bound on this design: below eps = 4 (inconclusive there; 362 targets would do)
            "eps_ceiling": 3.87 + shift,
            "p_value_floor": 0.08 if eps == 4.0 else 1e-4,
            "n_needed": 362 if eps == 4.0 else None,
            "n_needed_unit": "targets",
            "gdp_mu_lower": 1.4757 + shift,
            "targets": "both",
            "canary_repeats": 1,
            "paper_reading_false_alarm": 0.622,
            **kinds,
        },
    }


def add_wide_audits(root: Path) -> None:
    """Audits of two grid variants and a command program over three seeds, one of them rejecting its claim in every
    seed, under the long names real sweeps have: the report's widest tables, for the layout test."""
    for plugin, name, eps, p_value in (
        ("dpgen", "dpgen_grid", 1.0, 0.38),
        ("dpgen", "dpgen_grid", "inf", 1.0),
        ("dpdiffusion", "dpdiffusion_grid", 4.0, 0.5),
        ("command", "paraphrasing_copier", 1.0, 1e-9),
    ):
        for seed in range(3):
            folder = f"audit.mode=one_run,eps={eps},generator={name},seed={seed}"
            write_job(root, "audit", folder, one_run_audit(plugin, name, eps, seed, p_value))


def roc_png(path: Path) -> None:
    """The ROC image task=audit writes, of a strong attack on 50 targets."""
    members = np.arange(100) % 2 == 0
    scores = members + np.random.default_rng(0).normal(0, 0.6, 100)
    plot_roc(RocCurve.from_scores(scores, members), path, nominal_eps=1.0, delta=1e-5, eps_grid=AuditOptions().eps_grid)


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    root = tmp_path / "outputs" / SWEEP
    for generator in F1:
        for step, (name, eps) in enumerate(EPS.items()):
            for seed in (0, 1):
                results = benchmark_results(generator, step, eps, seed)
                if generator == "beta" and name == "4" and seed == 1:
                    results["noise"] = "seeded"
                if generator == "alpha" and name == "inf":
                    results["non_dp_outputs"] = ["utility.real_f1"]
                if generator == "beta" and name == "1":  # the operator's reference only: not the generator's release
                    results["non_dp_outputs"] = results["diagnostic_outputs"] = ["utility.real_f1"]
                write_job(root, "benchmark", f"eps={name},generator={generator},seed={seed}", results)
    write_job(
        root,
        "benchmark",
        "eps=1,generator=gamma",
        {
            "generator": "gamma",
            "epsilon": 1.0,
            "seed": 0,
            "status": "failed",
            "utility": {},
            "fidelity": {},
            "error": {"type": "DataError", "message": "train.jsonl line 3: no text"},
        },
    )
    roc_png(write_job(root, "audit", "eps=1,generator=alpha", audit_results("alpha", 1.0, 1.8)) / "audit_roc.png")
    write_job(root, "audit", "eps=4,generator=beta", audit_results("beta", 4.0, 0.4))
    write_job(root, "audit", "eps=4,generator=copy", audit_results("copy", 4.0, 4.96) | {"non_private_control": True})
    write_job(
        root,
        "audit",
        "eps=2,generator=beta",
        {
            "generator": "beta",
            "epsilon": 2.0,
            "seed": 0,
            "status": "running",
            "audit": {},
            "config": {"audit": {"mode": "one_run"}},
        },
    )
    (root / "benchmark" / "broken").mkdir()
    (root / "benchmark" / "broken" / "results.json").write_text('{"task": "benchmark", "status": "compl')
    (root / "audit" / "eps=1,generator=alpha" / "runs").mkdir()
    (root / "audit" / "eps=1,generator=alpha" / "runs" / "run_0.json").write_text(json.dumps({"text": SENTINEL}))
    return root


def md_tables(markdown: str) -> dict[str, dict[str, list[str]]]:
    """Each Markdown table by its caption: the header row under 'header', the others keyed by the cells before
    'seeds' ('alpha 1', 'toyset beta k_subsets 4'), or by their first cell."""
    tables: dict[str, dict[str, list[str]]] = {}
    for line in markdown.splitlines():
        if re.fullmatch(r"\*[^*].*\*", line):
            rows = tables[line.strip("*")] = {}
        elif line.startswith("| ") and not rows:
            rows["header"] = [c.strip() for c in line[2:-2].split(" | ")]
        elif line.startswith("| "):
            cells = [c.strip() for c in line[2:-2].split(" | ")]
            rows[
                " ".join(cells[: rows["header"].index("seeds")] if "seeds" in rows["header"] else cells[:1]).strip()
            ] = cells
    return tables


def test_report_task_writes_tables_with_intervals_baselines_failures_and_violations(sweep: Path) -> None:
    run_cli(["task=report", f"sweep={SWEEP}", f"output_root={sweep.parent}", "tracking=none"], cwd=sweep.parent)
    markdown = (sweep / "report.md").read_text()
    page = (sweep / "report.html").read_text()
    tables = md_tables(markdown)
    rows, audit = tables["toyset: utility and fidelity"], tables["privacy audit"]
    assert [name for name in tables if name.endswith("utility and fidelity")] == ["toyset: utility and fidelity"]
    # two seeds 0.50 and 0.60: mean 0.550, half-width t(0.975, 1) * s / sqrt(2) = 12.706 * 0.05 = 0.635
    assert rows["alpha 1"][:5] == ["alpha", "1", "2", "**0.550 ± 0.635**", "**0.350 ± 0.635**"]
    assert rows["beta 1"][3] == "0.350 ± 0.635" and rows["beta 1"][6] == "0.300 ± 0.000"  # a tie marks nothing
    assert rows["alpha† ∞"][3] == "**0.650 ± 0.635**" and rows["beta‡ 4"][0] == "beta‡"
    assert [row[:5] for key, row in rows.items() if key.startswith("*")] == [
        ["*random*", "", "*2*", "*0.340 ± 0.127*", "*0.300 ± 0.000*"],
        ["*majority*", "", "*2*", "*0.500 ± 0.000*", "*0.200 ± 0.000*"],
        ["*real data*", "", "*2*", "*0.810 ± 0.127*", "*0.600 ± 0.000*"],
        ["*real vs real*", "", "*2*", "", ""],
    ]
    assert rows["*real vs real*"][5:] == ["*0.900 ± 0.000*", "*0.100 ± 0.000*", "*0.050 ± 0.000*"]
    assert rows["gamma 1"][2:5] == ["0 (+1 failed)", "– (failed)", "– (failed)"]
    assert rows["header"][3:] == ["f1_micro ↑", "f1_macro ↑", "mauve ↑", "entity_div ↓", "length_div ↓"]
    assert tables["toyset: other metric keys"]["alpha 1"][3:] == ["42 ± 0.000", "30 ± 0.000"]
    unfinished = tables["jobs without final results"]
    assert unfinished["benchmark/eps=1,generator=gamma"][-2:] == ["failed", "DataError: train.jsonl line 3: no text"]
    assert unfinished["audit/eps=2,generator=beta"][-2] == "running"
    assert unfinished["benchmark/broken"][-2:] == ["unreadable", "results.json unreadable (JSONDecodeError)"]
    assert audit["toyset alpha k_subsets 1"][5:] == [
        "0.900",
        "0.050",
        "0.200",
        "0.600",
        "2.300",
        "**⚠ 1.800**",
        "3.900",
        "**⚠ VIOLATION**",
    ]
    # the design could not have shown a violation at eps = 4: never "no"
    assert audit["toyset beta k_subsets 4"][-3:] == [
        "0.400",
        "3.900",
        "inconclusive (ceiling 3.90 ≤ ε 4; needs 124 runs)",
    ]
    assert audit["toyset copy¶ k_subsets 4"][-3:] == ["4.960", "3.900", "n/a (non-private control)"]
    assert audit["toyset beta one_run 2"][4:] == ["0 (+1 running)"] + ["– (running)"] * 8
    for note in ("† not DP", "‡ seeded noise", "¶ non-private control", "Student t"):
        assert note in markdown, note
    assert "length_mean_syn" in markdown and "<details>" in page  # the other keys, folded away in HTML
    assert page.count("data:image/png;base64,") == 3  # F1/MAUVE vs eps, bound vs nominal, one audit ROC
    assert 'class="violation"' in page and "<link" not in page and "<script" not in page
    assert all((sweep / "report_figures" / name).is_file() for name in re.findall(r"report_figures/([^>]+)>", markdown))
    for text in (markdown, page):
        assert SENTINEL not in text and "PATIENT" not in text


def test_the_comparison_table_keeps_the_pages_one_interval_and_gives_seconds_per_job(sweep: Path) -> None:
    for seed, seconds in ((0, {"fit_s": 10.0, "sample_s": 2.0}), (1, {"fit_s": 14.0, "sample_s": 4.0})):
        path = sweep / "benchmark" / f"eps=1,generator=alpha,seed={seed}" / "results.json"
        path.write_text(json.dumps(json.loads(path.read_text()) | {"timing": seconds}))
    write_report(sweep, 0.95)
    compared = md_tables((sweep / "report.md").read_text())[
        "toyset: generators compared (mean ± the 95% t interval over seeds)"
    ]
    assert compared["header"] == ["generator", "ε", "seeds", "macro F1 ↑", "micro F1 ↑", "MAUVE ↑", "s / job"]
    # macro F1 0.30 and 0.40 over two seeds: mean 0.350, SD 0.0707, half-width t(0.975, 1) * SD / sqrt(2) =
    # 12.706 * 0.050 = 0.635, the interval the utility table above gives; seconds 12, 18
    assert compared["alpha 1"][3:] == ["0.350 ± 0.635", "0.550 ± 0.635", "0.100 ± 0.000", "15"]
    assert compared["beta 1"][-1] == ""  # no timing recorded
    assert compared["*majority*"][3:5] == ["*0.200 ± 0.000*", "*0.500 ± 0.000*"]
    assert "gamma 1" not in compared
    assert "standard error" not in (sweep / "report.md").read_text()  # one convention on the page


def test_a_sweep_without_results_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_cli(
        ["task=report", "sweep=nothing", f"output_root={tmp_path}", "tracking=none"], cwd=tmp_path, check=False
    )
    assert proc.returncode == 2 and "no results.json under" in proc.stderr and "sweep=<name>" in proc.stderr


def test_the_report_opens_only_results_and_roc_images(sweep: Path) -> None:
    """An audit hook records every file the report opens inside the sweep folder."""
    opened: list[Path] = []
    recording = [True]

    def hook(event: str, args: tuple) -> None:
        if (
            recording[0]
            and event == "open"
            and isinstance(args[0], (str, Path))
            and str(args[0]).startswith(str(sweep))
        ):
            opened.append(Path(args[0]))

    sys.addaudithook(hook)  # hooks cannot be removed; this one stops recording after the call
    try:
        written = write_report(sweep, 0.95)
    finally:
        recording[0] = False
    outputs = {p.name for p in written} | {p.name for p in (sweep / "report_figures").iterdir()}
    read = {p.name for p in opened if p.name not in outputs and not p.name.startswith(".report.")}
    assert read == {"results.json", "audit_roc.png"}


def test_the_report_imports_no_generator_model_or_dataset_code(sweep: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from synbench.report.build import write_report; "
        f"write_report(Path({str(sweep)!r}), 0.95); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'spacy', 'datasets') "
        "or m.startswith(('synbench.generators', 'synbench.data', 'synbench.audit', 'synbench.metrics', "
        "'synbench.tasks'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]"


class Cells(HTMLParser):
    """The text of every <td> of a page, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self.inside = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "td":
            self.inside, _ = True, self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        self.inside = self.inside and tag != "td"

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.cells[-1] += data


# Appended to a copy of report.html: after load it writes what the browser laid out into a <pre>, which
# --dump-dom then prints (the report itself has no script).
LAYOUT_PROBE = """<script>
window.addEventListener("load", () => {
  document.querySelectorAll("details").forEach(d => { d.open = true; });  // folded tables are laid out too
  const width = window.innerWidth, box = e => e.getBoundingClientRect();
  const inScroller = e => e.parentElement && e.parentElement.closest(".scroll");
  const probe = document.createElement("pre");
  probe.id = "layout-probe";
  probe.textContent = JSON.stringify({
    viewport: width, page_width: document.documentElement.scrollWidth,
    // per table: its right edge, where what shows of it ends (its scrolling box's edge, or the window's), its last
    // column's title and right edge
    tables: [...document.querySelectorAll("table")].map(t => ({
      rows: t.rows.length, right: box(t).right, scrolled: !!inScroller(t),
      shown_to: inScroller(t) ? Math.min(width, box(inScroller(t)).right) : width,
      caption: (t.closest("figure")?.querySelector("figcaption")?.textContent || "").trim(),
      last_column: t.rows[0].cells[t.rows[0].cells.length - 1].textContent,
      last_column_right: box(t.rows[0].cells[t.rows[0].cells.length - 1]).right})),
    images: [...document.images].map(i => ({loaded: i.complete && i.naturalWidth > 0, width: box(i).width,
                                            right: box(i).right})),
    scrolling_boxes: [...document.querySelectorAll(".scroll")].filter(e => e.scrollWidth > e.clientWidth + 1).length,
    overflowing: [...document.body.querySelectorAll("*")].filter(e => box(e).right > width + 1 && !inScroller(e))
                                                      .map(e => e.tagName.toLowerCase())});
  document.body.appendChild(probe);
});
</script>"""


def chromium_or_skip() -> str:
    """The `chromium` binary; CI (.ci/run installs it and sets SYNBENCH_REQUIRE_CHROMIUM=1) fails instead of
    skipping."""
    chromium = shutil.which("chromium")
    if chromium is None:
        if os.environ.get("SYNBENCH_REQUIRE_CHROMIUM") == "1":
            pytest.fail("SYNBENCH_REQUIRE_CHROMIUM=1 but no `chromium` binary (Debian: apt-get install -y chromium)")
        pytest.skip("the `chromium` binary is not installed (Debian: apt-get install -y chromium)")
    return chromium


def rendered_layout(browser: list[str], page: Path, width: int) -> tuple[dict[str, Any], str]:
    """The probe's layout figures and the dumped DOM of `page` in a window `width` pixels wide."""
    probed = page.with_name("report_probed.html")
    probed.write_text(page.read_text().replace("</body>", LAYOUT_PROBE + "</body>"))
    dom = subprocess.run(
        [*browser, f"--window-size={width},1000", "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    probe = re.search(r'<pre id="layout-probe">(.*?)</pre>', dom, re.S)
    assert probe, "the layout probe did not run: the page did not finish loading in headless Chromium"
    return json.loads(html.unescape(probe.group(1))), dom


def test_report_renders_in_headless_chromium(sweep: Path, tmp_path: Path) -> None:
    """The report as a browser draws it: every table and plot is there and laid out, and nothing is wider than the
    window (a wide table scrolls inside its own box), at a desktop and at a laptop-narrow width. At 1400 px every
    table, the audit tables of one-run audits over three seeds with their verdict column included, fits whole."""
    chromium = chromium_or_skip()
    add_wide_audits(sweep)
    markdown, page = write_report(sweep, 0.95)
    browser = [
        chromium,
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    n_tables = sum(line.startswith("| ---") or line.startswith("|---") for line in markdown.read_text().splitlines())
    n_figures = len(re.findall(r"!\[", markdown.read_text()))
    assert n_tables >= 3 and n_figures >= 3  # utility, audit and audit-detail tables; F1, MAUVE, eps and ROC plots
    for width in (1400, 900):
        layout, dom = rendered_layout(browser, page, width)
        assert layout["viewport"] == width
        assert layout["page_width"] <= width, f"the page is {layout['page_width']} px wide in a {width} px window"
        assert layout["overflowing"] == [], f"elements past the right edge at {width} px: {layout['overflowing']}"
        assert len(layout["tables"]) == n_tables and all(t["rows"] >= 2 for t in layout["tables"])
        assert all(t["right"] <= width or t["scrolled"] for t in layout["tables"])
        if width == 1400:  # on a desktop window every table fits: none hides a column, its last (a verdict) included
            cut = {
                t["caption"]: (t["last_column"], round(t["right"]), round(t["shown_to"]))
                for t in layout["tables"]
                if max(t["right"], t["last_column_right"]) > t["shown_to"] + 0.5
            }
            assert cut == {}, f"tables cut off at {width} px (last column, right edge, edge of what shows): {cut}"
            assert layout["scrolling_boxes"] == 0
        assert len(layout["images"]) == n_figures
        assert all(i["loaded"] and 100 <= i["width"] and i["right"] <= width for i in layout["images"]), layout[
            "images"
        ]
    parser = Cells()
    parser.feed(dom)
    for cell in (
        "0.550 ± 0.635",
        "0.340 ± 0.127",
        "– (failed)",
        "– (running)",
        "VIOLATION",
        "DataError: train.jsonl line 3: no text",
        "dpgen_grid",
        "paraphrasing_copier",
    ):
        assert cell in parser.cells, cell
    shot = tmp_path / "report.png"
    subprocess.run(
        [*browser, f"--screenshot={shot}", "--window-size=1400,2000", page.as_uri()],
        check=True,
        capture_output=True,
        timeout=60,
    )
    pixels = np.asarray(Image.open(shot).convert("RGB"))
    assert pixels.shape[:2] == (2000, 1400)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 200 and (pixels < 200).any(axis=2).mean() > 0.01


def test_macro_f1_leads_the_summary_and_the_table_on_imbalanced_labels() -> None:
    """Where micro F1 is mostly the majority class (majority >= 1.5x random), macro F1 is the first figure shown:
    the utility line's, with all its reference rows; the figures below it list only the other F1."""
    import pandas as pd

    from synbench.report.benchmark import lead
    from synbench.report.summary import summary

    imbalanced = {
        "f1_micro": 0.52,
        "f1_macro": 0.31,
        "random_f1": 0.197,
        "random_f1_macro": 0.155,
        "majority_f1": 0.514,
        "majority_f1_macro": 0.113,
        "real_f1": 0.74,
        "real_f1_macro": 0.61,
    }
    balanced = {**imbalanced, "majority_f1": 0.34, "random_f1": 0.33}
    for utility, first, other in (
        (
            imbalanced,
            "Utility: F1 macro 0.31: above random (0.155), above majority (0.113), real data 0.61;",
            "F1 micro: 0.52 (random 0.197, majority 0.514, real 0.74)",
        ),
        (
            balanced,
            "Utility: F1 micro 0.52: above random (0.33), above majority (0.34), real data 0.74;",
            "F1 macro: 0.31 (random 0.155, majority 0.113, real 0.61)",
        ),
    ):
        lines = summary(
            JobRecord.from_json(
                {
                    "task": "benchmark",
                    "generator": "dpgen",
                    "dataset": "d",
                    "epsilon": 4.0,
                    "epsilon_spent": 4.0,
                    "delta": 1e-5,
                    "utility": utility,
                    "fidelity": {},
                    "audit": {},
                }
            )
        ).splitlines()
        figures = [line.strip() for line in lines if line.strip().startswith(("F1 micro:", "F1 macro:"))]
        assert any(line.strip().startswith(first) for line in lines) and figures == [other]
    jobs = pd.DataFrame([{f"utility.{k}": v for k, v in imbalanced.items()}])
    assert lead(jobs)[:2] == ("utility.f1_macro", "utility.f1_micro")
    assert lead(jobs.assign(**{"utility.majority_f1": 0.34, "utility.random_f1": 0.33}))[:2] == (
        "utility.f1_micro",
        "utility.f1_macro",
    )


def test_the_summary_puts_headline_figures_beside_their_references() -> None:
    from synbench.report.summary import summary

    text = summary(
        JobRecord.from_json(
            {
                "task": "benchmark",
                "generator": "dpgen",
                "dataset": "drugreview",
                "epsilon": 4.0,
                "epsilon_spent": 3.9997,
                "delta": 2.8e-6,
                "utility": {"f1_micro": 0.575, "random_f1": 0.325, "real_f1": 0.697},
                "fidelity": {"mauve": 0.241, "mauve_ref": 0.978},
                "audit": {},
            }
        )
    )
    assert "epsilon_spent=4" in text and "Utility: F1 micro 0.575: above random (0.325), real data 0.697;" in text
    assert "MAUVE: 0.241 (real vs real 0.978)" in text and "AUC" not in text
