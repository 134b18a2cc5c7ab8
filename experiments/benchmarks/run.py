"""`make bench`: run every `bench_*.py` here (or those named on the command line) and save their figures.

Each benchmark module has `main() -> dict` returning JSON-able figures; they
are written to `experiments/benchmarks/results/<module>.json` and printed.
Then every module's latest figures are gathered, with the machine they were
measured on, into one `results/bench.json` and a Markdown table `results/bench.md`;
a benchmark that also writes a Markdown section of its own (`results/bench_<name>.section.md`,
e.g. bench_demo_grid's generator comparison) has it shown above that table.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_one(path: Path) -> dict:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = module.main()
    out = HERE / "results" / f"{path.stem}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    return figures


def flat(figures: dict, prefix: str = "") -> dict[str, object]:
    """Nested figures as `a.b` keys (the Markdown table's rows)."""
    out: dict[str, object] = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def gather() -> dict:
    """Every benchmark's latest figures and the machine, as written to bench.json and bench.md."""
    results = HERE / "results"
    benches = {p.stem: json.loads(p.read_text()) for p in sorted(results.glob("bench_*.json"))}
    machine = {
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    bundle = {"machine": machine, "benchmarks": benches}
    (results / "bench.json").write_text(json.dumps(bundle, indent=2) + "\n")
    rows = [
        f"| {name} | {key} | {value} |" for name, figures in benches.items() for key, value in flat(figures).items()
    ]
    header = f"Measured on {machine['cpus']} CPU(s), {machine['processor']}, Python {machine['python']}.\n\n"
    sections = "".join(p.read_text() + "\n" for p in sorted(results.glob("bench_*.section.md")))
    (results / "bench.md").write_text(
        header
        + sections
        + "## Every figure\n\n| benchmark | figure | value |\n|---|---|---|\n"
        + "\n".join(rows)
        + "\n"
    )
    return bundle


def main(names: list[str]) -> None:
    paths = sorted(HERE.glob("bench_*.py"))
    if names:
        paths = [p for p in paths if p.stem in names or p.stem.removeprefix("bench_") in names]
    for path in paths:
        print(f"== {path.stem}")
        print(json.dumps(run_one(path), indent=2))
    gather()
    print(f"all figures: {HERE / 'results' / 'bench.json'}, {HERE / 'results' / 'bench.md'}")


if __name__ == "__main__":
    main(sys.argv[1:])
