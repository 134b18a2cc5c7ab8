"""`generator=dpgen`: DP fine-tuning of a causal LM (Opacus DP-SGD in Lightning), then label-conditioned sampling.

Budget: one accountant history holds the whole job, the DP label-set plan
(`label_prior: dp`, its share set by `label_budget_share`, its mechanism in
`synbench.dp.label_sets`) and every DP-SGD step; see `accounting`.
`label_prior: uniform` spends nothing on labels.
`eps=inf` runs the same pipeline without DP and reports epsilon_spent = inf.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import torch

from synbench.core.base import FitReport, Generator
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError
from synbench.core.files import atomic_folder
from synbench.core.privacy import NoiseSource, PrivacySpec
from synbench.dp import label_sets
from synbench.dp.job import DPSGD_DETAILS, JobBudget
from synbench.dp.poisson import PoissonPlan
from synbench.generators.dpgen import weights
from synbench.generators.dpgen.data import Collator, DocumentDataset, control_code
from synbench.generators.dpgen.settings import DPGenOptions, DPGenTrainingOptions
from synbench.generators.dpgen.trunk import CachedCollator, CachedDocuments, decoder_span, trunk_states
from synbench.job.resume import resume_key
from synbench.lm.generation import generate, memory_batch_size
from synbench.lm.models import DTYPES, dtype_name, load_causal_lm

log = logging.getLogger(__name__)

# Settings that only change sampling: a checkpoint trained under other values of these is reused.
SAMPLING_KEYS = frozenset(
    {"temperature", "top_p", "top_k", "max_new_tokens", "sample_batch_size", "sample_dtype", "num_threads"}
)


class DPGenGenerator(Generator):
    options = DPGenOptions
    public_details = DPSGD_DETAILS | frozenset(
        {
            "fine_tuning",
            "cache_trunk",
            "loss_on",
            "resumed",
            "attn_implementation",
            "model_source",
            "checkpoint",
            "precision",
            "activation_checkpointing",
            "long_documents",
            "max_seq_len",
            "sample_batch_size_used",
            "physical_batch_size",
            # statistics of the synthetic text
            "generated_tokens",
            "generate_s",
            "generate_tokens_per_s",
            "max_new_tokens",
        }
    )

    def __init__(
        self, model: Mapping[str, Any], workdir: str | None, job_dir: str | None = None, **settings: Any
    ) -> None:
        try:
            self.settings = DPGenTrainingOptions(**settings)
        except TypeError as exc:
            raise ConfigError(f"generator 'dpgen': {exc}; see conf/generator/dpgen.yaml for its keys") from None
        self.model_node = dict(model)
        folder = workdir or job_dir  # job_dir: given by the core (GeneratorRun), not a config key
        self.checkpoint = Path(folder) / "dpgen" if folder else None
        self._model: Any = None
        self._tokenizer: Any = None
        self._corpus: Corpus | None = None
        self._labels: label_sets.LabelSetRelease | None = None
        self._seed = 0
        self._sampling: dict[str, Any] = {}

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        s = self.settings
        s.begin_fit(privacy)
        delta = privacy.delta
        train = self._train_docs(corpus, privacy.noise)
        trained_by = {k: v for k, v in asdict(s).items() if k not in SAMPLING_KEYS}
        # Keyed by a secret outside the job folder: a plain digest of the data in dpgen.json would be a membership test.
        key = resume_key(
            {
                "settings": trained_by,
                "model": self.model_node,
                "eps": privacy.epsilon,
                "delta": delta,
                "accountant": privacy.accountant,
                "seed": seed,
                "noise": asdict(privacy.noise),
            },
            corpus,
        )
        precision = s.precision_on(s.device())
        loaded = load_causal_lm(self.model_node, s.device(), half_precision=True if precision != "32-true" else None)
        torch.manual_seed(seed)  # LoRA's initial weights: from the seed, not from whatever ran before in this process
        model = weights.prepare_trainable(loaded.model, s.lora, s.checkpointing)
        state = weights.read_state(self.checkpoint) if self.checkpoint else None
        private_stats: dict[str, Any] = {}  # kept in memory only, never in the checkpoint
        if state is not None and state.get("resume_key") == key:
            log.info("dpgen: reusing the trained weights in %s (no re-training)", self.checkpoint)
            weights.load(self.checkpoint, model, s.lora is not None)  # type: ignore[arg-type]
            state["resumed"] = True
        else:
            state = self._train(model, loaded.tokenizer, corpus, train, privacy, delta, seed)
            private_stats = state.pop("private_stats")
            state.update(
                resume_key=key,
                resumed=False,
                attn_implementation=loaded.attn_implementation,
                model_source=loaded.source,
            )
            if self.checkpoint:
                weights.save(self.checkpoint, model, state, s.lora is not None)
        plain = model.merge_and_unload() if s.lora is not None else model  # plain weights sample faster
        self._model = plain.to(DTYPES[dtype_name(s.sample_dtype, s.device())])
        self._tokenizer, self._corpus, self._seed = loaded.tokenizer, corpus, seed
        self._labels = label_sets.LabelSetRelease.from_json(state["label_release"])
        eps_spent = float(state["epsilon_spent"])
        details = {k: v for k, v in state.items() if k not in ("resume_key", "label_release")}
        details["checkpoint"] = str(self.checkpoint) if self.checkpoint else None
        return FitReport(epsilon_spent=eps_spent, delta=delta, details=details, private_stats=private_stats)

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """`n` documents; their generation statistics are `sampling_details()`.

        Outputs are at most `min(max_new_tokens, max_seq_len)` tokens: beyond the
        training length the model has never seen a document go on, nor end.
        """
        if self._model is None or self._corpus is None or self._labels is None:
            raise ConfigError("generator 'dpgen': sample() called before fit()")
        s, corpus = self.settings, self._corpus
        plan = label_sets.plan(
            n, self._labels, corpus.label_space, corpus.multi_label, np.random.default_rng(self._seed), label_counts
        )
        limit = min(s.max_new_tokens, s.max_seq_len)
        # Control-code prompts in plan order: the plan is grouped by label set, so most batches need no padding.
        prompts = [control_code(labels, s.control_code) for labels in plan]
        longest = max((len(self._tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts), default=0)
        batch = memory_batch_size(
            self._model, longest + limit, s.sample_batch_size
        )  # long outputs: what the KV cache fits
        texts, stats = generate(
            self._model,
            self._tokenizer,
            prompts,
            batch_size=batch,
            max_new_tokens=limit,
            temperature=s.temperature,
            top_p=s.top_p,
            top_k=s.top_k,
            seed=self._seed,
            desc="dpgen sample",
        )
        self._sampling = {**stats.as_details(), "max_new_tokens": limit, "sample_batch_size_used": batch}
        return Corpus.synthetic("dpgen", texts, plan, corpus.label_space, corpus.multi_label)

    def sampling_details(self) -> Mapping[str, Any]:
        return dict(self._sampling)

    def save_model(self, folder: Path) -> Path:
        """The fitted model (LoRA merged, in `sample_dtype`) and its tokenizer as a local model folder that
        `model.pretrained=<folder>` loads; written beside `folder` and renamed into place, so a crash leaves no
        folder that looks complete.

        For a model trained without DP (planted contamination's "pretraining"):
        weights fitted under DP are a release only through what they generate.
        """
        if self._model is None:
            raise ConfigError("generator 'dpgen': save_model() called before fit()")
        with atomic_folder(folder) as partial:
            self._model.save_pretrained(partial)
            self._tokenizer.save_pretrained(partial)
        return folder

    def _train_docs(self, corpus: Corpus, noise: NoiseSource) -> Corpus:
        """The documents DP-SGD trains on: all, or a uniform subset of `max_train_docs` (a demo-size knob).

        The subset is drawn from the secret noise source: which documents were
        left out must not be computable from the published seed.
        """
        limit = self.settings.max_train_docs
        if limit is None or limit >= len(corpus):
            return corpus
        idx = np.sort(noise.numpy("dpgen_train_subset").choice(len(corpus), size=int(limit), replace=False))
        return corpus.subset(idx)

    @contextmanager
    def _trunk(
        self, model: Any, dataset: DocumentDataset, collator: Collator
    ) -> Iterator[tuple[DocumentDataset | CachedDocuments, Collator | CachedCollator]]:
        """The data and collator training reads: as given, or (`cache_trunk`) with each document's frozen-trunk
        states computed once, while the model runs only its adapted top layers."""
        if not self.settings.cache_trunk:
            yield dataset, collator
            return
        layers = int(model.config.num_hidden_layers)
        split = layers - len(weights.top_layers(model, (self.settings.lora or {}).get("top_layers")) or [])
        states = trunk_states(model, dataset, collator, split)
        hidden = next(model.parameters())
        with decoder_span(model, split, layers, final_norm=True):
            yield CachedDocuments(dataset, states), CachedCollator(collator, model.config.hidden_size, hidden.dtype)

    def _train(
        self, model: Any, tokenizer: Any, corpus: Corpus, train: Corpus, privacy: PrivacySpec, delta: float, seed: int
    ) -> dict[str, Any]:
        import pytorch_lightning as pl

        from synbench.dp.module import fit_module
        from synbench.generators.dpgen.module import DPGenModule

        s = self.settings
        pl.seed_everything(seed, verbose=False)  # weight init and dropout; no privacy mechanism reads the global RNG
        dataset = DocumentDataset(train, tokenizer, s)
        budget = JobBudget.plan(s, corpus, PoissonPlan(len(dataset), s.batch_size, s.epochs), privacy)
        released = budget.release_labels(corpus, privacy)
        collator = Collator(tokenizer.pad_token_id, s.loss_on, chunked=s.long_documents == "chunk")
        cfg = s.train_config(privacy, budget.noise_multiplier(privacy))
        with self._trunk(model, dataset, collator) as (data, collate):
            module = DPGenModule(model, data, collate, cfg)
            train_s = fit_module(module, **s.trainer_kwargs(next(model.parameters()).device))
        return {
            "epsilon_spent": budget.spent(privacy, module.privacy_engine, "dpgen"),
            "delta": delta,
            "accountant": privacy.accountant,
            **budget.details(),
            "steps": module.steps_taken(),
            "epochs": s.epochs,
            "expected_batch_size": s.batch_size,
            **released.details(),
            "label_release": released.to_json(),
            "fine_tuning": "lora" if s.lora is not None else "full",
            "cache_trunk": s.cache_trunk,
            "grad_sample_mode": s.grad_sample_mode,
            "precision": s.precision_on(s.device()),
            "activation_checkpointing": s.checkpointing,
            "physical_batch_size": s.physical_documents,
            "long_documents": s.long_documents,
            "max_seq_len": s.max_seq_len,
            "trainable_params": weights.trainable_count(model),
            "n_train_docs": len(dataset),
            "loss_on": s.loss_on,
            "train_s": round(train_s, 3),
            "noise": privacy.noise.mode,
            "secure_mode": privacy.noise.secure_mode,
            "private_stats": {
                "train_loss": module.train_loss,
                "batch_size": module.batch_sizes,
                "train_tokens": module.tokens_seen,
                "train_tokens_per_s": round(module.tokens_seen / max(train_s, 1e-9), 2),
            },
        }
