"""DP-Gen speed on this machine, with the embedded SmolLM2-135M.

1. DP step time / non-DP step time, through the real training module (Lightning +
   Opacus), on the same model and the same batch: the sample rate is 1 (batch size =
   data set size), so every Poisson batch holds all documents. Targets: <= 1.2 with
   LoRA (hooks), <= 2.0 for full fine-tuning with ghost clipping.
2. The cost of `privacy.secure_mode` (Opacus' floating-point-attack-resistant noise, four
   Gaussian draws per coordinate instead of one): DP step time with it / without it.
3. Sampling throughput of the DP-Gen sampler at batch 32 against batch 1 (target >= 8x).
"""

from __future__ import annotations

import copy
import os
import time
from typing import Any

import pytorch_lightning as pl
import torch
from omegaconf import OmegaConf

from synbench.core.corpus import Corpus
from synbench.core.privacy import NoiseSource
from synbench.dp.module import TrainConfig, fit_module
from synbench.generators.dpgen.data import Collator, DocumentDataset, control_code
from synbench.generators.dpgen.module import DPGenModule
from synbench.generators.dpgen.settings import PAPER_LORA, DPGenTrainingOptions
from synbench.generators.dpgen.weights import prepare_trainable
from synbench.lm.generation import generate
from synbench.lm.models import load_causal_lm

BATCH, SEQ_LEN, TIMED_STEPS, WARMUP_STEPS = 8, 64, 3, 1
SAMPLE_TOKENS = 32
SENTENCE = "I took this medication for three months and the side effects were mild at first, then my sleep got worse. "


class StepTimer(pl.Callback):
    """Seconds per training step (one logical batch = one physical batch here)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._start = 0.0

    def on_train_batch_start(self, *args: Any) -> None:
        self._start = time.perf_counter()

    def on_train_batch_end(self, *args: Any) -> None:
        self.seconds.append(time.perf_counter() - self._start)


def step_seconds(
    base: torch.nn.Module,
    tokenizer: Any,
    lora: dict[str, Any] | None,
    mode: str,
    private: bool,
    secure_mode: bool = False,
) -> float:
    model = prepare_trainable(copy.deepcopy(base), lora)
    texts = [f"review {i}: " + SENTENCE * 4 for i in range(BATCH)]
    dataset = DocumentDataset(
        Corpus.build(texts, [["positive"]] * BATCH, ["positive"]), tokenizer, DPGenTrainingOptions(max_seq_len=SEQ_LEN)
    )
    cfg = TrainConfig(
        epochs=WARMUP_STEPS + TIMED_STEPS,
        batch_size=BATCH,
        physical_batch_size=BATCH,
        lr=1e-4,
        weight_decay=0.01,
        max_grad_norm=1.0,
        warmup_steps=0,
        grad_sample_mode=mode,
        accountant="prv",
        noise_multiplier=1.0 if private else None,
        noise=NoiseSource(secure_mode=secure_mode),
    )
    timer = StepTimer()
    fit_module(
        DPGenModule(model, dataset, Collator(tokenizer.pad_token_id, "text"), cfg),
        accelerator="cpu",
        devices=1,
        strategy="auto",
        precision="32-true",
        callbacks=[timer],
    )
    return min(timer.seconds[WARMUP_STEPS:])  # the least disturbed step: other processes only ever add time


def sampling_tokens_per_s(model: torch.nn.Module, tokenizer: Any, batch_size: int, n: int) -> float:
    _, stats = generate(
        model,
        tokenizer,
        [control_code(("positive",))] * n,
        batch_size=batch_size,
        max_new_tokens=SAMPLE_TOKENS,
        temperature=0.9,
        top_p=1.0,
        top_k=DPGenTrainingOptions().top_k,
        seed=0,
    )
    return stats.new_tokens / stats.generate_s


def main() -> dict[str, Any]:
    conf = os.path.join(os.path.dirname(__file__), "..", "..", "conf")
    node = OmegaConf.to_container(OmegaConf.load(os.path.join(conf, "model", "smollm2_135m.yaml")))
    threads = OmegaConf.load(os.path.join(conf, "generator", "dpgen.yaml")).num_threads
    if threads:  # measure what the demo runs
        torch.set_num_threads(int(threads))
    loaded = load_causal_lm(node)  # type: ignore[arg-type]
    base, tokenizer = loaded.model, loaded.tokenizer
    figures: dict[str, Any] = {
        "model": node["name"],
        "batch": BATCH,
        "seq_len": SEQ_LEN,
        "torch_threads": torch.get_num_threads(),
        "load_average_at_start": os.getloadavg()[0],
    }
    for name, lora, mode in (("lora_hooks", PAPER_LORA, "hooks"), ("full_ghost", None, "ghost")):
        dp, plain = (step_seconds(base, tokenizer, lora, mode, private) for private in (True, False))
        figures[f"{name}_dp_step_s"] = round(dp, 3)
        figures[f"{name}_nondp_step_s"] = round(plain, 3)
        figures[f"{name}_dp_over_nondp"] = round(dp / plain, 3)
        secure = step_seconds(base, tokenizer, lora, mode, True, secure_mode=True)
        figures[f"{name}_dp_secure_mode_step_s"] = round(secure, 3)
        figures[f"{name}_secure_mode_over_dp"] = round(secure / dp, 3)
    one = sampling_tokens_per_s(base, tokenizer, 1, 2)
    many = sampling_tokens_per_s(base, tokenizer, 32, 32)
    figures.update(
        sample_tokens_per_s_batch1=round(one, 2),
        sample_tokens_per_s_batch32=round(many, 2),
        sample_speedup_batch32_over_batch1=round(many / one, 2),
        load_average_at_end=os.getloadavg()[0],
    )
    figures["targets_met"] = {
        "lora_dp_over_nondp<=1.2": figures["lora_hooks_dp_over_nondp"] <= 1.2,
        "full_ghost_dp_over_nondp<=2.0": figures["full_ghost_dp_over_nondp"] <= 2.0,
        "sample_speedup>=8": figures["sample_speedup_batch32_over_batch1"] >= 8,
    }
    return figures
