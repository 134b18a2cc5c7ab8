"""DP-SGD across processes (`strategy=dpddp`, gloo on CPU): the step time of 2 processes against 1.

The real training module (Lightning + Opacus, LoRA on SmolLM2-135M's seven
projections, hooks mode) on the same global batch: 16 documents of 64 tokens
at sample rate 1, so every Poisson batch holds all of them. One process takes
each step as 2 physical batches of 8; two processes take 1 each and
all-reduce. One torch thread a process (the demo's setting), so 2 processes
use both cores. Step time = the fastest of the timed epochs (one step each;
the first is warm-up), measured inside the training processes (no start-up).
Strong-scaling efficiency = t1 / (2 t2): 1.0 would be a perfect halving. The
processes' start-up (spawning, imports, handing the model over) is reported
on its own. On a shared machine other processes only ever add time.
"""

from __future__ import annotations

import copy
import os
import time
from typing import Any

import torch
from omegaconf import OmegaConf

from synbench.core.corpus import Corpus
from synbench.core.privacy import NoiseSource
from synbench.dp.distributed import DPDDPStrategy
from synbench.dp.module import TrainConfig, fit_module
from synbench.generators.dpgen.data import Collator, DocumentDataset
from synbench.generators.dpgen.module import DPGenModule
from synbench.generators.dpgen.settings import PAPER_LORA, DPGenTrainingOptions
from synbench.generators.dpgen.weights import prepare_trainable
from synbench.lm.models import load_causal_lm

DOCS, SEQ_LEN, PHYSICAL, WARMUP_STEPS, TIMED_STEPS = 16, 64, 8, 1, 3
SENTENCE = "I took this medication for three months and the side effects were mild at first, then my sleep got worse. "


def run(base: torch.nn.Module, tokenizer: Any, devices: int) -> dict[str, float]:
    """Train on `devices` processes; the fastest timed step, and the wall time of the whole fit."""
    torch.manual_seed(0)
    model = prepare_trainable(copy.deepcopy(base), PAPER_LORA)
    texts = [f"review {i}: " + SENTENCE * 4 for i in range(DOCS)]
    dataset = DocumentDataset(
        Corpus.build(texts, [["positive"]] * DOCS, ["positive"]), tokenizer, DPGenTrainingOptions(max_seq_len=SEQ_LEN)
    )
    cfg = TrainConfig(
        epochs=WARMUP_STEPS + TIMED_STEPS,
        batch_size=DOCS,
        physical_batch_size=PHYSICAL,
        lr=1e-4,
        weight_decay=0.01,
        max_grad_norm=1.0,
        warmup_steps=0,
        grad_sample_mode="hooks",
        accountant="prv",
        noise_multiplier=1.0,
        noise=NoiseSource(),
    )
    module = DPGenModule(model, dataset, Collator(tokenizer.pad_token_id, "text"), cfg)
    wall = fit_module(
        module,
        accelerator="cpu",
        devices=devices,
        strategy=DPDDPStrategy() if devices > 1 else "auto",
        precision="32-true",
    )
    assert module.steps_taken() == cfg.epochs and len(module.epoch_s) == cfg.epochs
    step = min(module.epoch_s[WARMUP_STEPS:])
    return {"step_s": step, "fit_s": wall, "overhead_s": wall - sum(module.epoch_s)}


def main() -> dict[str, Any]:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # each spawned process: one thread, as the demo
    torch.set_num_threads(1)
    conf = os.path.join(os.path.dirname(__file__), "..", "..", "conf")
    node = OmegaConf.to_container(OmegaConf.load(os.path.join(conf, "model", "smollm2_135m.yaml")))
    loaded = load_causal_lm(node)  # type: ignore[arg-type]
    started = os.getloadavg()[0]
    clock = time.perf_counter()
    one = run(loaded.model, loaded.tokenizer, 1)
    two = run(loaded.model, loaded.tokenizer, 2)
    speedup = one["step_s"] / two["step_s"]
    return {
        "model": node["name"],
        "fine_tuning": "lora (7 projections), grad_sample_mode hooks",
        "global_batch": DOCS,
        "seq_len": SEQ_LEN,
        "physical_batch": PHYSICAL,
        "torch_threads_per_process": 1,
        "cpus": os.cpu_count(),
        "one_process_step_s": round(one["step_s"], 3),
        "two_process_step_s": round(two["step_s"], 3),
        "speedup_2_over_1": round(speedup, 3),
        "scaling_efficiency": round(speedup / 2, 3),
        "two_process_startup_s": round(two["overhead_s"], 1),
        "one_process_fit_s": round(one["fit_s"], 1),
        "two_process_fit_s": round(two["fit_s"], 1),
        "bench_s": round(time.perf_counter() - clock, 1),
        "load_average_at_start": round(started, 2),
        "load_average_at_end": round(os.getloadavg()[0], 2),
    }
