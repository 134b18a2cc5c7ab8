"""DP-Gen: accounting, clipping and noise, Poisson sampling, and fit + sample end to end.

The fast tests use a tiny randomly initialised Llama (2 layers, hidden 32)
with a byte-level tokenizer whose vocabulary is the 256 byte symbols (public,
fitted on nothing). The real SmolLM2 path is the slow test at the end.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

from synbench.core import registry
from synbench.core.base import Generator
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, PluginError
from synbench.core.privacy import NoiseSource, PrivacySpec, gaussian_sigma
from synbench.data.files import FileDataset
from synbench.dp import accounting
from synbench.dp.label_sets import LabelSetBudget, LabelSetOptions, label_sets
from synbench.dp.module import TrainConfig, fit_module
from synbench.generators.dpgen import DPGenGenerator
from synbench.generators.dpgen.data import Collator, DocumentDataset
from synbench.generators.dpgen.module import DPGenModule
from synbench.generators.dpgen.settings import DPGenTrainingOptions
from synbench.generators.dpgen.weights import prepare_trainable
from synbench.lm.models import load_causal_lm

LABELS = ("neg", "pos")
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Any:
    """Tiny ops are dominated by thread wake-ups on a busy 2-core machine; one thread is several times faster."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def corpus(n: int = 40) -> Corpus:
    texts = [f"patient {i} reports {'mild' if i % 2 else 'severe'} headache after dose {i}" for i in range(n)]
    return Corpus.build(texts, [[LABELS[i % 2]] for i in range(n)], LABELS, name="tiny")


def spec(eps: float, n: int = 40, noise_seed: int | None = None, accountant: str = "prv") -> PrivacySpec:
    """The budget the core would pass for a private set of n documents (delta = 1/n^2)."""
    noise = NoiseSource(seed=noise_seed)
    return PrivacySpec.for_private_set(n, eps, None, accountant, noise, allow_large_delta=False)


def generator(tiny_model: dict[str, Any], **overrides: Any) -> DPGenGenerator:
    settings = dict(
        epochs=1, batch_size=8, physical_batch_size=4, max_seq_len=32, max_new_tokens=12, sample_batch_size=8, lr=1e-3
    )
    return DPGenGenerator(model=tiny_model, **{"workdir": None, **settings, **overrides})


# --- accounting -----------------------------------------------------------------------------------


def independent_epsilon(history: list[tuple[float, float, int]], delta: float, method: str) -> float:
    """The same composition in Google's dp-accounting: PLD against PRV, RDP against RDP."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    events = [
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
            if q < 1
            else dp_accounting.GaussianDpEvent(sigma),
            steps,
        )
        for sigma, q, steps in history
    ]
    acct = (
        pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        if method == "prv"
        else rdp_privacy_accountant.RdpAccountant()
    )
    return float(acct.compose(dp_accounting.ComposedDpEvent(events)).get_epsilon(delta))


@pytest.mark.parametrize("method", ["prv", "rdp"])
@pytest.mark.parametrize("with_labels", [False, True])
def test_epsilon_matches_opacus_and_dp_accounting(method: str, with_labels: bool) -> None:
    from opacus.accountants import create_accountant

    sigma, q, steps, delta = 1.1, 0.02, 500, 1e-5
    labels = LabelSetBudget(12.0, 2, 1e-6, "marginals") if with_labels else None
    history = accounting.job_history([(sigma, q, steps)], labels)
    assert history[:1] == ([(12.0, 1.0, 2)] if with_labels else [(sigma, q, steps)])
    ours = accounting.epsilon(history, delta, method)
    stepped = create_accountant(mechanism=method)  # the way the training loop feeds it: one step at a time
    for noise, rate, count in history:
        for _ in range(count):
            stepped.step(noise_multiplier=noise, sample_rate=rate)
    assert ours == pytest.approx(stepped.get_epsilon(delta=delta), rel=1e-9)
    assert ours == pytest.approx(independent_epsilon(history, delta, method), rel=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("multi_label", [False, True])
def test_calibration_meets_the_budget_with_the_label_sets_inside(multi_label: bool) -> None:
    eps, delta, q, steps = 4.0, 1 / 600**2, 1 / 3, 3
    labels = LabelSetOptions().calibrate(0.05 * eps, delta, multi_label)
    select = 0.1 * delta if multi_label else 0.0
    assert labels.delta_select == pytest.approx(select) and labels.gaussians == (2 if multi_label else 1)
    assert labels.sigma == pytest.approx(gaussian_sigma(0.05 * eps, delta - select, labels.gaussians))
    cal = accounting.calibrate(eps, delta, q, steps, "prv", labels)
    at_delta = accounting.job_delta(delta, labels)
    assert (
        at_delta == pytest.approx(delta - select) and at_delta + labels.delta_select <= delta
    )  # never above the job's
    total = accounting.epsilon(accounting.job_history([(cal.noise_multiplier, q, steps)], labels), at_delta, "prv")
    assert total == pytest.approx(cal.planned_epsilon) and eps * 0.99 <= total <= eps
    without_labels = accounting.calibrate(eps, delta, q, steps, "prv", None)
    assert without_labels.noise_multiplier < cal.noise_multiplier  # the label sets cost DP-SGD some budget
    with pytest.raises(ConfigError, match="accountant"):
        accounting.check_accountant("gdp")


# --- one DP training run, observed from inside the optimizer ---------------------------------------


@pytest.fixture(scope="module")
def observed_run(tiny_model: dict[str, Any]) -> dict[str, Any]:
    """Full fine-tuning, hooks mode, one document per physical batch, with the DP optimizer instrumented."""
    loaded = load_causal_lm(tiny_model)
    model = prepare_trainable(loaded.model, None)
    dataset = DocumentDataset(corpus(), loaded.tokenizer, DPGenTrainingOptions(max_seq_len=32))
    cfg = TrainConfig(
        epochs=3,
        batch_size=8,
        physical_batch_size=1,
        lr=0.0,
        weight_decay=0.0,
        max_grad_norm=0.01,
        warmup_steps=0,
        grad_sample_mode="hooks",
        accountant="prv",
        noise_multiplier=4.0,
        noise=NoiseSource(),
    )
    module = DPGenModule(model, dataset, Collator(loaded.tokenizer.pad_token_id, "text"), cfg)
    seen: dict[str, list[Any]] = {"raw_norm": [], "clipped_norm": [], "noised": []}

    class Observe(pl.Callback):
        def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
            opt = pl_module.optimizers().optimizer
            clip, step = opt.clip_and_accumulate, opt.original_optimizer.step

            def flat(tensors: list[torch.Tensor]) -> torch.Tensor:
                return torch.cat([t.reshape(len(t), -1) for t in tensors], dim=1)

            def observed_clip() -> None:
                before = [
                    p.summed_grad.clone() if p.summed_grad is not None else torch.zeros_like(p) for p in opt.params
                ]
                seen["raw_norm"].append(flat(opt.grad_samples).norm(dim=1))
                clip()  # one document per physical batch: the increment is that document's clipped gradient
                seen["clipped_norm"].append(
                    torch.cat([(p.summed_grad - b).flatten() for p, b in zip(opt.params, before)]).norm()
                )

            def observed_step(*args: Any, **kwargs: Any) -> Any:
                seen["noised"].append(torch.cat([p.grad.flatten() for p in opt.params]).clone())
                return step(*args, **kwargs)

            opt.clip_and_accumulate, opt.original_optimizer.step = observed_clip, observed_step

    fit_module(module, accelerator="cpu", devices=1, strategy="auto", precision="32-true", callbacks=[Observe()])
    return {"module": module, "cfg": cfg, **seen}


def test_every_per_sample_gradient_is_clipped(observed_run: dict[str, Any]) -> None:
    cfg = observed_run["cfg"]
    raw = torch.cat(observed_run["raw_norm"])
    assert raw.max() > 10 * cfg.max_grad_norm  # the bound is active, not vacuous
    clipped = torch.stack(observed_run["clipped_norm"])
    assert len(clipped) > 0 and bool((clipped <= cfg.max_grad_norm * (1 + 1e-4)).all())


def test_noise_std_is_sigma_c_over_expected_batch(observed_run: dict[str, Any]) -> None:
    cfg = observed_run["cfg"]
    expected = cfg.noise_multiplier * cfg.max_grad_norm / cfg.batch_size
    # The clipped signal (at most |batch| * C in norm over ~20k coordinates) is negligible next to the noise.
    for grad in observed_run["noised"]:
        assert grad.std().item() == pytest.approx(expected, rel=0.03)


def test_poisson_sampling_is_in_effect(observed_run: dict[str, Any]) -> None:
    from synbench.dp.poisson import ShardPoissonSampler

    module = observed_run["module"]
    sampler = module.train_dataloader().loader.batch_sampler.logical
    assert isinstance(sampler, ShardPoissonSampler) and sampler.sample_rate == module.plan.sample_rate
    assert (sampler.shard.rank, sampler.shard.world_size) == (0, 1)  # one process: the whole set
    assert module.privacy_engine.accountant.history == [(4.0, module.plan.sample_rate, module.plan.steps)]
    assert len(set(module.batch_sizes)) > 1  # logical batch sizes vary around the expected 8


# --- the generator end to end -------------------------------------------------------------------


def test_fit_and_sample_end_to_end_and_resume(tiny_model: dict[str, Any], tmp_path: Path) -> None:
    gen = generator(tiny_model, workdir=str(tmp_path))
    report = gen.fit(corpus(), spec(2.0), seed=0)
    assert 1.9 <= report.epsilon_spent <= 2.0 and report.delta == pytest.approx(1 / 40**2)
    d = report.details
    assert (
        d["steps"] == d["planned_steps"] == 5 and d["noise_multiplier"] > 0 and d["sample_rate"] == pytest.approx(0.2)
    )
    assert d["accountant"] == "prv" and d["attn_implementation"] in ("sdpa", "eager") and d["fine_tuning"] == "lora"
    assert len(report.private_stats["train_loss"]) == 5 and report.private_stats["train_tokens"] > 0
    assert not {"train_loss", "batch_size", "train_tokens", "train_tokens_per_s"} & set(d)  # private: not in details
    assert set(d) <= DPGenGenerator.public_details
    synthetic = gen.sample(13)
    assert len(synthetic) == 13 and {ls for ls in synthetic.labels} <= {("neg",), ("pos",)}
    sampled = gen.sampling_details()
    assert sampled["max_new_tokens"] == 12 and 0 < sampled["generated_tokens"] <= 13 * 12
    assert set(sampled) <= DPGenGenerator.public_details and "generated_tokens" not in d  # the report is not mutated
    assert sampled["generate_s"] > 0

    again = generator(tiny_model, workdir=str(tmp_path), temperature=0.7).fit(corpus(), spec(2.0), seed=0)
    assert again.details["resumed"] is True and again.epsilon_spent == report.epsilon_spent
    assert not again.private_stats and "private_stats" not in (tmp_path / "dpgen" / "dpgen.json").read_text()
    changed = generator(tiny_model, workdir=str(tmp_path), lr=2e-3).fit(corpus(), spec(2.0), seed=0)
    assert changed.details["resumed"] is False  # other settings: trained again


def test_ghost_clipping_gives_the_same_updates_as_hooks(tiny_model: dict[str, Any]) -> None:
    curves = [
        generator(tiny_model, lora=None, grad_sample_mode=mode)
        .fit(corpus(), spec(2.0, noise_seed=3), seed=1)
        .private_stats["train_loss"]
        for mode in ("hooks", "ghost")
    ]
    assert curves[0] == pytest.approx(curves[1], rel=1e-4)


def test_without_dp_the_same_pipeline_runs(tiny_model: dict[str, Any]) -> None:
    gen = generator(tiny_model, label_prior="uniform")
    report = gen.fit(corpus(), spec(math.inf), seed=0)
    assert report.epsilon_spent == math.inf and not report.is_private
    assert report.details["noise_multiplier"] == 0.0 and report.details["steps"] == 5
    assert len(gen.sample(4)) == 4


def multi_label_corpus() -> Corpus:
    """The 60 training notes of the multi-label fixture (4 labels, 9 label sets, 1 to 3 labels per note)."""
    return (
        FileDataset(
            name="ml",
            train=str(FIXTURES / "multilabel_train.jsonl"),
            eval=str(FIXTURES / "multilabel_eval.jsonl"),
            multi_label=True,
            label_space=["cardiac", "renal", "respiratory", "diabetes"],
        )
        .load(0)
        .train
    )


def test_multi_label_data_is_written_with_dp_label_sets(tiny_model: dict[str, Any], tmp_path: Path) -> None:
    """Label sets by partition selection in the same ledger as DP-SGD; the checkpoint keeps only the noisy release."""
    docs = multi_label_corpus()
    gen = generator(tiny_model, workdir=str(tmp_path), label_budget_share=0.5)
    report = gen.fit(docs, spec(8.0, n=len(docs), noise_seed=0), seed=0)
    d, delta = report.details, 1 / len(docs) ** 2
    assert report.epsilon_spent <= 8.0 and report.delta == pytest.approx(delta)
    assert (
        d["label_delta_select"] == pytest.approx(0.1 * delta)
        and d["label_mechanisms"] == 2
        and d["label_threshold"] > 1
    )
    assert d["label_multi_sets_released"] >= 1 and set(d) <= DPGenGenerator.public_details
    synthetic = gen.sample(40)
    assert synthetic.multi_label and sum(len(ls) > 1 for ls in synthetic.labels) >= 5
    state = (tmp_path / "dpgen" / "dpgen.json").read_text()
    assert '"label_release"' in state and "Note 0" not in state
    exact = generator(tiny_model, label_budget_share=0.5)
    exact.fit(docs, spec(math.inf, n=len(docs)), seed=0)  # eps=inf: exactly the private label-set distribution
    assert Counter(exact.sample(len(docs)).labels) == Counter(label_sets(docs))


def first_batch_empty_seed(n: int, sample_rate: float) -> int:
    """A replication noise seed whose first Poisson mask over n documents selects none of them."""
    import torch

    return next(
        s
        for s in range(1000)
        if not (torch.rand(n, generator=NoiseSource(seed=s).torch("poisson_masks")) < sample_rate).any()
    )


@pytest.mark.parametrize("grad_sample_mode", ["hooks", "ghost"])
def test_empty_poisson_batches_first_or_any_take_a_noisy_step(
    tiny_model: dict[str, Any], grad_sample_mode: str
) -> None:
    # q = 1/40: about a third of the logical batches are empty, the first one included by the choice of noise seed.
    noise_seed = first_batch_empty_seed(40, 1 / 40)
    report = generator(tiny_model, batch_size=1, lora=None, grad_sample_mode=grad_sample_mode).fit(
        corpus(), spec(8.0, noise_seed=noise_seed, accountant="rdp"), seed=0
    )
    assert report.details["steps"] == report.details["planned_steps"] == 40
    sizes = report.private_stats["batch_size"]
    assert sizes[0] == 0 and sizes.count(0) > 1 and len(sizes) == 40


def test_noise_is_secret_unless_a_noise_seed_is_given(tiny_model: dict[str, Any]) -> None:
    """Label histogram, Poisson masks and DP-SGD noise: fresh with one `seed`, reproduced by one `noise_seed`."""

    def fit(noise_seed: int | None) -> tuple[np.ndarray, list[int], torch.Tensor]:
        gen = generator(tiny_model, lr=1e-2)
        report = gen.fit(corpus(), spec(4.0, noise_seed=noise_seed), seed=0)
        weights = torch.cat([p.detach().flatten() for p in gen._model.parameters()])
        return np.asarray(gen._labels.weights), report.private_stats["batch_size"], weights

    secret = [fit(None) for _ in range(2)]
    assert not np.array_equal(secret[0][0], secret[1][0])  # label histogram noise
    assert not torch.equal(secret[0][2], secret[1][2])  # DP-SGD noise (and masks) reach the weights
    seeded = [fit(5) for _ in range(2)]
    np.testing.assert_array_equal(seeded[0][0], seeded[1][0])
    assert seeded[0][1] == seeded[1][1] and torch.equal(seeded[0][2], seeded[1][2])


def test_the_plan_is_what_runs_and_what_is_charged_at_n186_b2(tiny_model: dict[str, Any]) -> None:
    """The case that used to plan 93 steps at 1/93, run 92 and be charged 1/92 (epsilon 4.0098 for eps=4)."""
    docs = corpus(186)
    gen = generator(
        tiny_model, batch_size=2, physical_batch_size=2, lora={"r": 2, "alpha": 4, "target_modules": ["q_proj"]}
    )
    report = gen.fit(docs, spec(4.0, n=186), seed=0)
    d = report.details
    assert d["steps"] == d["planned_steps"] == 93 and d["sample_rate"] == 1 / 93
    assert report.epsilon_spent <= 4.0


def test_lora_top_layers_puts_adapters_on_the_last_layers_only_and_trains_them(tiny_model: dict[str, Any]) -> None:
    """`lora.top_layers=1` on the 2-layer model: adapters in layer 1 only, so backward stops there; they train."""
    from synbench.generators.dpgen import weights
    from synbench.lm.models import load_causal_lm

    loaded = load_causal_lm(tiny_model)
    lora = {"r": 2, "alpha": 4, "target_modules": ["q_proj", "v_proj"], "top_layers": 1}
    model = weights.prepare_trainable(loaded.model, lora)
    trained = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trained and all(".layers.1." in name for name in trained), trained
    gen = generator(tiny_model, batch_size=8, physical_batch_size=8, lora=lora)
    report = gen.fit(corpus(16), spec(math.inf, n=16), seed=0)
    assert report.details["trainable_params"] == weights.trainable_count(model)
    with pytest.raises(ConfigError, match="lora.top_layers=0 must be a whole number"):
        generator(tiny_model, lora={**lora, "top_layers": 0})


@pytest.mark.parametrize("eps", [math.inf, 4.0])
def test_cache_trunk_trains_the_same_weights_as_the_full_model(tiny_model: dict[str, Any], eps: float) -> None:
    """`cache_trunk` with `lora.top_layers=1` on the 2-layer model: layer 0 runs once per document, each step only
    layer 1 and the head; with the same replicated noise the trained weights equal the uncached run's, with and
    without DP, and the model comes back whole (both layers) for sampling."""
    lora = {"r": 2, "alpha": 4, "target_modules": ["q_proj", "v_proj"], "top_layers": 1}
    fitted = {}
    for cached in (False, True):
        gen = generator(tiny_model, batch_size=8, physical_batch_size=4, lr=1e-2, lora=lora, cache_trunk=cached)
        report = gen.fit(corpus(16), spec(eps, n=16, noise_seed=0), seed=0)
        assert report.details["cache_trunk"] is cached and report.details["steps"] >= 2
        assert gen._model.config.num_hidden_layers == len(gen._model.model.layers) == 2
        assert len(gen.sample(4)) == 4
        fitted[cached] = {k: v.clone() for k, v in gen._model.state_dict().items()}
    assert all(torch.allclose(fitted[True][k], fitted[False][k], atol=1e-5) for k in fitted[True])
    before = load_causal_lm(tiny_model).model.state_dict()
    key = "model.layers.1.self_attn.q_proj.weight"  # the check can fail: training moved the adapted layer
    assert not torch.allclose(fitted[True][key], before[key]) and torch.equal(
        fitted[True]["model.layers.0.self_attn.q_proj.weight"], before["model.layers.0.self_attn.q_proj.weight"]
    )


def test_sample_dtype_casts_the_trained_model_for_sampling_only(tiny_model: dict[str, Any]) -> None:
    """`sample_dtype=bfloat16`: the same training (fp32 weights, same noise) and a bf16 model that samples; the
    training's resume key ignores it, and an unknown dtype is refused naming the key."""
    lora = {"r": 2, "alpha": 4, "target_modules": ["q_proj", "v_proj"], "top_layers": 1}
    fitted = {}
    for dtype in ("float32", "bfloat16"):
        gen = generator(tiny_model, lr=1e-2, lora=lora, sample_dtype=dtype)
        gen.fit(corpus(16), spec(4.0, n=16, noise_seed=0), seed=0)
        assert {p.dtype for p in gen._model.parameters()} == {getattr(torch, dtype)}
        assert len(gen.sample(4)) == 4
        fitted[dtype] = gen._model.state_dict()["model.layers.1.self_attn.q_proj.weight"]
    assert torch.equal(fitted["float32"].to(torch.bfloat16), fitted["bfloat16"])
    with pytest.raises(ConfigError, match="generator.sample_dtype='half' must be one of float32, bfloat16"):
        generator(tiny_model, sample_dtype="half")


def test_cache_trunk_needs_top_layers(tiny_model: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="cache_trunk=true needs generator.lora.top_layers"):
        generator(tiny_model, cache_trunk=True)


def test_lora_top_layers_is_set_from_the_command_line() -> None:
    """The schema node carries `top_layers` (null = every layer), so `generator.lora.top_layers=6` composes."""
    from conftest import compose_config

    assert compose_config(["generator=dpgen"]).generator.lora.top_layers is None
    assert compose_config(["generator=dpgen", "generator.lora.top_layers=6"]).generator.lora.top_layers == 6


def test_config_errors_are_clear(tiny_model: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="grad_sample_mode"):
        generator(tiny_model, grad_sample_mode="functorch")
    typo = r"generator plugin 'dpgen' does not take 'epoch' \(did you mean epochs\?\); it takes: epochs, "
    with pytest.raises(PluginError, match=typo):
        registry.create(Generator, {"_plugin_": "dpgen", "model": tiny_model, "epoch": 3})
    with pytest.raises(ConfigError, match="label_prior"):
        generator(tiny_model, label_prior="histogram")
    with pytest.raises(ConfigError, match="label_budget_share.*uniform"):
        generator(tiny_model, label_budget_share=0.0)
    with pytest.raises(ConfigError, match="label_sets.tail"):
        generator(tiny_model, label_sets={"tail": "sets"})


@pytest.mark.slow
def test_smollm2_fit_and_sample(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    from conftest import compose_config

    node = OmegaConf.to_container(compose_config(["generator=dpgen"]).model, resolve=True)
    gen = DPGenGenerator(
        model=node,
        workdir=str(tmp_path),
        max_train_docs=16,
        batch_size=8,
        physical_batch_size=4,
        max_seq_len=32,
        max_new_tokens=16,
        sample_batch_size=4,
    )
    report = gen.fit(corpus(), spec(4.0), seed=0)
    assert report.epsilon_spent <= 4.0 and report.details["steps"] == 2
    synthetic = gen.sample(4)
    assert len(synthetic) == 4 and gen.sampling_details()["generated_tokens"] > 0


def test_dpgen_conforms_to_the_generator_contract(tiny_model: dict[str, Any]) -> None:
    """The conformance kit plugin authors run, on DP-Gen itself (tiny model, secret and replication noise)."""
    from synbench.testing import check_generator

    check_generator(lambda: generator(tiny_model, max_seq_len=48, max_new_tokens=6, sample_batch_size=32))
