"""The paper's DP-Gen experiment on a Llama-3-shaped model folder, on CPU: the paper path composes and runs.

`+experiment=paper_psytar_dpgen` with `model.pretrained=<folder>`: the
loader the hub models use reads a local save_pretrained folder (random
weights, Llama-3's shape: GQA, llama3 rope scaling, tied embeddings, SmolLM2's
tokenizer). Toy sizes (16 PsyTAR-format documents, 2 DP-SGD steps, 4 samples),
the paper's training settings kept: LoRA on all seven projections (r 8, alpha
16), bf16-mixed, lr 1e-4 with a cosine schedule and no warm-up, weight decay
0.01, clip 1.0, delta 1/N^2 - plus gradient checkpointing switched on. The
assertions read what ran from results.json and the job's DP-Gen record.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import run_cli, write_jsonl
from synbench.dp import accounting

PSYTAR_LABELS = ["ADR", "DI", "EF", "INF", "Others", "SSI", "WD"]
SEVEN = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def write_psytar(root: Path, n_train: int = 16, n_test: int = 8) -> None:
    """`<root>/psytar/{train,test}.jsonl` in the authors' format: `text` and `label`, a list of label strings."""
    folder = root / "psytar"
    folder.mkdir(parents=True)
    effects = ["felt dizzy", "slept better", "gained weight", "stopped the pills", "had less anxiety"]
    for split, count, start in (("train", n_train, 0), ("test", n_test, 100)):
        rows = [
            {
                "text": f"after week {i % 7 + 1} on the drug I {effects[i % len(effects)]} and saw my doctor",
                "label": sorted({PSYTAR_LABELS[i % 7], PSYTAR_LABELS[(i * 3) % 7]}),
            }
            for i in range(start, start + count)
        ]
        write_jsonl(folder / f"{split}.jsonl", rows)


@pytest.mark.slow
def test_paper_psytar_dpgen_runs_on_a_llama3_shaped_folder(tmp_path: Path, llama3_folder: Path) -> None:
    write_psytar(tmp_path / "data")
    out = tmp_path / "out"
    started = time.monotonic()
    proc = run_cli(
        [
            "+experiment=paper_psytar_dpgen",
            f"data_root={tmp_path / 'data'}",
            f"model.pretrained={llama3_folder}",
            "eps=4",
            "seed=0",
            # toy sizes and this machine: 16 documents at expected batch 8 = 2 DP-SGD steps in 1 epoch, on CPU
            "generator.accelerator=cpu",
            "generator.num_threads=1",
            "generator.epochs=1",
            "generator.batch_size=8",
            "generator.physical_batch_size=4",
            "generator.activation_checkpointing=true",
            "generator.max_new_tokens=8",
            "generator.sample_batch_size=4",
            "task.n_synthetic=4",
            "classifier=tfidf",
            "metrics=[utility]",
            "tracking=none",
            f"output_root={out}",
        ],
        cwd=tmp_path,
    )
    wall = time.monotonic() - started
    results = json.loads(next(out.rglob("results.json")).read_text())
    assert results["status"] == "complete", proc.stdout[-2000:]
    config, ran = results["config"]["generator"], results["generation"]
    record = json.loads(next(out.rglob("dpgen/dpgen.json")).read_text())  # the trained weights' accounting
    adapter = json.loads(next(out.rglob("dpgen/adapter/adapter_config.json")).read_text())
    # the paper's settings composed ...
    assert sorted(config["lora"]["target_modules"]) == sorted(SEVEN) and config["lora"]["r"] == 8
    assert config["lr"] == pytest.approx(1e-4) and config["warmup_steps"] == 0 and config["weight_decay"] == 0.01
    assert config["max_grad_norm"] == 1.0 and config["max_seq_len"] == 128 and config["label_prior"] == "dp"
    # ... and ran: peft wrapped all seven projections, in bf16-mixed with checkpointing, for 2 DP-SGD steps
    assert sorted(adapter["target_modules"]) == sorted(SEVEN) and adapter["r"] == 8 and adapter["lora_alpha"] == 16
    for source in (ran, record):
        assert source["precision"] == "bf16-mixed" and source["activation_checkpointing"] is True
        assert source["steps"] == source["planned_steps"] == 2 and source["fine_tuning"] == "lora"
        assert source["model_source"] == str(llama3_folder) and source["attn_implementation"] == "sdpa"
    assert results["delta"] == pytest.approx(1 / 16**2)
    assert 0.99 * 4 <= results["epsilon_spent"] <= 4.0
    # the reported epsilon is the accountant's for what ran: the planned history, recomputed here
    history = [(record["noise_multiplier"], record["sample_rate"], record["steps"])]
    assert record["sample_rate"] == 0.5 and record["noise_multiplier"] > 0
    labels_spent = results["epsilon_spent"] - accounting.epsilon(history, results["delta"], "prv")
    assert labels_spent > 0  # the DP label-set plan is inside the same budget (label_prior=dp)
    assert ran["n_private"] == 16 and ran["n_synthetic"] == 4
    print(f"paper_psytar_dpgen on the Llama-3-shaped folder: {wall:.0f} s")


def test_the_slurm_example_composes_with_the_paper_experiment_and_dpddp() -> None:
    """conf/hydra/launcher/slurm_gpu_node.yaml (docs/scale.md's worked example) on top of the paper experiment."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install '.[cluster]'")
    from hydra import compose, initialize_config_module

    overrides = [
        "+experiment=paper_psytar_dpgen",
        "data_root=/shared/data",
        "hydra/launcher=slurm_gpu_node",
        "hydra.launcher.partition=gpu",
        "generator.strategy=dpddp",
        "generator.devices=4",
    ]
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    assert launcher.partition == "gpu" and launcher.nodes == 1 and launcher.tasks_per_node == 1
    assert launcher.gpus_per_node == cfg.generator.devices == 4 and cfg.generator.strategy == "dpddp"
    assert any("HF_HUB_OFFLINE=1" in line for line in launcher.setup)
    assert cfg.generator.lr == pytest.approx(1e-4) and len(cfg.generator.lora.target_modules) == 7  # still the paper's
