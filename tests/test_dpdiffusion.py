"""DP-Diffusion: clipping on the denoiser, accounting, the sampler's vocabulary, learning without DP, the contract.

The fast tests use tiny denoisers (d_model 32 to 64, one or two layers) over the
real public MiniLM WordPiece vocabulary, which ships offline in a pip package.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from torch.utils.data import Subset

from synbench.core import registry
from synbench.core.base import Generator
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.core.privacy import NoiseSource, PrivacySpec
from synbench.dp import accounting
from synbench.dp.poisson import PoissonPlan, make_private, poisson_loader
from synbench.generators.dpdiffusion import DPDiffusionGenerator
from synbench.generators.dpdiffusion.data import (
    MaskedDiffusionLoss,
    SequenceDataset,
    collate,
    forbidden_ids,
    public_tokenizer,
)
from synbench.generators.dpdiffusion.model import Denoiser, DenoiserConfig, PretrainedDenoiser, pretrained_denoiser
from synbench.generators.dpdiffusion.sampling import decode, unmask
from synbench.generators.dpdiffusion.settings import DPDiffusionOptions
from synbench.testing.generator import job_budget
from test_dpgen import one_thread  # noqa: F401  (autouse: one torch thread, as DP-Gen's tests)

LABELS = ("neg", "pos")
TINY = dict(
    init="scratch",
    label_prior="dp",
    d_model=32,
    n_layers=1,
    n_heads=2,
    d_ff=64,
    max_seq_len=16,
    epochs=1,
    batch_size=8,
    physical_batch_size=8,
    sample_steps=6,
    sample_batch_size=32,
    num_threads=1,
)
KIT = {**TINY, "d_model": 16, "max_seq_len": 12, "sample_steps": 3}  # q = 1/5 on the kit corpora: PRV is fast there


def corpus(n: int = 40) -> Corpus:
    texts = [f"the patient reports {'mild' if i % 2 else 'severe'} headache after the dose" for i in range(n)]
    return Corpus.build(texts, [[LABELS[i % 2]] for i in range(n)], LABELS, name="tiny")


def spec(eps: float, n: int = 40, noise_seed: int | None = None) -> PrivacySpec:
    return job_budget(n, eps, noise=NoiseSource(seed=noise_seed))


def denoiser(seq_len: int = 16, n_labels: int = 2) -> Denoiser:
    torch.manual_seed(0)
    return Denoiser(
        DenoiserConfig(len(public_tokenizer()), n_labels, seq_len, d_model=32, n_layers=1, n_heads=2, d_ff=64)
    )


def minilm_layers(seq_len: int, trained: int) -> DPDiffusionOptions:
    """MiniLM's bottom two encoder layers, the top `trained` of them trained, the label paths at gain 1."""
    return DPDiffusionOptions(max_seq_len=seq_len, pretrained_layers=2, trained_layers=trained, label_gain=1.0)


def pretrained(seq_len: int = 16, n_labels: int = 2) -> PretrainedDenoiser:
    """MiniLM's bottom two encoder layers, the top one trained (loads offline from its pip package)."""
    return pretrained_denoiser(public_tokenizer(), n_labels, minilm_layers(seq_len, trained=1)).train()


@pytest.mark.parametrize("mode", ["hooks", "ghost"])
@pytest.mark.parametrize("init", ["scratch", "pretrained"])
def test_every_per_document_gradient_is_clipped(mode: str, init: str) -> None:
    """One document per backward: its raw gradient norm is far above C, what reaches the sum is at most C (the
    pretrained denoiser's frozen embeddings, frozen layer and tied head take no per-sample gradient)."""
    tok, clip = public_tokenizer(), 0.01
    data = SequenceDataset(corpus(6), tok, 16)
    model = denoiser() if init == "scratch" else pretrained()
    plan = PoissonPlan(len(data), 1, 1)
    loader = poisson_loader(data, plan, collate, NoiseSource().torch("poisson_masks"))
    private = make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.0),
        loader,
        plan,
        noise_multiplier=1.0,
        max_grad_norm=clip,
        accountant="rdp",
        noise=NoiseSource(),
        device="cpu",
        grad_sample_mode=mode,
        criterion=torch.nn.CrossEntropyLoss(),
    )
    opt, hooks = private["optimizer"], private["hooks"]
    loss_fn = MaskedDiffusionLoss(tok.mask_token_id, 16, 2, t_min=0.5, draws=2, noise=NoiseSource(seed=0))
    raw, clipped = [], []
    for i in range(len(data)):
        losses = loss_fn(model, collate([data[i]]))
        if mode == "ghost":
            from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping

            DPTensorFastGradientClipping(hooks, opt, losses, "mean").backward()
            raw.append(float(hooks.per_sample_gradient_norms[0]))
            clipped.append(float(torch.cat([p.grad.flatten() for p in opt.params]).norm()))
        else:
            losses.mean().backward()
            raw.append(float(torch.cat([g.reshape(1, -1) for g in opt.grad_samples], dim=1).norm()))
            opt.clip_and_accumulate()
            clipped.append(float(torch.cat([p.summed_grad.flatten() for p in opt.params]).norm()))
            for p in opt.params:
                p.summed_grad = None
        opt.zero_grad()
    hooks.cleanup()
    assert min(raw) > 10 * clip  # the bound is active, not vacuous
    assert max(clipped) <= clip * (1 + 1e-4)


def test_the_pretrained_start_predicts_masked_tokens_better_than_scratch() -> None:
    """Offline MiniLM init: on public strings its masked-token loss at step 0 is far below a random init's (about
    log V), and only the top layer and the label paths train."""
    tok = public_tokenizer()
    texts = [
        "the patient reports mild headache after the first dose of the medication",
        "i have been taking this pill for three months and my skin cleared up",
        "my doctor prescribed it for anxiety and it works well for me",
        "it did not help my pain at all and i felt sick every morning",
    ]
    data = SequenceDataset(Corpus.build(texts, [["neg"], ["pos"]] * 2, LABELS, name="public"), tok, 16)
    batch = collate([data[i] for i in range(len(data))])
    loss = MaskedDiffusionLoss(tok.mask_token_id, 16, 2, t_min=0.5, draws=4, noise=NoiseSource(seed=0))
    model = pretrained()
    with torch.no_grad():
        start = {name: float(loss(m, batch).mean()) for name, m in (("scratch", denoiser()), ("pretrained", model))}
    assert start["pretrained"] < start["scratch"] - 1.0
    trained = {name.split(".")[0] for name, p in model.named_parameters() if p.requires_grad}
    assert trained == {"trained", "label_in", "label_out"} and model.describe().startswith("minilm-l6-v2-L2of6-train1")
    with pytest.raises(ConfigError, match="trained_layers"):
        pretrained_denoiser(tok, 2, minilm_layers(16, trained=3))


@pytest.mark.slow
def test_epsilon_is_the_budget_composed_with_the_label_sets() -> None:
    gen = DPDiffusionGenerator(**TINY)
    report = gen.fit(corpus(), spec(2.0), seed=0)
    d = report.details
    assert 0.99 * 2.0 <= report.epsilon_spent <= 2.0 and report.delta == pytest.approx(1 / 40**2)
    assert d["steps"] == d["planned_steps"] == 5 and d["label_mechanisms"] == 1 and d["init"] == "scratch"
    history = accounting.job_history(
        [(d["noise_multiplier"], d["sample_rate"], d["steps"])],
        type("L", (), {"history": lambda self: [(d["label_noise_std"], 1.0, 1)]})(),
    )
    assert accounting.epsilon(history, report.delta, "prv") == pytest.approx(report.epsilon_spent, rel=1e-9)
    assert set(d) <= DPDiffusionGenerator.public_details and "train_loss" in report.private_stats
    assert not {"train_loss", "batch_size", "train_tokens"} & set(d)


def test_the_sampler_never_writes_mask_or_pad() -> None:
    """Even a denoiser that puts almost all its mass on [MASK], [PAD] and [CLS] writes neither."""
    tok = public_tokenizer()
    model = denoiser()
    with torch.no_grad():
        model.head.bias[[tok.mask_token_id, tok.pad_token_id, tok.cls_token_id]] = 50.0
    ids = unmask(
        model,
        tok,
        torch.eye(2).repeat(8, 1),
        seq_len=16,
        steps=5,
        temperature=2.0,
        generator=torch.Generator().manual_seed(0),
    )
    body = ids[:, 1:]
    assert not set(body.flatten().tolist()) & set(forbidden_ids(tok))
    assert (ids[:, 0] == tok.cls_token_id).all()


@pytest.mark.parametrize("end_mark", [False, True])
def test_the_end_mark_is_written_only_under_sample_length_model(end_mark: bool) -> None:
    """A denoiser that puts most of its mass on [SEP] ends texts early under `model` and never under `full`."""
    tok = public_tokenizer()
    model = denoiser()
    with torch.no_grad():
        model.head.bias[tok.sep_token_id] = 12.0
    ids = unmask(
        model,
        tok,
        torch.eye(2).repeat(8, 1),
        seq_len=16,
        steps=5,
        temperature=1.0,
        generator=torch.Generator().manual_seed(0),
        end_mark=end_mark,
    )
    texts, tokens = decode(tok, ids)
    if end_mark:
        assert (ids[:, 1:] == tok.sep_token_id).any(dim=1).all() and tokens < 16 * 15
    else:
        assert not (ids == tok.sep_token_id).any() and tokens == 16 * 15 and all(texts)


@pytest.mark.slow
def test_without_dp_the_model_learns_frequent_bigrams() -> None:
    gen = DPDiffusionGenerator(
        **{
            **TINY,
            "d_model": 64,
            "d_ff": 128,
            "max_seq_len": 12,
            "epochs": 40,
            "lr": 5e-3,
            "batch_size": 10,
            "physical_batch_size": 10,
            "t_min": 0.05,
            "sample_steps": 11,
            "label_prior": "uniform",
        }
    )
    report = gen.fit(corpus(), spec(math.inf, noise_seed=0), seed=0)  # pinned Poisson batches: deterministic
    assert report.epsilon_spent == math.inf and report.details["noise_multiplier"] == 0.0
    losses = report.private_stats["train_loss"]
    assert sum(losses[-10:]) / 10 < 0.3 * sum(losses[:5]) / 5
    texts = gen.sample(20).texts
    bigrams = Counter(b for t in texts for b in zip(t.split(), t.split()[1:]))
    train = {b for t in corpus().texts for b in zip(t.split(), t.split()[1:])}
    assert sum(k for b, k in bigrams.items() if b in train) > 0.6 * sum(bigrams.values())
    assert bigrams[("the", "patient")] >= 10 and bigrams[("patient", "reports")] >= 10


def test_noise_draws_average_one_documents_losses_and_modes_agree() -> None:
    curves = [
        DPDiffusionGenerator(**{**TINY, "noise_draws": 2, "grad_sample_mode": mode})
        .fit(corpus(), spec(2.0, noise_seed=3), seed=1)
        .private_stats["train_loss"]
        for mode in ("hooks", "ghost")
    ]
    assert curves[0] == pytest.approx(curves[1], rel=1e-4)


def test_empty_poisson_batches_take_a_step() -> None:
    report = DPDiffusionGenerator(**{**TINY, "batch_size": 1, "epochs": 1}).fit(corpus(20), spec(8.0, n=20), seed=0)
    assert report.details["steps"] == report.details["planned_steps"] == 20
    assert report.private_stats["batch_size"].count(0) >= 1 or len(report.private_stats["batch_size"]) == 20


def test_config_and_errors() -> None:
    from omegaconf import OmegaConf

    from conftest import compose_config

    node = OmegaConf.to_container(compose_config(["generator=dpdiffusion"]).generator, resolve=True)
    assert isinstance(registry.create(Generator, node), DPDiffusionGenerator)
    with pytest.raises(ConfigError, match="sample\\(\\) called before fit"):
        DPDiffusionGenerator(**TINY).sample(3)
    with pytest.raises(ConfigError, match="dpdiffusion.yaml"):
        DPDiffusionGenerator(epoch=3)
    with pytest.raises(ConfigError, match="grad_sample_mode"):
        DPDiffusionGenerator(grad_sample_mode="functorch")
    with pytest.raises(ConfigError, match="generator.init='bert' must be one of pretrained, scratch"):
        DPDiffusionGenerator(init="bert")
    with pytest.raises(ConfigError, match="generator.sample_length='short' must be one of full, model"):
        DPDiffusionGenerator(sample_length="short")
    with pytest.raises(ConfigError, match="trained_layers=0"):
        DPDiffusionGenerator(trained_layers=0)
    with pytest.raises(ConfigError, match="noise_draws"):
        MaskedDiffusionLoss(103, 8, 2, t_min=0.01, draws=0, noise=NoiseSource())


def loss_draws(data: SequenceDataset, batches: list[list[int]], noise: NoiseSource) -> dict[int, list[torch.Tensor]]:
    """Per document of `data` (by its id's key), the (t, masks) of its draws when the loss sees `batches` in order."""
    loss = MaskedDiffusionLoss(public_tokenizer().mask_token_id, 16, 2, t_min=0.1, draws=2, noise=noise)
    out: dict[int, list[torch.Tensor]] = {}
    for rows in batches:
        batch = collate([data[i] for i in rows])
        t, masked = loss.masks(batch["doc"], 16)
        for doc, t_doc, m_doc in zip(batch["doc"].tolist(), t, masked):
            out.setdefault(doc, []).append(torch.cat([t_doc.flatten(), m_doc.flatten().float()]))
    return out


def test_a_documents_masks_do_not_depend_on_the_other_documents() -> None:
    """Per-document draws from the secret noise: removing a document moves no other document's t or masks."""
    tok = public_tokenizer()
    docs = corpus(8)
    full, fewer = SequenceDataset(docs, tok, 16), SequenceDataset(docs.subset([0, 2, 3, 4, 5, 6, 7]), tok, 16)
    noise = NoiseSource(seed=7)  # a replication seed: the same secret key in both worlds
    with_doc = loss_draws(full, [[0, 1, 2, 3], [4, 5, 6, 7], [0, 2, 5]], noise)
    without = loss_draws(fewer, [[0, 1, 2], [3, 4, 5, 6], [0, 1, 4]], noise)  # the same documents, positions shifted
    assert set(with_doc) - set(without) == {full[1].doc} and len(without) == 7
    for doc, draws in without.items():
        assert all(torch.equal(a, b) for a, b in zip(draws, with_doc[doc], strict=True))
    assert not torch.equal(with_doc[full[0].doc][0], with_doc[full[0].doc][1])  # a document's second draw is fresh
    # Secret noise: two sources draw different masks for the same documents; a replication seed repeats them.
    secret = [loss_draws(full, [[0, 1]], NoiseSource()) for _ in range(2)]
    assert not torch.equal(secret[0][full[0].doc][0], secret[1][full[0].doc][0])
    assert torch.equal(loss_draws(full, [[0, 1]], noise)[full[1].doc][0], with_doc[full[1].doc][0])


@pytest.mark.slow
def test_dpdiffusion_conforms_to_the_generator_contract() -> None:
    from synbench.testing import check_generator

    check_generator(lambda: DPDiffusionGenerator(**KIT))


def test_subset_of_a_dataset_keeps_fixed_length() -> None:
    data = SequenceDataset(corpus(4), public_tokenizer(), 8)
    batch = collate([Subset(data, [0, 1])[i] for i in range(2)])
    assert batch["input_ids"].shape == (2, 8) and (batch["input_ids"][:, -1] == public_tokenizer().sep_token_id).all()
