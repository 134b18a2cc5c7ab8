"""DP-Diffusion speed on this machine, at the demo grid's sizes (conf/generator/dpdiffusion_grid.yaml over
dpdiffusion.yaml and the schema's defaults: the pretrained MiniLM denoiser the grid trains).

1. DP step time / non-DP step time of the denoiser, through the shared training core
   (Lightning + Opacus), with `hooks` and with `ghost` clipping, on the same batch: the
   sample rate is 1 (batch size = data set size), so every Poisson batch holds all documents.
2. Sampling throughput (documents per second) with the demo's unmasking steps.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from synbench.core.corpus import Corpus
from synbench.core.privacy import NoiseSource
from synbench.dp.module import DPSGDModule, TrainConfig, fit_module
from synbench.generators.dpdiffusion.data import MaskedDiffusionLoss, SequenceDataset, collate, public_tokenizer
from synbench.generators.dpdiffusion.model import (
    Denoiser,
    DenoiserConfig,
    PretrainedDenoiser,
    parameter_count,
    pretrained_denoiser,
)
from synbench.generators.dpdiffusion.sampling import generate
from synbench.generators.dpdiffusion.settings import DPDiffusionOptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dpgen import StepTimer  # noqa: E402  (the sibling benchmark's per-step timer)

CONF = Path(__file__).resolve().parents[2] / "conf" / "generator"
TIMED_STEPS, WARMUP_STEPS, SAMPLED_DOCS = 3, 1, 64
SENTENCE = "I took this medication for three months and the side effects were mild at first, then my sleep got worse. "


def grid() -> DPDiffusionOptions:
    """The settings a grid job runs: the schema's defaults, then dpdiffusion.yaml's values, then the grid's."""
    values: dict[str, Any] = {}
    for name in ("dpdiffusion.yaml", "dpdiffusion_grid.yaml"):
        node = OmegaConf.load(CONF / name)
        node.pop("defaults", None)
        values.update(OmegaConf.to_container(node))  # type: ignore[arg-type]
    return DPDiffusionOptions(**values)


def build(cfg: DPDiffusionOptions, tokenizer: Any) -> Denoiser | PretrainedDenoiser:
    torch.manual_seed(0)
    if cfg.init == "pretrained":
        return pretrained_denoiser(tokenizer, 1, cfg)
    return Denoiser(
        DenoiserConfig(
            vocab_size=len(tokenizer),
            n_labels=1,
            max_len=cfg.max_seq_len,
            d_model=cfg.d_model,
            n_layers=cfg.n_layers,
            n_heads=cfg.n_heads,
            d_ff=cfg.d_ff,
        )
    )


def step_seconds(cfg: DPDiffusionOptions, tokenizer: Any, mode: str, private: bool) -> float:
    batch = int(cfg.physical_batch_size)
    texts = [f"review {i}: " + SENTENCE * 4 for i in range(batch)]
    dataset = SequenceDataset(Corpus.build(texts, [["positive"]] * batch, ["positive"]), tokenizer, cfg.max_seq_len)
    train = TrainConfig(
        epochs=WARMUP_STEPS + TIMED_STEPS,
        batch_size=batch,
        physical_batch_size=batch,
        lr=1e-3,
        weight_decay=0.0,
        max_grad_norm=1.0,
        warmup_steps=0,
        grad_sample_mode=mode,
        accountant="prv",
        noise_multiplier=1.0 if private else None,
        noise=NoiseSource(),
    )
    loss = MaskedDiffusionLoss(
        tokenizer.mask_token_id, cfg.max_seq_len, 1, t_min=cfg.t_min, draws=cfg.noise_draws, noise=NoiseSource(seed=0)
    )
    timer = StepTimer()
    fit_module(
        DPSGDModule(build(cfg, tokenizer), dataset, collate, train, loss),
        accelerator="cpu",
        devices=1,
        strategy="auto",
        precision="32-true",
        callbacks=[timer],
    )
    return min(timer.seconds[WARMUP_STEPS:])  # the least disturbed step: other processes only ever add time


def main() -> dict[str, Any]:
    cfg = grid()
    if cfg.num_threads:  # measure what the demo runs
        torch.set_num_threads(int(cfg.num_threads))
    tokenizer = public_tokenizer()
    figures: dict[str, Any] = {
        "denoiser": build(cfg, tokenizer).describe(),
        "params": parameter_count(build(cfg, tokenizer)),
        "physical_batch": cfg.physical_batch_size,
        "torch_threads": torch.get_num_threads(),
        "load_average_at_start": os.getloadavg()[0],
    }
    for mode in ("hooks", "ghost"):
        dp, plain = (step_seconds(cfg, tokenizer, mode, private) for private in (True, False))
        figures[f"{mode}_dp_step_s"] = round(dp, 3)
        figures[f"{mode}_nondp_step_s"] = round(plain, 3)
        figures[f"{mode}_dp_over_nondp"] = round(dp / plain, 3)
    start = time.perf_counter()
    _, stats = generate(
        build(cfg, tokenizer),
        tokenizer,
        [("positive",)] * SAMPLED_DOCS,
        ["positive"],
        seq_len=cfg.max_seq_len,
        steps=cfg.sample_steps,
        temperature=1.0,
        batch_size=cfg.sample_batch_size,
        seed=0,
        end_mark=cfg.sample_length == "model",
    )
    figures.update(
        sample_steps=cfg.sample_steps,
        sample_docs_per_s=round(SAMPLED_DOCS / (time.perf_counter() - start), 2),
        load_average_at_end=os.getloadavg()[0],
    )
    return figures


if __name__ == "__main__":
    print(main())
