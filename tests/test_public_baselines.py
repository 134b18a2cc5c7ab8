"""Utility against public knowledge in the report: public baselines as baseline rows, and each generator's gain.

A results frame with known numbers (the columns `synbench.report.load` gives a sweep's results.json files, with
`epsilon_spent`): three seeds of a `public` and a `template` job (both spent 0), generator `alpha` at eps=1 (every
seed) and eps=inf (seed 2 failed), `beta` on a seed no baseline ran, and the `copy` control. Then the demo grid's
baselines experiment, composed as Hydra composes it.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest
from hydra import compose, initialize_config_module

from synbench.report.benchmark import (
    NOT_ABOVE_PUBLIC,
    PRIVATE_LEARNING,
    benchmark_tables,
    public_gains,
)
from synbench.report.comparison import comparison_rows, comparison_table
from synbench.report.table import Table

DATASET = "toyset"
# macro F1 per seed 0, 1, 2. The best public baseline is template (mean 0.45), though public is higher on seed 0.
PUBLIC = (0.46, 0.40, 0.40)  # mean 0.42
TEMPLATE = (0.41, 0.45, 0.49)  # mean 0.45
ALPHA_EPS1 = (0.51, 0.57, 0.63)  # template + (0.10, 0.12, 0.14)
ALPHA_INF = (0.41, 0.55)  # seeds 0 and 1; template + (0.00, 0.10)


def job(generator: str, eps: float, seed: int, f1_macro: float | None, spent: float | None, **extra: Any) -> dict:
    """One job's row as `load_results` gives it: imbalanced labels (majority micro F1 twice random's), so macro F1
    is the headline."""
    complete = f1_macro is not None
    return {
        "job": f"benchmark/{generator},eps={eps},seed={seed}",
        "task": "benchmark",
        "report_section": "benchmark",
        "dataset": DATASET,
        "generator": generator,
        "epsilon": eps,
        "seed": seed,
        "status": "complete" if complete else "failed",
        "reason": "" if complete else "DataError: no text",
        "noise": "secure",
        "non_dp": "",
        "label_space_inferred": False,
        "non_private_control": False,
        "epsilon_spent": spent,
        "job_s": 30.0 + seed,
        "utility.f1_macro": f1_macro,
        "utility.f1_micro": None if f1_macro is None else f1_macro + 0.1,
        "utility.random_f1": 0.3,
        "utility.random_f1_macro": 0.25,
        "utility.majority_f1": 0.6,
        "utility.majority_f1_macro": 0.2,
        "higher_is_better.utility.f1_macro": True,
        "higher_is_better.utility.f1_micro": True,
        **extra,
    }


@pytest.fixture
def frame() -> pd.DataFrame:
    rows = [job("public", math.inf, s, f1, 0.0, noise="n/a") for s, f1 in enumerate(PUBLIC)]
    rows += [job("template", math.inf, s, f1, 0.0) for s, f1 in enumerate(TEMPLATE)]
    rows += [job("alpha", 1.0, s, f1, 0.98) for s, f1 in enumerate(ALPHA_EPS1)]
    rows += [job("alpha", math.inf, s, f1, math.inf) for s, f1 in enumerate(ALPHA_INF)]
    rows += [job("alpha", math.inf, 2, None, None)]
    rows += [job("beta", 4.0, 7, 0.7, 3.9)]
    rows += [job("copy", math.inf, s, 0.8, math.inf, non_private_control=True, noise="n/a") for s in range(3)]
    return pd.DataFrame(rows)


def by_label(table: Table) -> dict[str, list[str]]:
    """Each row's cell texts, keyed by its generator cell and ε cell."""
    return {f"{row[0].text} {row[1].text}".strip(): [cell.text for cell in row] for row in table.rows}


def test_public_baselines_are_baseline_rows_and_every_generator_row_gets_its_gain(frame: pd.DataFrame) -> None:
    ((found,),) = [[t.main for t in benchmark_tables(frame, 0.95)]]
    rows = by_label(found)
    assert found.columns[3:] == ("f1_macro ↑", "f1_micro ↑", "gain over public (template)")
    # baseline rows, after random and majority; public is the control it is (noise n/a), template an ordinary job
    kinds = {row[0].text: row[0].kind for row in found.rows}
    assert [k for k, kind in kinds.items() if kind == "baseline"] == ["random", "majority", "public", "template"]
    # public: 0.46, 0.40, 0.40: mean 0.42, SD 0.0346, half-width t(0.975, 2) * SD / sqrt(3) = 4.303 * 0.0200 = 0.086
    assert rows["public"][2:] == ["3", "0.420 ± 0.086", "0.520 ± 0.086", ""]
    assert rows["template"][2:] == ["3", "0.450 ± 0.099", "0.550 ± 0.099", ""]
    # alpha eps=1 - template, seed by seed: 0.10, 0.12, 0.14: mean 0.12, SD 0.02, half-width 4.303 * 0.01155 = 0.050;
    # lower end 0.070 > 0
    assert rows["alpha 1"][-1] == f"0.120 ± 0.050 ({PRIVATE_LEARNING})"
    # alpha eps=inf on seeds 0 and 1 only (seed 2 failed): 0.00, 0.10: mean 0.05, half-width 12.706 * 0.05 = 0.635
    assert rows["alpha ∞"][2] == "2 (+1 failed)" and rows["alpha ∞"][-1] == f"0.050 ± 0.635 ({NOT_ABOVE_PUBLIC})"
    assert rows["beta 4"][-1] == "– (no seed paired with public)"  # seed 7: no baseline ran it
    assert rows["copy¶ control"][-1] == f"0.350 ± 0.099 ({PRIVATE_LEARNING})"  # a non-private control stays a row
    assert not any(label.startswith(("public ", "template ")) for label in rows)


def test_public_gains_per_dataset_generator_and_eps(frame: pd.DataFrame) -> None:
    """The lead's summary reads these: the same estimates and flags as the table, rows without a pairing left out."""
    gains = public_gains(frame, 0.95)
    assert set(gains) == {(DATASET, "alpha", 1.0), (DATASET, "alpha", math.inf), (DATASET, "copy", math.inf)}
    eps1 = gains[(DATASET, "alpha", 1.0)]
    assert (eps1.baseline, eps1.column, eps1.estimate.n) == ("template", "utility.f1_macro", 3)
    assert eps1.estimate.mean == pytest.approx(0.12) and eps1.estimate.half_width == pytest.approx(0.049683, abs=1e-5)
    assert eps1.flag == PRIVATE_LEARNING and gains[(DATASET, "alpha", math.inf)].flag == NOT_ABOVE_PUBLIC
    # a 99.9% interval is wide enough to reach 0: the flag follows the interval, not the mean
    assert public_gains(frame, 0.999)[(DATASET, "alpha", 1.0)].flag == NOT_ABOVE_PUBLIC


def test_one_seed_gives_no_interval_and_no_claim_of_private_learning(frame: pd.DataFrame) -> None:
    one = frame[frame["seed"] == 0]
    gain = public_gains(one, 0.95)[(DATASET, "alpha", 1.0)]
    # on seed 0 alone public (0.46) is the best baseline: 0.51 - 0.46
    assert gain.baseline == "public" and gain.estimate.mean == pytest.approx(0.05)
    assert math.isnan(gain.estimate.half_width)
    assert gain.flag == NOT_ABOVE_PUBLIC


def test_the_comparison_gives_the_gain_as_mean_and_standard_error_and_the_public_rows_their_cost(
    frame: pd.DataFrame,
) -> None:
    ((dataset, rows),) = comparison_rows(frame).items()
    by_name = {f"{row.label} {row.epsilon}": row for row in rows}
    alpha = by_name["alpha 1.0"].figures()
    # SE of 0.10, 0.12, 0.14: 0.02 / sqrt(3) = 0.0115
    assert (alpha["gain_over_public_mean"], alpha["gain_over_public_se"]) == (0.12, 0.0115)
    public = by_name["public nan"]
    assert public.baseline and public.gain is None and public.job_s == 31.0  # seconds of 30, 31, 32
    assert [row.label for row in rows if row.baseline] == ["random", "majority", "public", "template"]
    table = comparison_table(dataset, rows)
    assert table.columns[-2:] == ("gain over public ↑", "s / job")
    assert by_label(table)["alpha 1"][-2:] == ["0.120 ± 0.012", "31"]


def test_without_a_public_baseline_the_tables_have_no_gain_column(frame: pd.DataFrame) -> None:
    private_only = frame[~frame["generator"].isin(["public", "template"])]
    ((found,),) = [[t.main for t in benchmark_tables(private_only, 0.95)]]
    assert found.columns[-1] == "f1_micro ↑" and public_gains(private_only, 0.95) == {}
    ((dataset, rows),) = comparison_rows(private_only).items()
    assert "gain over public ↑" not in comparison_table(dataset, rows).columns


def test_the_baselines_experiment_adds_public_and_template_to_the_demo_sweep_at_the_grid_size() -> None:
    """`+experiment=demo_baselines -m`: the two public baselines once per benchmark seed of the grid, eps=inf, in the
    grid's sweep folder and at its document count."""
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        baselines = compose(config_name="config", overrides=["+experiment=demo_baselines"], return_hydra_config=True)
        grid = compose(config_name="config", overrides=["+experiment=demo"], return_hydra_config=True)
        params, grid_params = baselines.hydra.sweeper.params, grid.hydra.sweeper.params
        assert params["generator"] == "public,template" and str(params["eps"]) == "inf"
        slices = params["+demo_job"].split(",")
        assert slices == [s for s in grid_params["+demo_job"].split(",") if s.startswith("benchmark_")]
        assert baselines.sweep == grid.sweep == "demo"
        for generator in ("public", "template"):
            for seed, slice_ in enumerate(slices):
                job = compose(
                    config_name="config",
                    overrides=[
                        "+experiment=demo_baselines",
                        f"generator={generator}",
                        f"+demo_job={slice_}",
                        "eps=inf",
                    ],
                )
                grid_job = compose(
                    config_name="config",
                    overrides=["+experiment=demo", "generator=dpgen_grid", f"+demo_job={slice_}", "eps=inf"],
                )
                assert job.generator._plugin_ == generator and job.task.name == "benchmark" and job.seed == seed
                assert job.task.n_synthetic == grid_job.task.n_synthetic == 116
                assert math.isinf(job.eps) and job.dataset == grid_job.dataset


def test_the_baselines_sweep_passes_its_sweep_point_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each point composes and types its generator before the first job runs, as `python -m synbench -m` does."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from synbench.cli.sweeps import check_sweep_points, sweep_points

    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)  # as in on_multirun_start, whatever ran before here
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        hydra = GlobalHydra.instance().hydra
        assert hydra is not None
        config = hydra.compose_config(
            config_name="config", overrides=["+experiment=demo_baselines"], run_mode=RunMode.MULTIRUN
        )
        assert {o for point in sweep_points(config) for o in point} >= {"generator=public", "generator=template"}
        check_sweep_points(config)
