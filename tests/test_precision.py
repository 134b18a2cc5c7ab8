"""Mixed precision with DP-SGD: the privacy arithmetic stays fp32 (synbench/dp/hooks.py).

On CPU, Lightning's `bf16-mixed` is real bf16 autocast, so these tests run the
path a GPU runs, on a tiny random Llama. Stated tolerances (bf16 keeps 8 bits
of mantissa, about 3 significant digits, in the model's matmuls):
- per-sample gradient norms: within 1% of fp32's, each one;
- the clipped, noised update (same secret-noise seed, so the same noise):
  differs from fp32's by at most 1% of the clip norm C
  (the noise itself, sigma*C/B per coordinate, is many times that);
- epsilon_spent: exactly equal (it is a function of the plan, not the dtype).
"""

from __future__ import annotations

from typing import Any

import pytest
import pytorch_lightning as pl
import torch

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.core.privacy import NoiseSource
from synbench.dp.hooks import PerSampleHooks
from synbench.dp.module import TrainConfig, fit_module
from synbench.generators.dpgen import DPGenGenerator
from synbench.generators.dpgen.data import Collator, DocumentDataset
from synbench.generators.dpgen.module import DPGenModule, per_sample_loss
from synbench.generators.dpgen.settings import PAPER_LORA, DPGenTrainingOptions
from synbench.generators.dpgen.weights import prepare_trainable
from synbench.lm.models import load_causal_lm
from synbench.testing.generator import job_budget
from tests.test_dpgen import one_thread  # noqa: F401  (autouse: one torch thread for tiny models)

NORM_RTOL, UPDATE_TOL = 0.01, 0.01  # measured: 0.2% and 0.5% of C
CLIP = 0.05
N_DOCS = 8


def docs(n: int = N_DOCS) -> Corpus:
    texts = [
        f"patient {i} was admitted with {'chest pain' if i % 2 else 'fever'} and discharged on day {i + 2}"
        for i in range(n)
    ]
    return Corpus.build(texts, [["neg" if i % 2 else "pos"] for i in range(n)], ("neg", "pos"), name="precision")


def observed_step(tiny_model: dict[str, Any], precision: str, mode: str) -> dict[str, Any]:
    """Two DP steps at sample rate 1 with lr 0 (same weights, same batches, same seeded noise); what the optimizer
    saw."""
    loaded = load_causal_lm(tiny_model)
    torch.manual_seed(0)
    model = prepare_trainable(loaded.model, PAPER_LORA if mode == "hooks" else None)
    dataset = DocumentDataset(docs(), loaded.tokenizer, DPGenTrainingOptions(max_seq_len=48))
    cfg = TrainConfig(
        epochs=2,
        batch_size=N_DOCS,
        physical_batch_size=N_DOCS,
        lr=0.0,
        weight_decay=0.0,
        max_grad_norm=CLIP,
        warmup_steps=0,
        grad_sample_mode=mode,
        accountant="prv",
        noise_multiplier=1.0,
        noise=NoiseSource(seed=7),
    )
    module = DPGenModule(model, dataset, Collator(loaded.tokenizer.pad_token_id, "text"), cfg)
    seen: dict[str, list[torch.Tensor]] = {"norms": [], "dtypes": [], "update": []}

    class Observe(pl.Callback):
        def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
            opt = pl_module.optimizers().optimizer
            clip, step = opt.clip_and_accumulate, opt.original_optimizer.step

            def observed_clip() -> None:
                if mode == "hooks":
                    seen["norms"].append(
                        torch.cat([g.reshape(len(g), -1) for g in opt.grad_samples], dim=1).norm(dim=1)
                    )
                    seen["dtypes"] += [g.dtype for g in opt.grad_samples]
                clip()

            def observed(*args: Any, **kwargs: Any) -> Any:
                seen["update"].append(torch.cat([p.grad.flatten() for p in opt.params]).clone())
                seen["dtypes"] += [p.grad.dtype for p in opt.params]
                return step(*args, **kwargs)

            opt.clip_and_accumulate, opt.original_optimizer.step = observed_clip, observed

    fit_module(module, accelerator="cpu", devices=1, strategy="auto", precision=precision, callbacks=[Observe()])
    return {**seen, "history": module.privacy_engine.accountant.history}


@pytest.mark.parametrize("mode", ["hooks", "ghost"])
def test_bf16_mixed_dp_step_matches_fp32(tiny_model: dict[str, Any], mode: str) -> None:
    full, half = (observed_step(tiny_model, p, mode) for p in ("32-true", "bf16-mixed"))
    assert all(d == torch.float32 for d in half["dtypes"])  # per-sample gradients and the update are fp32
    if mode == "hooks":
        for a, b in zip(full["norms"], half["norms"]):
            assert a.min() > CLIP  # clipping is active on every example
            assert torch.allclose(b, a, rtol=NORM_RTOL, atol=0)
    assert len(full["update"]) == len(half["update"]) == 2
    for a, b in zip(full["update"], half["update"]):
        assert (a - b).norm() <= UPDATE_TOL * CLIP  # both are clipped sums / B + the same noise
        assert (a - b).norm() < 0.1 * a.norm()  # ... and the noise dominates the difference
    assert full["history"] == half["history"]


def test_bf16_mixed_generator_spends_the_same_epsilon(tiny_model: dict[str, Any]) -> None:
    corpus = docs(24)
    spent = {}
    for precision in ("32-true", "bf16-mixed"):
        gen = DPGenGenerator(
            model=tiny_model,
            workdir=None,
            epochs=1,
            batch_size=8,
            physical_batch_size=4,
            max_seq_len=32,
            max_new_tokens=8,
            sample_batch_size=8,
            lr=1e-3,
            precision=precision,
        )
        report = gen.fit(corpus, job_budget(len(corpus), 4.0), seed=0)
        spent[precision] = report.epsilon_spent
        assert report.details["precision"] == precision
        assert len(gen.sample(4)) == 4
    assert spent["bf16-mixed"] == spent["32-true"] <= 4.0


def per_sample_grads(
    model: torch.nn.Module,
    batch: dict[str, torch.Tensor],
    dtype: torch.dtype | None,
    loss_scale: float,
    poison_first: bool = False,
) -> dict[str, torch.Tensor]:
    """Per-sample gradients from the fp32 hooks, with the model under autocast(`dtype`) and the loss scaled."""
    hooks = PerSampleHooks(model, batch_first=True, loss_reduction="sum")
    hooks.loss_scale = loss_scale
    hooks.enable_hooks()
    with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], use_cache=False).logits
        losses = per_sample_loss(logits, batch["labels"]) * loss_scale
        if poison_first:  # an fp16 overflow in example 0: its backprops become inf / nan
            losses = losses * torch.tensor([float("inf")] + [1.0] * (len(losses) - 1))
        losses.sum().backward()
    out = {n: p.grad_sample.clone() for n, p in model.named_parameters() if p.requires_grad}
    for p in model.parameters():
        p.grad_sample = None
    hooks.cleanup()
    return out


def test_fp16_static_loss_scale_is_divided_out_and_overflow_is_confined(tiny_model: dict[str, Any]) -> None:
    loaded = load_causal_lm(tiny_model)
    torch.manual_seed(0)
    model = prepare_trainable(loaded.model, PAPER_LORA).train()
    batch = Collator(loaded.tokenizer.pad_token_id, "text")(
        [e for e in DocumentDataset(docs(4), loaded.tokenizer, DPGenTrainingOptions(max_seq_len=48))]
    )
    ref = per_sample_grads(model, batch, None, 1.0)
    scaled = per_sample_grads(model, batch, torch.float16, 1024.0)
    for name, g in ref.items():
        assert scaled[name].dtype == torch.float32
        assert torch.allclose(scaled[name].flatten(1).norm(dim=1), g.flatten(1).norm(dim=1), rtol=NORM_RTOL)
    poisoned = per_sample_grads(model, batch, None, 1024.0, poison_first=True)
    for name, g in ref.items():
        assert torch.all(poisoned[name][0] == 0)  # the overflowing example contributes nothing
        assert torch.allclose(poisoned[name][1:], g[1:], rtol=1e-4, atol=1e-7)


def test_precision_errors_are_clear(tiny_model: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="precision"):
        DPGenGenerator(model=tiny_model, workdir=None, precision="bf16-true")
    with pytest.raises(ConfigError, match="16-mixed needs generator.grad_sample_mode=hooks"):
        DPGenGenerator(model=tiny_model, workdir=None, precision="16-mixed", grad_sample_mode="ghost")
    gen = DPGenGenerator(model=tiny_model, workdir=None, precision="16-mixed", accelerator="cpu", max_seq_len=32)
    with pytest.raises(ConfigError, match="CUDA only"):
        gen.fit(docs(8), job_budget(8, 4.0), seed=0)


@pytest.mark.parametrize("native", [True, False])
def test_bf16_if_native_follows_the_device(monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    """`bfloat16_if_native` / `bf16-mixed-if-native` are bf16 only where the device runs bf16 matmuls natively (a CPU
    without AVX512-BF16 or AMX emulates them, tens of times slower), else float32 / 32-true; the other names are
    themselves whatever the device."""
    from synbench.dp.settings import DPSGDOptions
    from synbench.lm import models

    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: native, raising=False)
    cpu = torch.device("cpu")
    assert models.native_bf16(cpu) is native
    assert models.dtype_name("bfloat16_if_native", cpu) == ("bfloat16" if native else "float32")
    assert models.dtype_name("bfloat16", cpu) == "bfloat16" and models.dtype_name("float32", cpu) == "float32"
    settings = DPSGDOptions(precision="bf16-mixed-if-native")
    assert settings.precision_on(cpu) == ("bf16-mixed" if native else "32-true")
    assert settings.trainer_kwargs(cpu)["precision"] == settings.precision_on(cpu)
    assert DPSGDOptions(precision="bf16-mixed").precision_on(cpu) == "bf16-mixed"
