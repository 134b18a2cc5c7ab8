"""`make bench`: run every `bench_*.py` here (or those named on the command line) and save their figures.

Each benchmark module has `main() -> dict` returning JSON-able figures; they
are written to `experiments/benchmarks/results/<module>.json` and printed.
"""
from __future__ import annotations

import importlib.util
import json
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


def main(names: list[str]) -> None:
    paths = sorted(HERE.glob("bench_*.py"))
    if names:
        paths = [p for p in paths if p.stem in names or p.stem.removeprefix("bench_") in names]
    for path in paths:
        print(f"== {path.stem}")
        print(json.dumps(run_one(path), indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
