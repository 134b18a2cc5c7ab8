"""The report's utility and fidelity tables leave out the label-cardinality JS where it means nothing: on a table whose
jobs are all single-label (the `labels` metric's shares of documents with two or more labels are 0 on both sides) every
document's cardinality is 1 and the divergence 0 by construction, as the job summary already says by skipping it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from synbench.report.benchmark import DatasetTables, benchmark_tables
from synbench.report.load import load_results

CARDINALITY = "label_cardinality_div"


def write_job(root: Path, dataset: str, seed: int, fidelity: dict[str, float]) -> None:
    """One benchmark job's results.json as task=benchmark writes it: the header, its metric sections and the
    directions of the keys its metrics declared (`higher_is_better`)."""
    job = root / "benchmark" / f"dataset={dataset},seed={seed}"
    job.mkdir(parents=True)
    results: dict[str, Any] = {
        "task": "benchmark",
        "report_section": "benchmark",
        "dataset": dataset,
        "generator": "alpha",
        "epsilon": 4.0,
        "delta": 1e-5,
        "seed": seed,
        "status": "complete",
        "noise": "secure",
        "non_dp_outputs": [],
        "config": {"note": "x"},
        "utility": {"f1_micro": 0.5 + 0.1 * seed, "f1_macro": 0.4 + 0.1 * seed},
        "fidelity": {"mauve": 0.6 + 0.05 * seed, "mauve_ref": 0.9, **fidelity},
        "higher_is_better": {
            "utility.f1_micro": True,
            "utility.f1_macro": True,
            "fidelity.mauve": True,
            "fidelity.label_cardinality_div": False,
            "fidelity.label_set_div": False,
        },
    }
    (job / "results.json").write_text(json.dumps(results))


def labels(cardinality: float, share_real: float, share_syn: float) -> dict[str, float]:
    """The `labels` metric's keys as it writes them (synbench/metrics/labels.py)."""
    return {
        "label_cardinality_div": cardinality,
        "label_cardinality_div_ref": cardinality / 2,
        "label_set_div": 0.3,
        "label_set_div_ref": 0.1,
        "label_multi_share_real": share_real,
        "label_multi_share_syn": share_syn,
        "label_cardinality_mean_real": 1.0 + share_real,
        "label_cardinality_mean_syn": 1.0 + share_syn,
    }


def headers(tables: DatasetTables) -> list[str]:
    return [*tables.main.columns, *(tables.other.columns if tables.other else ())]


def test_the_cardinality_column_is_shown_only_where_some_job_is_multi_label(tmp_path: Path) -> None:
    root = tmp_path / "outputs" / "sweep"
    for seed in (0, 1):
        write_job(root, "single", seed, labels(0.0, 0.0, 0.0))
        # one job's synthetic side carries a document of two labels: the divergence then says something
        write_job(root, "mixed", seed, labels(0.0, 0.0, 0.05 * seed))
        write_job(root, "multi", seed, labels(0.2, 0.4, 0.3))
    # results written before the metric recorded its shares: nothing says single-label, so the column stays
    for seed in (0, 1):
        old = {k: v for k, v in labels(0.0, 0.0, 0.0).items() if not k.startswith("label_multi_share")}
        write_job(root, "older", seed, old)
    tables = {found.dataset: found for found in benchmark_tables(load_results(root), 0.95)}
    assert set(tables) == {"single", "mixed", "multi", "older"}

    single = headers(tables["single"])
    assert not [h for h in single if CARDINALITY in h], single  # neither the column nor its reference
    assert any(h.startswith("label_set_div") for h in single)  # the other label metrics stay
    for dataset in ("mixed", "multi", "older"):
        assert f"{CARDINALITY} ↓" in tables[dataset].main.columns, dataset
        reference = next(row for row in tables[dataset].main.rows if row[0].text == "real vs real")
        column = tables[dataset].main.columns.index(f"{CARDINALITY} ↓")
        assert reference[column].text, dataset  # its real-vs-real reference is beside it, not in another table
        assert not [h for h in headers(tables[dataset]) if h.startswith(f"{CARDINALITY}_ref")], dataset
