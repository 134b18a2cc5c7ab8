"""`InvisibleInkGenerator`: DP synthetic text by private decoding (InvisibleInk, arXiv 2507.02974).

No model is trained. `fit` releases the label plan, splits the private
documents of each label set into disjoint batches of about B (`batching`,
below: data-independent), and fixes the clip norm C that
makes the whole release meet the budget; `sample` writes each synthetic
document of a label set from the next unused batch of that set: per token,
the B private prompts (one reference each) and the public prompt (label and
domain only) go through the LM in one forward pass, and the token is drawn
with DClip + top-k+ + the exponential mechanism (`mechanism.py`), from the
job's secret noise stream (`privacy.noise`, stream `invisibleink_tokens`).

Accounting (`accounting.py`): every private document serves in at most
`passes` batches (disjoint within a pass: parallel composition), each of at
most T = `max_new_tokens` tokens of C^2/(2 B^2 tau^2)-zCDP, so it costs
passes * T * C^2/(2 B^2 tau^2); the DP label histogram (Gaussian, sensitivity 1)
adds gaussians/(2 sigma^2); the sum converts to (eps, delta - delta_select).
C is solved from the budget (as `invink` does), sigma from `label_rho_share`.
When a label set's batches are used up (or it has no private document), its
further documents come from the public prompt alone: a batch of empty
references, which reads no private data and costs nothing.

Batching (`batching`): `hashed`, the default, covers add/remove adjacency,
the one SynBench promises for every generator (and DP-SGD's Poisson sampling
and the audit's include/exclude design assume): a label set gets K = ceil(n_set / B)
batches, n_set its DP (noisy) count from the label plan, and each document
goes to batch hash(seed, pass, text) mod K, a function of that document
alone. Adding a document then adds one reference to one batch per pass; as
the scores divide by the fixed B whatever a batch holds, it moves each score
by at most C/B, the same bound, so the accounting is unchanged. A batch then
holds about B documents, not exactly B. `sequential` is the paper's and
`invink`'s, kept to replicate the paper: the documents of a label set, in a
seeded order, cut into consecutive batches of B. Its bound is for a document
replaced by the empty reference; adding or removing one shifts every later
batch boundary of its set, so it is not DP under add/remove adjacency.
Results say which guarantee a run has: `"adjacency": "add_remove"` (hashed)
or `"replace"` (sequential).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Mapping

import numpy as np
import torch

from synbench.api import ConfigError, Corpus, FitReport, Generator, Labels, PrivacySpec
from synbench.api import label_sets as lsets
from synbench.api.lm import chat_prompt, load_prompts, load_shared, torch_threads
from synbench_invisibleink import accounting
from synbench_invisibleink.decoding import DecodeStats, Mechanism, Request, decode

LABEL_PRIORS = ("dp", "uniform")
BATCHINGS = ("hashed", "sequential")
# The neighbouring relation each batching's bound holds under, reported in results as `adjacency`.
ADJACENCY = {"hashed": "add_remove", "sequential": "replace"}
PRIVATE_PROMPT = (
    'Here is a {label} {domain}:\n"{text}"\nWrite one more {label} {domain} in the same style. '
    "Reply with the text only."
)
PUBLIC_PROMPT = "Write one {label} {domain}. Reply with the text only."


class InvisibleInkGenerator(Generator):
    """InvisibleInk. Constructor keywords are the keys of conf/generator/invisibleink.yaml."""

    public_details = frozenset(
        {
            "clip",
            "batch_size",
            "passes",
            "temperature",
            "top_k",
            "max_new_tokens",
            "rho",
            "rho_text",
            "rho_labels",
            "rho_per_token",
            "delta_accounted",
            "model",
            "max_context_tokens",
            *lsets.PUBLIC_DETAILS,
            "batching",
            "adjacency",
            "sample_tokens",
            "sample_s",
            "sample_tokens_per_s",
            "topk_plus_mean",
            "expansion_share",
        }
    )

    def __init__(
        self,
        model: Mapping[str, Any],
        prompts: str | Mapping[str, Any] = "default",
        batch_size: int = 7,
        passes: int = 1,
        batching: str = "hashed",
        max_new_tokens: int = 48,
        temperature: float = 1.0,
        top_k: int = 50,
        max_context_tokens: int = 96,
        private_prompt: str = PRIVATE_PROMPT,
        public_prompt: str = PUBLIC_PROMPT,
        label_prior: str = "dp",
        label_rho_share: float = 0.1,
        label_sets: lsets.LabelSetOptions | None = None,  # typed on the schema by the core
        max_rows: int = 64,
        num_threads: int | None = None,
    ) -> None:
        if min(batch_size, passes, max_new_tokens, max_context_tokens, max_rows) < 1:
            raise ConfigError(
                "generator.batch_size, passes, max_new_tokens, max_context_tokens and max_rows must be at least 1"
            )
        if max_rows < batch_size + 1:
            raise ConfigError(f"generator.max_rows={max_rows} must hold one document's B+1={batch_size + 1} prompts")
        if temperature <= 0:
            raise ConfigError(f"generator.temperature={temperature} must be positive")
        if batching not in BATCHINGS:
            raise ConfigError(
                f"generator.batching={batching!r}: use one of {BATCHINGS} (hashed covers add/remove "
                "adjacency; sequential, the paper's, only replace-by-empty)"
            )
        if label_prior not in LABEL_PRIORS or not 0.0 < label_rho_share < 1.0:
            raise ConfigError(f"generator.label_prior must be one of {LABEL_PRIORS} and label_rho_share in (0, 1)")
        for name, template, fields in (
            ("private_prompt", private_prompt, ("{label}", "{text}")),
            ("public_prompt", public_prompt, ("{label}",)),
        ):
            if any(f not in template for f in fields) or (name == "public_prompt" and "{text}" in template):
                raise ConfigError(
                    f"generator.{name} must contain {' and '.join(fields)}"
                    + (" and no {text}" if name == "public_prompt" else "")
                )
        self.model = dict(model)
        self.prompts = load_prompts(prompts)  # the domain words and system turn, shared with AUG-PE's prompt files
        self.private_prompt, self.public_prompt = private_prompt, public_prompt
        self.batch_size, self.passes, self.max_new_tokens = int(batch_size), int(passes), int(max_new_tokens)
        self.batching = batching
        self.temperature, self.top_k, self.max_context_tokens = float(temperature), int(top_k), int(max_context_tokens)
        self.label_prior, self.label_rho_share = label_prior, float(label_rho_share)
        self.label_config = label_sets or lsets.LabelSetOptions()
        self.max_rows, self.num_threads = int(max_rows), num_threads
        self._state: dict[str, Any] | None = None
        self._last: DecodeStats | None = None

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        """Release the label plan, fix C from the budget, and cut the private documents into disjoint batches."""
        if len(corpus) == 0:
            raise ConfigError("generator 'invisibleink': the private corpus is empty")
        multi, space, delta = corpus.multi_label, corpus.label_space, privacy.delta
        dp_labels = self.label_prior == "dp"
        select = self.label_config.delta_select(delta, multi, privacy.is_private) if dp_labels else 0.0
        rho = accounting.zcdp_rho(privacy.epsilon, delta - select)
        gaussians = self.label_config.gaussians(multi)
        rho_labels = self.label_rho_share * rho if dp_labels else 0.0
        sigma = math.sqrt(gaussians / (2.0 * rho_labels)) if dp_labels and math.isfinite(rho) else 0.0
        # A hair under the remaining rho, so that rounding in the composition never reports an eps above the budget.
        clip = (
            accounting.clip_for(
                (rho - rho_labels) * (1 - 1e-9), self.max_new_tokens, self.batch_size, self.temperature, self.passes
            )
            if privacy.is_private
            else math.inf
        )
        budget = self.label_config.budget(sigma, delta, multi) if dp_labels else None
        released = lsets.release(corpus, budget, privacy.noise) if budget else lsets.uniform(space)
        rng = np.random.default_rng([seed, 12])  # batch order and label plan: data-independent choices, not noise
        self._state = {
            "space": space,
            "multi": multi,
            "released": released,
            "rng": rng,
            "clip": clip,
            "batches": self._batches(corpus, rng, released, seed),
            "used": {},
            "noise": privacy.noise.torch("invisibleink_tokens"),
        }
        rho_text = self.passes * self.max_new_tokens * accounting.token_rho(clip, self.batch_size, self.temperature)
        spent = accounting.gaussian_rho(sigma, gaussians) if dp_labels else 0.0
        eps = accounting.zcdp_epsilon(rho_text + spent, delta - select) if privacy.is_private else math.inf
        details = {
            "clip": clip if math.isfinite(clip) else None,
            "batch_size": self.batch_size,
            "passes": self.passes,
            "batching": self.batching,
            "adjacency": ADJACENCY[self.batching],
            "temperature": self.temperature,
            "top_k": self.top_k,
            "max_new_tokens": self.max_new_tokens,
            "max_context_tokens": self.max_context_tokens,
            "model": self.model.get("name"),
            "rho": _finite(rho_text + spent),
            "rho_text": _finite(rho_text),
            "rho_labels": _finite(spent),
            "rho_per_token": _finite(accounting.token_rho(clip, self.batch_size, self.temperature)),
            "delta_accounted": delta - select,
            **(budget.details() if budget else {}),
            **released.details(),
        }
        return FitReport(epsilon_spent=eps, delta=delta, details=details)

    def _batches(
        self, corpus: Corpus, rng: np.random.Generator, released: lsets.LabelSetRelease, seed: int
    ) -> dict[Labels, list[tuple[str, ...]]]:
        """Per label set: `passes` rounds of disjoint batches (`batching` says how documents are assigned)."""
        by_set: dict[Labels, list[str]] = {}
        for text, labels in zip(corpus.texts, lsets.label_sets(corpus)):
            by_set.setdefault(labels, []).append(text)
        if self.batching == "hashed":
            return self._hashed_batches(by_set, released, len(corpus), seed)
        out: dict[Labels, list[tuple[str, ...]]] = {}
        for labels, texts in by_set.items():
            rounds = []
            for _ in range(self.passes):
                order = rng.permutation(len(texts))
                rounds += [
                    tuple(texts[j] for j in order[i : i + self.batch_size])
                    for i in range(0, len(texts), self.batch_size)
                ]
            out[labels] = rounds
        return out

    def _hashed_batches(
        self, by_set: Mapping[Labels, list[str]], released: lsets.LabelSetRelease, n: int, seed: int
    ) -> dict[Labels, list[tuple[str, ...]]]:
        """K = ceil(released count / B) batches per released set, each document in batch hash(seed, pass, text) mod K.

        The count is the set's noisy weight (DP prior) or its share of the
        public private-set size (uniform prior); documents of sets the plan
        never writes are in no batch.
        """
        total = sum(released.weights)
        out: dict[Labels, list[tuple[str, ...]]] = {}
        for labels, weight in zip(released.sets, released.weights):
            expected = weight if released.prior == "dp" else n * weight / total
            k = math.ceil(max(expected, 0.0) / self.batch_size)
            texts = by_set.get(labels, [])
            if k == 0 or not texts:
                continue
            rounds: list[tuple[str, ...]] = []
            for p in range(self.passes):
                slots: list[list[str]] = [[] for _ in range(k)]
                for text in texts:
                    slots[_bucket(seed, p, text, k)].append(text)
                rounds += [tuple(slot) for slot in slots]
            out[labels] = rounds
        return out

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """`n` documents; each takes the next unused batch of its label set (none left: the public prompt alone)."""
        state = self._state
        if state is None:
            raise ConfigError("generator 'invisibleink': sample() called before fit()")
        space, position = state["space"], lsets.positions(state["space"])
        plan = [
            lsets.canonical(ls, position)
            for ls in lsets.plan(n, state["released"], space, state["multi"], state["rng"], label_counts)
        ]
        loaded = load_shared(json.dumps(self.model, sort_keys=True), "cuda" if torch.cuda.is_available() else "cpu")
        tok = loaded.tokenizer
        requests = [self._request(tok, labels, self._next_batch(labels)) for labels in plan]
        stop = [tok.eos_token_id] + [
            i
            for i in [tok.convert_tokens_to_ids("<|im_end|>")]
            if isinstance(i, int) and i not in (tok.unk_token_id, tok.eos_token_id)
        ]
        mechanism = Mechanism(state["clip"], self.batch_size, self.temperature, self.top_k, self.max_new_tokens)
        with torch_threads(self.num_threads):
            ids, self._last = decode(loaded.model, tok, requests, mechanism, state["noise"], stop, self.max_rows)
        texts = [t.strip() for t in tok.batch_decode(ids, skip_special_tokens=True)]
        return Corpus.build(
            texts,
            plan,
            space,
            ids=[f"syn-{i}" for i in range(n)],
            multi_label=state["multi"],
            name="invisibleink-synthetic",
        )

    def _next_batch(self, labels: Labels) -> tuple[str, ...]:
        assert self._state is not None
        batches, used = self._state["batches"].get(labels, []), self._state["used"]
        k = used.get(labels, 0)
        used[labels] = k + 1
        return batches[k] if k < len(batches) else ()

    def _request(self, tok: Any, labels: Labels, batch: tuple[str, ...]) -> Request:
        fields = {"label": ", ".join(labels), "domain": self.prompts.domain}
        private = tuple(
            chat_prompt(tok, self.private_prompt.format(text=self._truncate(tok, t), **fields), self.prompts.system)
            for t in batch
        )
        return Request(private, chat_prompt(tok, self.public_prompt.format(**fields), self.prompts.system))

    def _truncate(self, tok: Any, text: str) -> str:
        """The first `max_context_tokens` tokens of a private document (the prompt's length stays bounded)."""
        ids = tok(text, add_special_tokens=False)["input_ids"]
        return text if len(ids) <= self.max_context_tokens else tok.decode(ids[: self.max_context_tokens])

    def sampling_details(self) -> Mapping[str, Any]:
        """Counts of the last `sample`: tokens, time, top-k+ size, share of tokens from the expansion (DP output)."""
        s = self._last
        if s is None:
            return {}
        # Not the forward rows: how many documents had private batches depends on the private label counts.
        return {
            "sample_tokens": s.tokens,
            "sample_s": round(s.seconds, 3),
            "sample_tokens_per_s": round(s.tokens / max(s.seconds, 1e-9), 2),
            "topk_plus_mean": round(s.topk_plus_total / max(s.tokens, 1), 2),
            "expansion_share": round(s.expansion_tokens / max(s.tokens, 1), 4),
        }


def _bucket(seed: int, round_: int, text: str, k: int) -> int:
    """The batch of a document in round `round_`: a function of the document alone (and the public seed)."""
    digest = hashlib.blake2b(text.encode(), digest_size=8, key=f"{seed}/{round_}".encode()).digest()
    return int.from_bytes(digest, "big") % k


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
