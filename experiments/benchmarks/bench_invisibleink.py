"""InvisibleInk's cost per synthetic token against non-private batched sampling of the same model, at demo settings.

The demo model (SmolLM2-135M on CPU) and the demo config of the plugin
(conf/generator/invisibleink.yaml: B=7, T=48, k=50, contexts truncated to 80
tokens; C calibrated for eps=4 at delta=1/600^2 as the demo job does). The
contexts are drug reviews of the embedded (public) dataset.

1. InvisibleInk: `DOCS` synthetic documents, each from B reviews + the public
   prompt: (B+1) x DOCS prompts, decoded together (one chunk of max_rows).
2. Non-private: the same model samples one continuation per private-context
   prompt (the prompt a non-private generator would use), the same number of
   prompts in one batch through `synbench.lm.generation.generate`
   (temperature 1, no truncation, T=48), so both runs do the same forward work
   per row; per synthetic token InvisibleInk does B+1 rows of it.

Figures: wall and CPU (process) seconds per generated token of each, their
ratio (the paper: under 4-8x at its settings, B+1 = 8-32 on GPUs), and
tokens/s. CPU seconds are the figure to compare on a shared machine.
Run: `make bench BENCH=invisibleink`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import torch
from omegaconf import OmegaConf
from synbench_invisibleink.generator import InvisibleInkGenerator

from synbench.core.base import DatasetLoader
from synbench.core.corpus import Corpus
from synbench.core.privacy import PrivacySpec
from synbench.core.registry import create
from synbench.lm.backends import load_shared
from synbench.lm.generation import chat_prompt, generate, torch_threads
from synbench.lm.settings import TRANSFORMERS_TOP_K

DOCS = 8  # synthetic documents of the InvisibleInk run: 8 x (7 + 1) = 64 prompts = max_rows, one forward per token
HERE = os.path.dirname(os.path.abspath(__file__))


def demo_generator(model: dict[str, Any]) -> InvisibleInkGenerator:
    node = OmegaConf.to_container(
        OmegaConf.load(
            os.path.join(
                HERE,
                "..",
                "..",
                "plugins",
                "synbench-invisibleink",
                "synbench_invisibleink",
                "conf",
                "generator",
                "invisibleink.yaml",
            )
        )
    )
    node.pop("_plugin_")
    node.update(model=model, prompts="drugreview")
    return InvisibleInkGenerator(**node)


def timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = OmegaConf.to_container(OmegaConf.load(os.path.join(HERE, "..", "..", "conf", "model", "smollm2_135m.yaml")))
    gen = demo_generator(model)
    B, T = gen.batch_size, gen.max_new_tokens
    dataset = OmegaConf.to_container(
        OmegaConf.load(os.path.join(HERE, "..", "..", "conf", "dataset", "drugreview.yaml"))
    )
    train = create(DatasetLoader, dataset).load(0).train
    pos = [i for i, ls in enumerate(train.labels) if ls == ("positive",)][: DOCS * B]
    private = train.subset(pos)
    corpus = Corpus.build(list(private.texts), [["positive"]] * len(private), ["positive"], name="bench")
    gen.fit(corpus, PrivacySpec(4.0, 1.0 / 600**2, "prv"), seed=0)
    loaded = load_shared(json.dumps(model, sort_keys=True), "cpu")
    torch.manual_seed(0)
    _, ink_wall, ink_cpu = timed(lambda: gen.sample(DOCS, {("positive",): DOCS}))
    ink = gen.sampling_details()
    tok = loaded.tokenizer
    fields = {"label": "positive", "domain": gen.prompts.domain}
    prompts = [
        chat_prompt(tok, gen.private_prompt.format(text=gen._truncate(tok, t), **fields), gen.prompts.system)
        for t in corpus.texts
    ] + [chat_prompt(tok, gen.public_prompt.format(**fields), gen.prompts.system)] * DOCS
    stop = [tok.convert_tokens_to_ids("<|im_end|>")]
    with torch_threads(gen.num_threads):
        (_, stats), base_wall, base_cpu = timed(
            lambda: generate(
                loaded.model,
                tok,
                prompts,
                batch_size=len(prompts),
                max_new_tokens=T,
                temperature=1.0,
                top_p=1.0,
                top_k=TRANSFORMERS_TOP_K,
                seed=0,
                eos_token_ids=stop,
            )
        )
    ink_tokens, base_tokens = ink["sample_tokens"], stats.new_tokens
    figures: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "torch_threads": gen.num_threads,
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "batch_size_B": B,
        "max_new_tokens": T,
        "top_k": gen.top_k,
        "clip_at_eps4": round(gen._state["clip"], 4),
        "prompts_per_run": len(prompts),
        "invisibleink": {
            "docs": DOCS,
            "tokens": ink_tokens,
            "wall_s": round(ink_wall, 2),
            "cpu_s": round(ink_cpu, 2),
            "tokens_per_s": round(ink_tokens / ink_wall, 3),
            "topk_plus_mean": ink["topk_plus_mean"],
            "expansion_share": ink["expansion_share"],
        },
        "nonprivate": {
            "docs": len(prompts),
            "tokens": base_tokens,
            "wall_s": round(base_wall, 2),
            "cpu_s": round(base_cpu, 2),
            "tokens_per_s": round(base_tokens / base_wall, 3),
        },
    }
    figures["cost_per_token_ratio_cpu"] = round((ink_cpu / ink_tokens) / (base_cpu / base_tokens), 2)
    figures["cost_per_token_ratio_wall"] = round((ink_wall / ink_tokens) / (base_wall / base_tokens), 2)
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
