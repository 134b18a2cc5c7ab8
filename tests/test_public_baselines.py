"""Utility against public knowledge in the report: public baselines as baseline rows, and each generator's gain.

A results frame with known numbers (the columns `synbench.report.load` gives a sweep's results.json files: whether
the job gave its generator no private document, `public_knowledge`, and its `setup`): three seeds of a `public` and a
`template` job, generator `alpha` at eps=1 (every seed) and eps=inf (seed 2 failed), `beta` on a seed no baseline
ran, and the `copy` control. Then a sweep written as results.json files, where a program that was given the private
set reports spending nothing, and the demo grid's baselines experiment, composed as Hydra composes it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hydra import compose, initialize_config_module

from conftest import write_job_results
from synbench.core.corpus import Corpus
from synbench.core.privacy import PrivacySpec
from synbench.generators.public import PublicGenerator
from synbench.generators.template import TemplateGenerator
from synbench.job.run import GeneratorRun
from synbench.report.benchmark import benchmark_tables, is_public_baseline, public_gains
from synbench.report.build import write_report
from synbench.report.comparison import comparison_rows, comparison_table
from synbench.report.gain import INCONCLUSIVE, NO_CLAIM, PRIVATE_LEARNING, SeedVariance, gain, pooled_variance
from synbench.report.load import load_results
from synbench.report.table import Table

DATASET = "toyset"
# macro F1 per seed 0, 1, 2. The best public baseline is template (mean 0.45), though public is higher on seed 0.
PUBLIC = (0.46, 0.40, 0.40)  # mean 0.42
TEMPLATE = (0.41, 0.45, 0.49)  # mean 0.45
ALPHA_EPS1 = (0.61, 0.67, 0.73)  # template + (0.20, 0.22, 0.24)
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
        "public_knowledge": generator in ("public", "template"),  # given no private document (`reads_private`)
        "setup": f"{generator}-{eps}",  # one config per generator and eps
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


def row(generator: str, eps: float) -> tuple[str, str, float, str]:
    """A generator row's key in `public_gains`: dataset, generator, nominal eps and setup."""
    return (DATASET, generator, eps, f"{generator}-{eps}")


def by_label(table: Table) -> dict[str, list[str]]:
    """Each row's cell texts, keyed by its generator cell and ε cell."""
    return {f"{row[0].text} {row[1].text}".strip(): [cell.text for cell in row] for row in table.rows}


def pooled() -> SeedVariance:
    """The private generators' seed variance pooled over alpha's two rows (beta has one seed: nothing to pool; copy
    is a control and keeps its own)."""
    found, p_value = pooled_variance([ALPHA_EPS1, ALPHA_INF])
    assert found is not None and found.df == 3 and p_value > 0.05
    # (2 * 0.0036 + 1 * 0.0098) / 3: the two rows' sample variances weighted by their degrees of freedom
    assert found.variance == pytest.approx(0.0170 / 3)
    return found


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
    # alpha eps=1 against template as two independent means, alpha's variance pooled with its eps=inf row:
    # 0.67 - 0.45 = 0.22
    alpha = gain(ALPHA_EPS1, TEMPLATE, 0.95, pooled())
    assert alpha.mean == pytest.approx(0.22) and alpha.verdict == PRIVATE_LEARNING
    assert rows["alpha 1"][-1] == str(alpha) and rows["alpha 1"][-1].startswith("0.220 ± ")
    # alpha eps=inf on seeds 0 and 1 only (seed 2 failed): 0.48 - 0.45, pooled as well
    assert rows["alpha ∞"][2] == "2 (+1 failed)"
    assert rows["alpha ∞"][-1] == str(gain(ALPHA_INF, TEMPLATE, 0.95, pooled()))
    # beta ran seed 7 alone: no seed of its own to spread, but the pooled variance gives it an interval
    assert rows["beta 4"][-1] == str(gain([0.7], TEMPLATE, 0.95, pooled()))
    # a non-private control stays a row, with its own variance (0 here: only template's uncertainty is left)
    copy = gain([0.8] * 3, TEMPLATE, 0.95)
    assert copy.df == 2 and rows["copy¶ control"][-1] == str(copy) == f"0.350 ± 0.099 ({PRIVATE_LEARNING}; " + (
        f"detects {copy.detectable:.3f} with 80% power)"
    )
    assert not any(label.startswith(("public ", "template ")) for label in rows)


def test_public_gains_per_dataset_generator_and_eps(frame: pd.DataFrame) -> None:
    """The lead's summary reads these: the same figures as the table."""
    gains = public_gains(frame, 0.95)
    assert set(gains) == {row("alpha", 1.0), row("alpha", math.inf), row("beta", 4.0), row("copy", math.inf)}
    assert gains[row("alpha", 1.0)] == gain(ALPHA_EPS1, TEMPLATE, 0.95, pooled())
    assert gains[row("alpha", math.inf)].verdict == INCONCLUSIVE  # 0.03 with a wide interval and a large MDG
    # a 99.99% interval is wide enough to reach 0: the verdict follows the interval, not the mean
    assert public_gains(frame, 0.9999)[row("alpha", 1.0)].verdict != PRIVATE_LEARNING


def test_one_seed_gives_no_interval_and_no_claim_of_private_learning(frame: pd.DataFrame) -> None:
    one = frame[frame["seed"] == 0]
    found = public_gains(one, 0.95)[row("alpha", 1.0)]
    # on seed 0 alone public (0.46) is the best baseline: 0.61 - 0.46; one seed on each side, nothing pooled
    assert found.mean == pytest.approx(0.15) and math.isnan(found.half_width)
    assert found.verdict == NO_CLAIM == "no claim (1 seed)" and str(found) == "0.150: no claim (1 seed)"
    ((table,),) = [[t.main for t in benchmark_tables(one, 0.95)]]
    assert by_label(table)["alpha 1"][-1] == "0.150: no claim (1 seed)"


def test_the_comparison_gives_the_gain_as_mean_and_standard_error_and_the_public_rows_their_cost(
    frame: pd.DataFrame,
) -> None:
    ((dataset, rows),) = comparison_rows(frame).items()
    by_name = {f"{row.label} {row.epsilon}": row for row in rows}
    alpha = by_name["alpha 1.0"].figures()
    se = gain(ALPHA_EPS1, TEMPLATE, None, pooled()).se
    assert (alpha["gain_over_public_mean"], alpha["gain_over_public_se"]) == (0.22, round(se, 4))
    public = by_name["public nan"]
    assert public.baseline and public.gain is None and public.job_s == 31.0  # seconds of 30, 31, 32
    assert [row.label for row in rows if row.baseline] == ["random", "majority", "public", "template"]
    table = comparison_table(dataset, rows)
    assert table.columns[-2:] == ("gain over public ↑", "s / job")
    assert by_label(table)["alpha 1"][-2:] == [f"0.220 ± {se:.3f}", "31"]


def test_without_a_public_baseline_the_tables_have_no_gain_column(frame: pd.DataFrame) -> None:
    private_only = frame[~frame["generator"].isin(["public", "template"])]
    ((found,),) = [[t.main for t in benchmark_tables(private_only, 0.95)]]
    assert found.columns[-1] == "f1_micro ↑" and public_gains(private_only, 0.95) == {}
    ((dataset, rows),) = comparison_rows(private_only).items()
    assert "gain over public ↑" not in comparison_table(dataset, rows).columns


@pytest.mark.slow
def test_the_baselines_experiment_adds_public_and_template_to_the_demo_sweep_at_the_grid_size() -> None:
    """`+experiment=demo_baselines -m`: the three public baselines once per benchmark seed of the grid, eps=inf, in
    the grid's sweep folder and at its document count; the two cheap ones at seven more seeds."""
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        baselines = compose(config_name="config", overrides=["+experiment=demo_baselines"], return_hydra_config=True)
        grid = compose(config_name="config", overrides=["+experiment=demo"], return_hydra_config=True)
        params, grid_params = baselines.hydra.sweeper.params, grid.hydra.sweeper.params
        assert params["generator"] == "public,template,label_names" and str(params["eps"]) == "inf"
        slices = params["+demo_job"].split(",")
        assert slices == [s for s in grid_params["+demo_job"].split(",") if s.startswith("benchmark_")]
        assert baselines.sweep == grid.sweep == "demo"
        more = compose(config_name="config", overrides=["+experiment=demo_baseline_seeds"], return_hydra_config=True)
        assert more.hydra.sweeper.params["generator"] == "template,label_names" and more.sweep == "demo"
        assert more.hydra.sweeper.params["seed"] == "3,4,5,6,7,8,9" and more.task.n_synthetic == 116
        for generator in ("public", "template", "label_names"):
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
                assert job.generator._plugin_ == ("template" if generator == "label_names" else generator)
                assert job.task.name == "benchmark" and job.seed == seed
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


def test_a_generator_in_two_setups_at_one_eps_is_two_rows_named_apart(frame: pd.DataFrame) -> None:
    """Two configs of one generator at one eps are never pooled: each is its own row with its own gain."""
    again = pd.DataFrame([job("alpha", 1.0, s, f1 + 0.2, 0.98, setup="alpha-B") for s, f1 in enumerate(ALPHA_EPS1)])
    ((found,),) = [[t.main for t in benchmark_tables(pd.concat([frame, again]), 0.95)]]
    rows = by_label(found)
    assert rows["alpha [setup alpha-1.0] 1"][-1].startswith("0.220 ± ")
    assert rows["alpha [setup alpha-B] 1"][-1].startswith("0.420 ± ")
    assert PRIVATE_LEARNING in rows["alpha [setup alpha-B] 1"][-1]
    assert rows["alpha ∞"][2] == "2 (+1 failed)"  # one setup at eps=inf: named as before


def benchmark_job(generator: str, eps: float | str, seed: int, f1: float, **fields: Any) -> dict[str, Any]:
    """A complete benchmark job's results.json with imbalanced labels (macro F1 leads) and its description."""
    return {
        "task": "benchmark",
        "dataset": DATASET,
        "generator": generator,
        "epsilon": eps,
        "seed": seed,
        "status": "complete",
        "noise": "secure",
        "config": {"eps": eps, "seed": seed, "generator": {"_plugin_": generator}},
        "utility": {
            "f1_macro": f1,
            "f1_micro": f1 + 0.1,
            "random_f1": 0.3,
            "random_f1_macro": 0.25,
            "majority_f1": 0.6,
            "majority_f1_macro": 0.2,
        },
        "higher_is_better": {"utility.f1_macro": True, "utility.f1_micro": True},
        **fields,
    }


def program(name: str, eps: float, seed: int, f1: float, given: bool | None, **fields: Any) -> dict[str, Any]:
    """A `generator=command` program's job that reports spending nothing; `given`: its `reads_private` (None: a file
    written before the field)."""
    found = benchmark_job("command", eps, seed, f1, generator_name=name, epsilon_spent=0.0, **fields)
    found["config"]["generator"]["name"] = name
    return found | ({} if given is None else {"reads_private": given})


def copies(private: int, unseen: int, p_value: float) -> dict[str, Any]:
    """A disclosure section: `private` of 229 private documents and `unseen` of 148 unseen ones reappear."""
    counts = {"private_reappear": private, "n_private": 229, "unseen_reappear": unseen, "n_unseen": 148}
    return {"disclosure": {**counts, "p_value": p_value, "flagged": p_value < 0.05}}


@pytest.fixture
def copier_sweep(tmp_path: Path) -> Path:
    """public (reads_private false) and template (a file from before the field) on seeds 0-2; a copier that was
    given the private set, reports epsilon_spent 0 and reproduces all 229 private documents; a withheld program
    (reads_private false) at eps=1 and eps=8; a withheld program that the disclosure check flagged anyway; an older
    program's file that reports spending nothing; and the copier's audit, flagged too."""
    root = tmp_path / "sweep"
    for s in range(3):
        public = benchmark_job("public", "inf", s, PUBLIC[s], epsilon_spent=0.0, noise="n/a", reads_private=False)
        write_job_results(root, f"public-{s}", public)
        write_job_results(root, f"template-{s}", benchmark_job("template", "inf", s, TEMPLATE[s], epsilon_spent=0.0))
        copier = program("zero_claim_copier", 1.0, s, 0.61, True, **copies(229, 0, 1e-60))
        write_job_results(root, f"copier-{s}", copier)
        for eps, f1 in ((1.0, 0.30), (8.0, 0.36)):
            write_job_results(root, f"withheld-{eps}-{s}", program("withheld", eps, s, f1 + s / 100, False))
        write_job_results(root, f"old-{s}", program("old_program", 1.0, s, 0.2, None))
    write_job_results(root, "leaky", program("leaky_public", 1.0, 0, 0.5, False, **copies(30, 0, 1e-9)))
    audit = benchmark_job("command", 1.0, 0, 0.61, generator_name="zero_claim_copier", **copies(229, 0, 1e-60))
    audit |= {"task": "audit", "audit": {"mode": "one_run", "eps_emp_lower": 0.5, "p_value": 0.4}}
    write_job_results(root, "copier-audit", audit)
    return root


def test_a_program_that_reports_spending_nothing_is_no_baseline_and_its_flag_shows_beside_it(
    copier_sweep: Path,
) -> None:
    frame = load_results(copier_sweep)
    baselines = set(frame.loc[is_public_baseline(frame), "generator"])
    assert baselines == {"public", "template", "withheld"}  # not the copier, the flagged one, nor the older program
    markdown, page = write_report(copier_sweep, 0.95)
    text = markdown.read_text()
    # the public line names what read nothing: the copier's 0.610 is not there, and the gain is over template
    assert (
        f"{DATASET}: public knowledge alone (no private document given): f1_macro public 0.420 ± 0.086, "
        "template 0.450 ± 0.099, withheld ε=1 0.310 ± 0.025, withheld ε=8 0.370 ± 0.025." in text
    )
    assert "gain over public (template)" in text and "gain over public (zero_claim_copier)" not in text
    flag = "687/687 private, 0/444 unseen†: FLAGGED (seeds 0, 1, 2: p below α/3)"  # 229 of 229 on each of 3 seeds
    row = next(line for line in text.splitlines() if line.startswith("| zero_claim_copier | 1 | 3 |"))
    assert row.endswith(f"| **⚠ {flag}** |")  # beside its row, in the utility table (marked)
    audit_row = next(line for line in text.splitlines() if line.startswith(f"| {DATASET} | zero_claim_copier |"))
    assert audit_row.endswith("| **⚠ 229/229 private, 0/148 unseen†: FLAGGED (seed 0: p below α)** |")
    summary = next(line for line in text.splitlines() if f"{DATASET}, zero_claim_copier, ε = 1:" in line)
    assert (
        "disclosure† 687 of 687 private documents reappear (near-)verbatim, 0 of 444 unseen ones do: FLAGGED "
        "(seeds 0, 1, 2: p below α/3)" in summary
    )
    # why each job that could pass for a baseline is none
    assert (
        "zero_claim_copier at ε = 1 (seeds 0, 1, 2) is no public baseline: given the private documents (results' "
        "reads_private), whatever it reports spending (epsilon_spent 0)" in text
    )
    assert "old_program at ε = 1 (seeds 0, 1, 2) is no public baseline: given the private documents" in text
    assert (
        "leaky_public at ε = 1 (seed 0) is no public baseline: flagged by the disclosure check, though given no "
        "private document" in text
    )
    assert "† not DP: statistics of private data without noise" in text
    html = page.read_text()
    assert "FLAGGED (seeds 0, 1, 2: p below α/3)" in html and "is no public baseline" in html


def test_one_program_at_two_eps_is_two_baseline_rows(copier_sweep: Path) -> None:
    ((found,),) = [[t.main for t in benchmark_tables(load_results(copier_sweep), 0.95)]]
    rows = by_label(found)
    # seeds 0.30, 0.31, 0.32 at eps=1 and 0.36, 0.37, 0.38 at eps=8: never one cell of six
    assert rows["withheld ε=1"][2:4] == ["3", "0.310 ± 0.025"] and rows["withheld ε=8"][2:4] == ["3", "0.370 ± 0.025"]
    assert [row[0].kind for row in found.rows if row[0].text.startswith("withheld")] == ["baseline", "baseline"]


def test_the_job_withholds_the_private_documents_from_public_and_template(monkeypatch: pytest.MonkeyPatch) -> None:
    """Their fit gets the label space and no document, whatever it would do with them."""
    private = Corpus.build([f"private note {i}" for i in range(12)], [("a",), ("b",)] * 6, ("a", "b"))
    seen: list[int] = []
    fit = TemplateGenerator.fit
    monkeypatch.setattr(
        TemplateGenerator, "fit", lambda self, corpus, *a: seen.append(len(corpus)) or fit(self, corpus, *a)
    )
    run = GeneratorRun({"_plugin_": "template"}, "template", PrivacySpec(1.0, 1e-5, "prv"), seed=0, n_synthetic=8)
    assert run.execute(private).synthetic is not None and seen == [0] and not run.reads_private
    assert (
        not PublicGenerator.reads_private({})
        and GeneratorRun(
            {"_plugin_": "copy"}, "copy", PrivacySpec(1.0, 1e-5, "prv"), seed=0, n_synthetic=8
        ).reads_private
    )
