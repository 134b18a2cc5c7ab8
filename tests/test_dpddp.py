"""DP-SGD across two processes (`strategy=dpddp`, gloo on CPU): three known answers.

a) With every per-example gradient zero, the gradient the optimizer receives
   is pure noise with std sigma * C / (N q): noise added once for the global
   batch. Had each of the 2 ranks added its own, the std would be sqrt(2)
   larger; had each divided by the global expected batch, half as large.
b) The job's epsilon_spent equals the one-process job's at the same global
   sample rate and steps (DP-Gen end to end on the tiny Llama).
c) Each rank's Poisson batch sizes have mean q N / W.

The toy client is a linear layer on fixed inputs (tests a and c), run by the
shared core in spawned processes; a callback in each rank writes what it saw.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import pytorch_lightning as pl
import torch

from synbench.core.corpus import Corpus
from synbench.core.privacy import NoiseSource
from synbench.dp.distributed import DPDDPStrategy
from synbench.dp.module import Batch, DPSGDModule, PerSampleLoss, TrainConfig, fit_module
from synbench.generators.dpgen import DPGenGenerator
from synbench.testing.generator import job_budget

DIM = 64  # a Linear(64, 64): 4160 noise coordinates a step


class ZeroLoss(PerSampleLoss):
    """A loss of exactly 0 for every example, through the model: every per-example gradient is 0."""

    def __call__(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        return model(batch["x"]).sum(dim=1) * 0.0

    def null_batch(self) -> Batch:
        return {"x": torch.zeros((1, DIM))}

    def count(self, batch: Batch) -> tuple[int, int]:
        return int(batch["real"].sum()) if "real" in batch else 0, 0


def collate(items: list[torch.Tensor]) -> Batch:
    return {"x": torch.stack(items), "real": torch.ones(len(items))}


class Record(pl.Callback):
    """Each rank writes the gradients its optimizer received, its logical batch sizes and its training-step count."""

    def __init__(self, out: Path) -> None:
        self.out, self.grads, self.calls = out, [], 0

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        opt = pl_module.optimizers().optimizer
        step = opt.original_optimizer.step

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.grads.append(torch.cat([p.grad.flatten() for p in opt.params]).clone())
            return step(*args, **kwargs)

        opt.original_optimizer.step = recorded

    def on_train_batch_end(self, *args: Any) -> None:
        self.calls += 1

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        torch.save(
            {"grads": torch.stack(self.grads), "batch_sizes": pl_module.batch_sizes, "calls": self.calls},
            self.out / f"rank{trainer.global_rank}.pt",
        )


def toy_config(epochs: int, batch_size: int, sigma: float, clip: float) -> TrainConfig:
    return TrainConfig(
        epochs=epochs,
        batch_size=batch_size,
        physical_batch_size=3,  # logical batches of ~8 a rank: 2 to 5 physical ones, different per rank
        lr=0.0,
        weight_decay=0.0,
        max_grad_norm=clip,
        warmup_steps=0,
        grad_sample_mode="hooks",
        accountant="prv",
        noise_multiplier=sigma,
        noise=NoiseSource(),
    )


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """64 examples at expected batch 16 (q = 1/4) for 40 steps, zero loss, sigma 1.5, C 0.5, on 2 gloo processes."""
    out = tmp_path_factory.mktemp("dpddp")
    torch.manual_seed(0)
    data = list(torch.randn(64, DIM))
    cfg = toy_config(epochs=10, batch_size=16, sigma=1.5, clip=0.5)
    module = DPSGDModule(torch.nn.Linear(DIM, DIM), data, collate, cfg, ZeroLoss())
    fit_module(
        module, accelerator="cpu", devices=2, strategy=DPDDPStrategy(), precision="32-true", callbacks=[Record(out)]
    )
    ranks = [torch.load(out / f"rank{r}.pt") for r in range(2)]
    return {"module": module, "cfg": cfg, "ranks": ranks}


@pytest.mark.slow
def test_zero_gradients_receive_noise_added_once_for_the_global_batch(two_ranks: dict[str, Any]) -> None:
    cfg, module = two_ranks["cfg"], two_ranks["module"]
    rank0, rank1 = (r["grads"] for r in two_ranks["ranks"])
    assert rank0.shape == (module.plan.steps, DIM * DIM + DIM) == rank1.shape
    assert torch.equal(rank0, rank1)  # one noise draw, all-reduced: every rank steps with the same gradient
    expected = cfg.noise_multiplier * cfg.max_grad_norm / module.plan.expected_batch  # sigma C / (N q) = 0.046875
    std, n = rank0.std().item(), rank0.numel()  # 166400 draws: the std's standard error is 0.17 %
    assert abs(std / expected - 1) < 6 / math.sqrt(2 * n)  # 6 standard errors = 1.5 %
    assert abs(rank0.mean().item()) < 6 * expected / math.sqrt(n)  # centred: no signal leaks in
    # per-rank noise (sqrt(2) larger) or per-rank scaling by N q (half as large) both lie far outside that band


@pytest.mark.slow
def test_each_rank_draws_poisson_batches_of_mean_q_n_over_world_size(two_ranks: dict[str, Any]) -> None:
    module = two_ranks["module"]
    plan, world = module.plan, 2
    mean = plan.sample_rate * plan.n / world  # 8 examples a rank a step
    share = plan.n // world  # 32 examples in each rank's shard
    for rank in two_ranks["ranks"]:
        sizes = torch.tensor(rank["batch_sizes"], dtype=torch.float64)
        assert len(sizes) == plan.steps == 40
        # Binomial(32, 1/4) per step: variance 6, so over 40 steps the mean's standard error is 0.39; 4 standard
        # errors (1.55) tell 8 from a rank sampling the whole set (16) or at q / W (4).
        assert abs(sizes.mean().item() - mean) < 4 * math.sqrt(share * plan.sample_rate * (1 - plan.sample_rate) / 40)
        assert sizes.min() >= 0 and sizes.max() <= share
    # lock-step: both ranks ran the same number of physical batches, and rank 0's sizes came back to the job
    assert two_ranks["ranks"][0]["calls"] == two_ranks["ranks"][1]["calls"] >= plan.steps
    assert module.batch_sizes == two_ranks["ranks"][0]["batch_sizes"]
    assert module.privacy_engine.accountant.history == [(1.5, plan.sample_rate, plan.steps)]


def corpus(n: int = 40) -> Corpus:
    texts = [f"patient {i} reports {'mild' if i % 2 else 'severe'} headache after dose {i}" for i in range(n)]
    return Corpus.build(texts, [[("neg", "pos")[i % 2]] for i in range(n)], ("neg", "pos"), name="tiny")


@pytest.mark.slow
def test_dpgen_on_two_processes_spends_what_the_one_process_job_spends(tiny_model: dict[str, Any]) -> None:
    settings = dict(epochs=1, batch_size=8, physical_batch_size=2, max_seq_len=32, max_new_tokens=6, lr=1e-3)
    spec = job_budget(40, 2.0, noise=NoiseSource())
    reports, samples = {}, {}
    for devices, strategy in ((1, "auto"), (2, "dpddp")):
        gen = DPGenGenerator(
            model=tiny_model, workdir=None, accelerator="cpu", devices=devices, strategy=strategy, **settings
        )
        reports[devices] = gen.fit(corpus(), spec, seed=0)
        samples[devices] = gen.sample(4)
    one, two = reports[1].details, reports[2].details
    assert reports[2].epsilon_spent == reports[1].epsilon_spent and 1.9 <= reports[2].epsilon_spent <= 2.0
    for key in ("noise_multiplier", "sample_rate", "planned_steps", "steps"):
        assert two[key] == one[key], key
    assert two["steps"] == 5 and len(reports[2].private_stats["train_loss"]) == 5  # rank 0's record came back
    assert len(samples[2]) == 4  # the trained weights came back too: the job's process samples
    print(json.dumps({"one_process_train_s": one["train_s"], "two_process_train_s": two["train_s"]}))


@pytest.mark.slow
def test_a_dpddp_job_from_the_command_line_runs_once(
    tmp_path: Path, tiny_dataset: list[str], tiny_model: dict[str, Any]
) -> None:
    """`python -m synbench generator.strategy=dpddp generator.accelerator=cpu generator.devices=2`: the processes are
    spawned for training only, so the job (label release, sampling, metrics, results) runs once, in one folder."""
    from conftest import model_overrides, run_cli

    out = tmp_path / "out"
    run_cli(
        [
            *tiny_dataset,
            *model_overrides(tiny_model),
            "generator.strategy=dpddp",
            "generator.accelerator=cpu",
            "generator.devices=2",
            "generator.epochs=1",
            "generator.batch_size=8",
            "generator.physical_batch_size=4",
            "generator.max_seq_len=32",
            "generator.max_new_tokens=6",
            "task.n_synthetic=6",
            "metrics=[length]",
            "tracking=none",
            "eps=2",
            f"output_root={out}",
        ],
        cwd=tmp_path,
    )
    written = list(out.rglob("results.json"))
    assert len(written) == 1 and len(list(out.rglob("synthetic.jsonl"))) <= 1
    results = json.loads(written[0].read_text())
    assert results["status"] == "complete" and 1.9 <= results["epsilon_spent"] <= 2.0
    assert results["config"]["generator"]["strategy"] == "dpddp" and results["generation"]["steps"] == 4
