"""`generator=dpdiffusion`: a masked discrete diffusion LM trained with DP-SGD on the shared core, then unmasking.

Budget: as DP-Gen's, one accountant history for the whole job (the DP
label-set plan of `synbench.dp.label_sets`, its share set by
`label_budget_share`, and every DP-SGD step), calibrated by
`synbench.dp.job.JobBudget`. `eps=inf` runs the same pipeline without DP.
The denoiser starts from MiniLM's pretrained encoder layers (`init:
pretrained`, the default) or from random weights drawn from `seed` (`init:
scratch`), over MiniLM's public WordPiece vocabulary; results say which in
`init`.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

import numpy as np

from synbench.core.base import FitReport, Generator
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError
from synbench.core.privacy import PrivacySpec
from synbench.dp import label_sets
from synbench.dp.job import DPSGD_DETAILS, JobBudget
from synbench.dp.module import DPSGDModule, fit_module
from synbench.dp.poisson import PoissonPlan
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

log = logging.getLogger(__name__)


class DPDiffusionGenerator(Generator):
    options = DPDiffusionOptions
    public_details = DPSGD_DETAILS | frozenset(
        {
            "denoiser",
            "init",
            "tokenizer",
            "max_seq_len",
            "noise_draws",
            "t_min",
            # statistics of the synthetic text (a DP output); nothing is filtered
            "sample_steps",
            "sample_length",
            "temperature",
            "generated_tokens",
            "generate_s",
            "generate_tokens_per_s",
        }
    )

    def __init__(self, **settings: Any) -> None:
        try:
            self.settings = DPDiffusionOptions(**settings)
        except TypeError as exc:
            raise ConfigError(
                f"generator 'dpdiffusion': {exc}; see conf/generator/dpdiffusion.yaml for its keys"
            ) from None
        self._model: Denoiser | PretrainedDenoiser | None = None
        self._corpus: Corpus | None = None
        self._labels: label_sets.LabelSetRelease | None = None
        self._seed = 0
        self._sampling: dict[str, Any] = {}

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        import pytorch_lightning as pl

        s = self.settings
        s.begin_fit(privacy)
        tokenizer = public_tokenizer()
        dataset = SequenceDataset(corpus, tokenizer, s.max_seq_len)
        budget = JobBudget.plan(s, corpus, PoissonPlan(len(dataset), s.batch_size, s.epochs), privacy)
        released = budget.release_labels(corpus, privacy)
        pl.seed_everything(seed, verbose=False)  # weight init; no privacy mechanism reads the global RNG
        device = s.device()
        model = self._denoiser(tokenizer, len(corpus.label_space)).to(device)
        loss = MaskedDiffusionLoss(
            tokenizer.mask_token_id,
            s.max_seq_len,
            len(corpus.label_space),
            t_min=s.t_min,
            draws=s.noise_draws,
            noise=privacy.noise,
        )
        module = DPSGDModule(model, dataset, collate, s.train_config(privacy, budget.noise_multiplier(privacy)), loss)
        train_s = fit_module(module, **s.trainer_kwargs(device))
        eps_spent = budget.spent(privacy, module.privacy_engine, "dpdiffusion")
        self._model, self._corpus, self._labels, self._seed = model, corpus, released, seed
        details = {
            "epsilon_spent": eps_spent,
            "delta": privacy.delta,
            "accountant": privacy.accountant,
            **budget.details(),
            "steps": module.steps_taken(),
            "epochs": s.epochs,
            "expected_batch_size": s.batch_size,
            **released.details(),
            "grad_sample_mode": s.grad_sample_mode,
            "trainable_params": parameter_count(model),
            "n_train_docs": len(dataset),
            "train_s": round(train_s, 3),
            "noise": privacy.noise.mode,
            "secure_mode": privacy.noise.secure_mode,
            "denoiser": model.describe(),
            "init": s.init,
            "tokenizer": "all-MiniLM-L6-v2 WordPiece (public)",
            "max_seq_len": s.max_seq_len,
            "noise_draws": s.noise_draws,
            "t_min": s.t_min,
        }
        private_stats = {
            "train_loss": module.train_loss,
            "batch_size": module.batch_sizes,
            "train_tokens": module.tokens_seen,
        }
        return FitReport(epsilon_spent=eps_spent, delta=privacy.delta, details=details, private_stats=private_stats)

    def _denoiser(self, tokenizer: Any, n_labels: int) -> Denoiser | PretrainedDenoiser:
        s = self.settings
        if s.init == "pretrained":
            return pretrained_denoiser(tokenizer, n_labels, s)
        return Denoiser(
            DenoiserConfig(
                vocab_size=len(tokenizer),
                n_labels=n_labels,
                max_len=s.max_seq_len,
                d_model=s.d_model,
                n_layers=s.n_layers,
                n_heads=s.n_heads,
                d_ff=s.d_ff,
            )
        )

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """`n` documents (empty and degenerate ones kept); their statistics are `sampling_details()`."""
        if self._model is None or self._corpus is None or self._labels is None:
            raise ConfigError("generator 'dpdiffusion': sample() called before fit()")
        s, corpus = self.settings, self._corpus
        plan = label_sets.plan(
            n, self._labels, corpus.label_space, corpus.multi_label, np.random.default_rng(self._seed), label_counts
        )
        texts, stats = generate(
            self._model,
            public_tokenizer(),
            plan,
            corpus.label_space,
            seq_len=s.max_seq_len,
            steps=s.sample_steps,
            temperature=s.temperature,
            batch_size=s.sample_batch_size,
            seed=self._seed,
            end_mark=s.sample_length == "model",
        )
        self._sampling = {**stats, "sample_length": s.sample_length, "temperature": s.temperature}
        return Corpus.synthetic("dpdiffusion", texts, plan, corpus.label_space, corpus.multi_label)

    def sampling_details(self) -> Mapping[str, Any]:
        return dict(self._sampling)
