"""`entities`: how far the named entities of synthetic text are from those of real text.

Definitions. spaCy NER (`model`, default the offline `en_core_web_sm`; a
scispaCy model where installed) finds the entities of every document. An
entity is the pair (label, string) with the string lower-cased and its
whitespace collapsed. Over a corpus, count the outcomes

- entity strings: every (label, string) mention, and
- entity labels (PERSON, ORG, DATE, ...): every mention's label,

where a document with no entity at all contributes one outcome NONE instead.
Without NONE, smoothing would turn a corpus with no entities (an empty or
collapsed generator) into a uniform distribution close to any real one.

`fidelity.entity_div` is the add-alpha smoothed Jensen–Shannon divergence in
bits (`common.js_divergence`, union support of both corpora) between the real
and synthetic entity-string counts; `fidelity.entity_label_div` the same
between the label counts, the coarser test (the right kinds of entity rather
than the right entities). Both are 0 for identical distributions and at most
1. The real side is eval half B, against the synthetic sample or (`_ref`)
half A (`common.FidelityMetric`). Mentions per document are reported too.

`fidelity.entity_div_paper` is the same comparison of entity-string counts on
the SynBench paper's scale (Table 2: real-vs-real "below 2.2"): KL(real ||
synthetic) in nats of the same smoothed distributions (`common.kl_divergence`,
whose docstring gives the reasoning: the authors' definition is unpublished).
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from synbench.core.base import MetricContext
from synbench.metrics.common import TextFidelityMetric, counter_js, counter_kl, per_text, smoothing
from synbench.text.nlp import load_spacy

Entity = tuple[str, str]
NER_COMPONENT = "ner"
NONE: Entity = ("NONE", "")  # the outcome of a document without entities


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


class EntitiesMetric(TextFidelityMetric):
    higher_is_better = {"entity_div": False, "entity_label_div": False, "entity_div_paper": False}

    def __init__(self, model: str = "en_core_web_sm", alpha: float = 0.5, batch_size: int = 64) -> None:
        self.model = model
        self.alpha = smoothing(alpha)
        self.batch_size = int(batch_size)

    def _extract(self, texts: list[str]) -> list[tuple[Entity, ...]]:
        """Entities of each text with one batched `nlp.pipe`, running only NER and what NER listens to."""
        nlp = load_spacy(self.model)
        needed = {NER_COMPONENT} | {
            name for name, pipe in nlp.pipeline if NER_COMPONENT in (getattr(pipe, "listening_components", None) or [])
        }
        disable = [name for name in nlp.pipe_names if name not in needed]
        return [
            tuple((ent.label_, _normalise(ent.text)) for ent in doc.ents)
            for doc in nlp.pipe(texts, batch_size=self.batch_size, disable=disable)
        ]

    def features(self, texts: Sequence[str], ctx: MetricContext) -> list[tuple[Entity, ...]]:
        return per_text(ctx, f"entities:{self.model}", texts, self._extract)

    def compare(
        self, real: Sequence[tuple[Entity, ...]], synthetic: Sequence[tuple[Entity, ...]], ctx: MetricContext
    ) -> dict[str, float]:
        def outcomes(docs: Sequence[tuple[Entity, ...]]) -> Counter[Entity]:
            return Counter(e for doc in docs for e in (doc or (NONE,)))

        def labels(mentions: Counter[Entity]) -> Counter[str]:
            out: Counter[str] = Counter()
            for (label, _), count in mentions.items():
                out[label] += count
            return out

        real_counts, syn_counts = outcomes(real), outcomes(synthetic)
        return {
            "entity_div": counter_js(real_counts, syn_counts, self.alpha),
            "entity_label_div": counter_js(labels(real_counts), labels(syn_counts), self.alpha),
            "entity_div_paper": counter_kl(real_counts, syn_counts, self.alpha),
        }

    def describe(self, real: Sequence[tuple[Entity, ...]], synthetic: Sequence[tuple[Entity, ...]]) -> dict[str, float]:
        return {
            "entities_per_doc_real": sum(map(len, real)) / max(len(real), 1),
            "entities_per_doc_syn": sum(map(len, synthetic)) / max(len(synthetic), 1),
        }
