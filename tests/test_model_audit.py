"""Membership attacks on downstream models: the statistic, LiRA and RMIA by hand, null and over-fitted models, DP head,
the task."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import norm

from conftest import compose_config, reviews_dataset, run_cli
from synbench.audit import RocCurve, empirical_epsilon_lower_bound
from synbench.core import schema
from synbench.core.base import ModelSignals
from synbench.core.errors import ConfigError, PluginError
from synbench.core.privacy import NoiseSource, PrivacySpec
from synbench.dp import accounting
from synbench.dp.poisson import PoissonPlan
from synbench.model_audit.attacks import LiraAttack, LogitAttack, RmiaAttack, logit_confidence
from synbench.model_audit.config import HeadOptions, ModelAuditOptions
from synbench.model_audit.head import LogisticHead

ATTACKS = {"logits": LogitAttack(), "lira": LiraAttack(), "rmia": RmiaAttack()}
WORDS = (
    "dose tablet nausea headache insomnia rash dizzy tired anxious relief pain weeks months daily doctor "
    "switched stopped started worse better severe mild sleep weight appetite mood"
).split()


def signals(
    target: list[float],
    refs: list[list[float]],
    inclusion: list[list[bool]],
    pop_target: list[float],
    pop_refs: list[list[float]],
) -> ModelSignals:
    col = lambda a: np.asarray(a, dtype=float)[..., None]  # noqa: E731  (one label column)
    return ModelSignals(col(target), col(refs), np.asarray(inclusion), col(pop_target), col(pop_refs))


# --- the statistic and hand-computed attacks ---------------------------------------------------------------------


def test_logit_confidence_single_and_multi_label() -> None:
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    truth = np.array([[1, 0, 0], [1, 0, 0]])
    np.testing.assert_allclose(logit_confidence(probs, truth, False)[:, 0], [math.log(0.7 / 0.3), math.log(0.1 / 0.9)])
    ml = logit_confidence(np.array([[0.9, 0.2]]), np.array([[1, 0]]), True)  # label 0 true (p .9), label 1 false (p .8)
    np.testing.assert_allclose(ml, [[math.log(9), math.log(4)]])
    assert np.isfinite(logit_confidence(np.array([[1.0, 0.0]]), np.array([[1, 0]]), False)).all()  # saturated: finite


def test_lira_online_and_offline_match_hand_computation() -> None:
    # example 0: IN refs 2 and 4 (mean 3, sd sqrt 2), OUT refs 0 and 1 (mean .5, sd sqrt .5); target phi 2.5
    # example 1: IN refs 1 and 1.5 (mean 1.25, sd sqrt .125), OUT refs -1 and 1 (mean 0, sd sqrt 2); target phi 0
    s = signals(
        [2.5, 0.0],
        [[2, 1], [4, -1], [0, 1.5], [1, 1]],
        [[True, False], [True, False], [False, True], [False, True]],
        [0.0],
        [[0.0]] * 4,
    )
    online = LiraAttack(online=True, global_variance=False).score_models(s)
    expect = [
        norm.logpdf(2.5, 3, math.sqrt(2)) - norm.logpdf(2.5, 0.5, math.sqrt(0.5)),
        norm.logpdf(0, 1.25, math.sqrt(0.125)) - norm.logpdf(0, 0, math.sqrt(2)),
    ]
    np.testing.assert_allclose(online, expect)
    offline = LiraAttack(online=False, global_variance=False).score_models(s)
    np.testing.assert_allclose(offline, [norm.logcdf(2.5, 0.5, math.sqrt(0.5)), norm.logcdf(0, 0, math.sqrt(2))])
    # global variance, per side: IN deviations (+-1, +-.25) -> (2 + .125) / (4 - 2); OUT (+-.5, +-1) -> 2.5 / 2
    pooled = LiraAttack(online=True, global_variance=True).score_models(s)
    s_in, s_out = math.sqrt(2.125 / 2), math.sqrt(2.5 / 2)
    np.testing.assert_allclose(
        pooled,
        [
            norm.logpdf(2.5, 3, s_in) - norm.logpdf(2.5, 0.5, s_out),
            norm.logpdf(0, 1.25, s_in) - norm.logpdf(0, 0, s_out),
        ],
    )


def test_rmia_matches_hand_computation_online_and_offline() -> None:
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    # one target x: p(x|target) = .8; reference probabilities .6 (IN), .4 (OUT) -> online p(x) = .5, ratio 1.6
    # population z1, z2, z3 with p(z|target) .5, .9, .2 and reference means .5, .6, .4 -> ratios 1, 1.5, .5
    s = signals(
        [logit(0.8)],
        [[logit(0.6)], [logit(0.4)]],
        [[True], [False]],
        [logit(0.5), logit(0.9), logit(0.2)],
        [[logit(0.5), logit(0.6), logit(0.4)]] * 2,
    )
    assert RmiaAttack(online=True, gamma=1.0).score_models(s)[0] == pytest.approx(1.0)  # 1.6 / {1, 1.5, .5} all >= 1
    assert RmiaAttack(online=True, gamma=1.2).score_models(s)[0] == pytest.approx(2 / 3)  # 1.6/1.5 = 1.07 < 1.2
    # offline, a = .5: p(x) = (1.5 * .4 + .5) / 2 = .55 -> ratio .8/.55 = 1.4545; p(z) = (1.5 p + .5) / 2
    # = .625, .7, .55 -> ratios .8, 1.2857, .3636; 1.4545 / them = 1.82, 1.13, 4.0 -> all >= 1.1, two >= 1.2
    offline = RmiaAttack(online=False, a=0.5, gamma=1.2)
    assert offline.score_models(s)[0] == pytest.approx(2 / 3)
    assert RmiaAttack(online=False, a=0.5, gamma=1.1).score_models(s)[0] == pytest.approx(1.0)


def paired_signals(n: int = 5, m: int = 6, z: int = 7, columns: int = 2, seed: int = 0) -> ModelSignals:
    """Random statistics with each target IN exactly half of the m reference models (the paired design)."""
    rng = np.random.default_rng(seed)
    inclusion = np.array([rng.permutation(m) < m // 2 for _ in range(n)]).T  # (m, n)
    shift = np.where(inclusion, 1.0, 0.0)[:, :, None]
    return ModelSignals(
        rng.normal(size=(n, columns)),
        rng.normal(size=(m, n, columns)) + shift,
        inclusion,
        rng.normal(size=(z, columns)),
        rng.normal(size=(m, z, columns)),
    )


def per_side(s: ModelSignals, member: bool) -> np.ndarray:
    """(n, models on that side, columns): each example's reference statistics where it was IN (OUT)."""
    return np.array([s.references[s.inclusion[:, j] == member, j, :] for j in range(s.target.shape[0])])


def test_lira_median_ddof0_matches_carlini_et_al_code() -> None:
    # Transcribed from tensorflow/privacy research/mi_lira_2021/plot.py, generate_ours and generate_ours_offline
    # (fix_variance=False): location np.median over the models, scale np.std (ddof 0), norm.logpdf with std + 1e-30,
    # averaged over the last axis (their augmentations, our label columns); their sweep ranks by -prediction.
    s = paired_signals()
    dat_in, dat_out = per_side(s, True), per_side(s, False)
    mean_in, mean_out = np.median(dat_in, 1), np.median(dat_out, 1)
    std_in, std_out = np.std(dat_in, 1), np.std(dat_out, 1)
    pr_in = -norm.logpdf(s.target, mean_in, std_in + 1e-30)
    pr_out = -norm.logpdf(s.target, mean_out, std_out + 1e-30)
    online_reference = -(pr_in - pr_out).mean(1)
    offline_reference = -norm.logpdf(s.target, mean_out, std_out + 1e-30).mean(1)
    online = LiraAttack(online=True, global_variance=False, center="median", ddof=0)
    offline = LiraAttack(online=False, global_variance=False, center="median", ddof=0, offline_test="two_sided")
    np.testing.assert_allclose(online.score_models(s), online_reference, rtol=1e-10)
    np.testing.assert_allclose(offline.score_models(s), offline_reference, rtol=1e-10)
    # the defaults (mean, ddof 1, the paper's one-sided offline test) are another attack on the same statistics
    assert not np.allclose(LiraAttack(online=True, global_variance=False).score_models(s), online_reference)
    assert not np.allclose(
        LiraAttack(online=False, global_variance=False, center="median", ddof=0).score_models(s), offline_reference
    )


def test_lira_global_variance_ddof0_matches_tensorflow_privacy_advanced_mia() -> None:
    # Transcribed from tensorflow/privacy tensorflow_privacy/privacy/privacy_tests/membership_inference_attack/
    # advanced_mia.py, compute_score_lira(option="both", fix_variance=True, median_or_mean="mean"): one scale per side,
    # np.nanstd of every deviation from its example's mean; the score -(log_pr_in - log_pr_out) is small for members.
    # One column: their scale pools augmentations too, ours is per label column (labels are different statistics).
    s = paired_signals(columns=1, seed=1)
    dat_in, dat_out = per_side(s, True), per_side(s, False)
    avg_in, avg_out = dat_in.mean(1), dat_out.mean(1)
    std_in = np.nanstd(np.concatenate([x - a[None] for x, a in zip(dat_in, avg_in)]))
    std_out = np.nanstd(np.concatenate([x - a[None] for x, a in zip(dat_out, avg_out)]))
    their_score = -(norm.logpdf(s.target, avg_in, std_in + 1e-30) - norm.logpdf(s.target, avg_out, std_out + 1e-30))
    reference = -their_score.mean(axis=1)  # theirs is small for members, ours large
    ours = LiraAttack(online=True, global_variance=True, center="mean", ddof=0).score_models(s)
    np.testing.assert_allclose(ours, reference, rtol=1e-10)
    assert not np.allclose(LiraAttack(online=True, global_variance=True).score_models(s), reference)  # ddof 1


def test_rmia_top_half_matches_ml_privacy_meter() -> None:
    # Transcribed from privacytrustlab/ml_privacy_meter modules/mia/attacks/rmia.py, run_rmia with
    # num_reference_models=None (M // 2) and get_out_ref_signals: signals are probabilities, samples x models; the OUT
    # signals (IN ones zeroed) sorted in decreasing order, the first M // 2 averaged;
    # p = (1 + a) / 2 mean + (1 - a) / 2; the score is the share of z with ratio_x / ratio_z > 1.
    s, a = paired_signals(n=6, m=4, z=9, columns=1, seed=2), 0.3
    prob = lambda v: expit(v)[..., 0]  # noqa: E731  (one label column)
    target, refs, z_target, z_refs = (
        prob(s.target),
        prob(s.references).T,
        prob(s.population_target),
        prob(s.population_references).T,
    )
    half = max(refs.shape[1] // 2, 1)

    def marginal(signals: np.ndarray, members: np.ndarray) -> np.ndarray:
        out = -np.sort(-(signals * ~members), axis=1)[:, :half]
        return (1 + a) / 2 * out.mean(axis=1) + (1 - a) / 2

    ratio_x = target / marginal(refs, s.inclusion.T)
    ratio_z = z_target / marginal(z_refs, np.zeros_like(z_refs, dtype=bool))
    reference = np.average(ratio_x[:, None] / ratio_z > 1.0, axis=1)
    ours = RmiaAttack(online=False, a=a, gamma=1.0, z_reference="top_half").score_models(s)
    np.testing.assert_array_equal(ours, reference)
    assert not np.array_equal(RmiaAttack(online=False, a=a, gamma=1.0).score_models(s), reference)  # p(z) from all M


def test_attack_options_are_validated_and_composed() -> None:
    with pytest.raises(ConfigError, match=r"lira\.center='mode'.*mean, median"):
        LiraAttack(center="mode")
    with pytest.raises(ConfigError, match=r"lira\.offline_test"):
        LiraAttack(offline_test="both")
    with pytest.raises(ConfigError, match=r"lira\.ddof"):
        LiraAttack(ddof=2)
    with pytest.raises(ConfigError, match=r"rmia\.z_reference"):
        RmiaAttack(z_reference="half")
    cfg = compose_config(["task=model_audit"]).model_attacks
    assert (cfg.lira.center, cfg.lira.ddof, cfg.lira.offline_test, cfg.rmia.z_reference) == (
        "mean",
        1,
        "one_sided",
        "all",
    )


def test_multi_label_scores_are_the_mean_over_labels() -> None:
    rng = np.random.default_rng(0)
    full = ModelSignals(
        rng.normal(size=(6, 3)),
        rng.normal(size=(4, 6, 3)),
        np.tile([[1], [1], [0], [0]], 6).astype(bool),
        rng.normal(size=(5, 3)),
        rng.normal(size=(4, 5, 3)),
    )
    for attack in ATTACKS.values():
        per_label = [
            attack.score_models(
                ModelSignals(
                    full.target[:, [j]],
                    full.references[..., [j]],
                    full.inclusion,
                    full.population_target[:, [j]],
                    full.population_references[..., [j]],
                )
            )
            for j in range(3)
        ]
        np.testing.assert_allclose(attack.score_models(full), np.mean(per_label, axis=0))


def test_model_attacks_refuse_released_text_and_bad_settings() -> None:
    from synbench.core import registry
    from synbench.core.base import Attack, ModelAttack

    # its own kind, not an Attack with a `score` that raises: task=audit cannot be given one, by type or by name
    assert issubclass(LiraAttack, ModelAttack) and not issubclass(LiraAttack, Attack)
    assert not hasattr(LiraAttack(), "score") and registry.load(ModelAttack, "lira") is LiraAttack
    with pytest.raises(PluginError, match="unknown attack plugin 'lira'"):
        registry.load(Attack, "lira")
    with pytest.raises(ConfigError, match="rmia.a"):
        RmiaAttack(a=1.5)
    with pytest.raises(ConfigError, match="n_references"):
        ModelAuditOptions(n_references=3)
    with pytest.raises(ConfigError, match="regimes"):
        schema.typed(ModelAuditOptions, {"regimes": ["syn", "nope"]}, "model_audit")
    with pytest.raises(ConfigError, match="head.lr|head.features"):
        HeadOptions(features="tfidf")


# --- null models and over-fitted models ----------------------------------------------------------------------------


def test_model_trained_without_the_members_gives_chance_auc_and_zero_bound() -> None:
    """The audited model never saw the members (its statistics follow the OUT distribution for every target)."""
    rng = np.random.default_rng(7)
    trials, n, m, z = 200, 100, 4, 100
    hardness = rng.normal(size=(trials, n, 1))
    inclusion = np.argsort(rng.random((trials, n, m)), axis=2).transpose(0, 2, 1) < m // 2  # 2 of 4 refs hold each
    refs = hardness[:, None] + 1.5 * inclusion[..., None] + rng.normal(scale=0.5, size=(trials, m, n, 1))
    target = hardness + rng.normal(scale=0.5, size=(trials, n, 1))
    pop_hardness = rng.normal(size=(trials, z, 1))
    pop_refs = pop_hardness[:, None] + rng.normal(scale=0.5, size=(trials, m, z, 1))
    pop_target = pop_hardness + rng.normal(scale=0.5, size=(trials, z, 1))
    members = rng.random((trials, n)) < 0.5
    for name, attack in ATTACKS.items():
        aucs, bounds = [], []
        for t in range(trials):
            scores = attack.score_models(ModelSignals(target[t], refs[t], inclusion[t], pop_target[t], pop_refs[t]))
            roc = RocCurve.from_scores(scores, members[t])
            aucs.append(roc.auc())
            bounds.append(empirical_epsilon_lower_bound(roc, 0.0, confidence=0.95))
        assert abs(np.mean(aucs) - 0.5) < 0.02, name
        assert np.mean(np.array(bounds) == 0.0) >= 0.95, name


def review(rng: np.random.Generator, label: int) -> dict:
    return {
        "text": f"{' '.join(rng.choice(WORDS, size=12))} {rng.integers(10**6)}",
        "label": [["negative", "neutral", "positive"][label]],
    }


@pytest.fixture
def reviews(tmp_path: Path) -> list[str]:
    """Three classes drawn at random, independent of the text; each document carries a unique token.

    A classifier can only learn these labels by memorising its training
    documents, which is the over-fitting the attacks must find.
    """
    rng = np.random.default_rng(0)
    rows = [review(rng, int(rng.integers(3))) for _ in range(140)]
    return reviews_dataset(tmp_path, rows, n_train=100, label_space=("negative", "neutral", "positive"))


TINY = [
    "model_audit.max_docs=null",
    "model_audit.n_targets=40",
    "model_audit.n_population=40",
    "model_audit.head.features=hashing",
    "model_audit.head.hashing_features=2048",
    "tracking=none",
]


def run_task(tmp_path: Path, overrides: list[str]) -> dict:
    """Run task=model_audit in this process (the CLI test below covers the command line)."""
    from synbench.job.spec import JobConfig
    from synbench.tasks.model_audit import run

    cfg = compose_config([*overrides, *TINY, "task=model_audit", f"output_root={tmp_path}"])
    return run(JobConfig.from_config(cfg), tmp_path / "job")


def test_overfitted_private_model_is_found_by_all_three_attacks(tmp_path: Path, reviews: list[str]) -> None:
    overrides = [
        *reviews,
        "generator=copy",
        "eps=inf",
        "model_audit.regimes=[pri]",
        "model_audit.head.epochs=60",
        "model_audit.head.lr=0.5",
    ]
    results = run_task(tmp_path, overrides)["model_audit"]
    for name in ATTACKS:
        assert results[f"pri.{name}.auc"] > 0.7, name
    assert (
        run_task(tmp_path, overrides)["job_key"] and (tmp_path / "job" / "model_audit_runs" / "pri_target.npy").exists()
    )


@pytest.mark.parametrize(
    "variant",
    [
        ["model_audit.references=out", "model_attacks.lira.online=false", "model_attacks.rmia.online=false"],
        ["model_audit.classifier=utility", "classifier=tfidf"],
        pytest.param(
            [
                "model_audit.classifier=utility",
                "classifier=transformer",
                "classifier.epochs=1",
                "classifier.max_length=32",
            ],
            marks=pytest.mark.slow,
            id="transformer",
        ),
    ],
)
def test_offline_references_and_the_utility_classifier_run(
    tmp_path: Path, reviews: list[str], variant: list[str]
) -> None:
    results = run_task(tmp_path, [*reviews, "generator=copy", "eps=inf", "model_audit.regimes=[pri]", *variant])
    assert results["status"] == "complete"
    assert {f"pri.{a}.auc" for a in ATTACKS} <= set(results["model_audit"])
    design = np.load(tmp_path / "job" / "model_audit_design.npz")
    assert design["ref_inclusion"].any() == ("model_audit.references=out" not in variant)


def test_model_audit_config_errors(tmp_path: Path, reviews: list[str]) -> None:
    with pytest.raises(ConfigError, match="set a finite eps"):
        run_task(tmp_path, [*reviews, "generator=copy", "eps=inf"])
    with pytest.raises(ConfigError, match="online=false"):
        run_task(tmp_path, [*reviews, "generator=copy", "eps=2", "model_audit.references=out"])
    with pytest.raises(ConfigError, match="model_audit.targets"):
        run_task(tmp_path, [*reviews, "generator=copy", "eps=2", "model_audit.targets=all"])


def test_dp_head_epsilon_is_its_accountants() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 8)).astype(np.float32)
    y = np.eye(3, dtype=int)[rng.integers(3, size=50)]
    settings = HeadOptions(epochs=3, batch_size=10, num_threads=1)
    head = LogisticHead(settings, lambda texts: x[[int(t) for t in texts]])
    privacy = PrivacySpec(2.0, 1e-4, "prv", NoiseSource())
    probs, spent = head.fit_predict([str(i) for i in range(50)], y, [str(i) for i in range(5)], False, privacy)
    plan = PoissonPlan(50, 10, 3)
    cal = accounting.calibrate(2.0, 1e-4, plan.sample_rate, plan.steps, "prv", None)
    assert spent == pytest.approx(
        accounting.epsilon([(cal.noise_multiplier, plan.sample_rate, plan.steps)], 1e-4, "prv")
    )
    assert 2.0 * 0.99 <= spent <= 2.0
    assert probs.shape == (5, 3) and np.allclose(probs.sum(axis=1), 1)


# --- the task end to end -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_model_audit_cli_fills_every_regime_and_attack_and_leaks_no_target(tmp_path: Path, reviews: list[str]) -> None:
    args = [*reviews, *TINY, "task=model_audit", "generator=copy", "eps=2", "accountant=rdp", f"output_root={tmp_path}"]
    proc = run_cli(args, cwd=tmp_path)
    [path] = list(tmp_path.rglob("results.json"))
    results = json.loads(path.read_text())
    section = results["model_audit"]
    for regime in ("syn", "syn_dp", "pri", "pri_dp"):
        for attack in ATTACKS:
            for key in ("auc", "tpr_at_fpr_0.01", "tpr_at_fpr_0.1", "eps_emp", "eps_emp_lower"):
                assert isinstance(section[f"{regime}.{attack}.{key}"], float)
    assert section["pri_dp.epsilon_spent"] <= 2.0 and section["syn.epsilon_spent"] == "inf"
    assert results["non_private_control"] is True  # copy stands in for the generator
    texts = [json.loads(line)["text"] for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    logged = proc.stdout + proc.stderr + path.read_text() + (path.parent / "app.log").read_text()
    assert not any(t in logged for t in texts)
    from synbench.report.build import write_report

    markdown, _ = write_report(tmp_path, 0.95)
    table = markdown.read_text()
    assert "Membership attacks on downstream models" in table and "| PRI-DP |" in table and "AUC rmia" in table
