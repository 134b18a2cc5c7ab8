"""AUG-PE's options (`generator=augpe`): the schema of its `generator.*` keys, importable without torch.

The defaults are the library's; conf/generator/augpe.yaml sets the demo's
sizes and wires the `model`, `encoder` and `generator/backend` groups in,
conf/paper_generator/augpe.yaml the paper's. The checks a type cannot express
are in `__post_init__`, one place per key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from synbench.core.errors import ConfigError
from synbench.dp.label_sets import PRIORS, LabelSetOptions
from synbench.generators.augpe.evolution import SELECTIONS

AUTO = "auto"
DEFAULT_POPULATION = 30  # population: auto outside a run that says how many documents it samples
FILLS = ("vary", "replace")
VARIATION_KINDS = ("rephrase", "fill_blanks")


@dataclass(frozen=True)
class AugPEOptions:
    """Every `generator.*` key of AUG-PE (conf/generator/augpe.yaml explains each)."""

    model: Any = None  # the local LM (the `model` group), used by generator/backend=local
    encoder: Any = None  # the sentence encoder the votes are on (the `encoder` group), or an object with embed()
    prompts: Any = "default"  # a name under conf/prompts/augpe/, a YAML path, or a prompt mapping
    backend: Any = None  # the generator/backend group's node (null = local), or an LMBackend object
    iterations: int = 2  # T: vote rounds, each one Gaussian mechanism of sensitivity 1
    variations: int = 3  # L: each survivor plus L-1 variations make the next population
    # N_c summed over classes; auto = the number of documents the run samples (expect_samples), so the release is
    # the last vote's survivors and sample() writes nothing unvoted (DEFAULT_POPULATION when no run says)
    population: int | str = AUTO
    selection: str = "rank"  # rank = keep the top N_c by noisy votes | sample = draw N_c by noisy votes
    threshold: float = 0.0  # H: noisy counts become max(count - H, 0)
    lookahead: int = 0  # candidates vote through the mean embedding of this many variations (0 = none)
    blank_share: float = 0.5  # fill_blanks variations blank this share of the parent's words
    length_jitter: float = 0.3  # target words drawn uniformly in [1 -/+ jitter] x the parent's word count
    variation_kinds: Dict[str, float] = field(default_factory=lambda: {"rephrase": 0.5, "fill_blanks": 0.5})
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 0.95
    fill: str = "vary"  # sample(n) beyond the evolved population: vary = more variations | replace = repeats
    # dp = the DP label-set plan, in the same GDP ledger | uniform = the public prior, no budget (single-label data
    # only) | auto = uniform on single-label data (minority classes get as many parents as the majority), dp on
    # multi-label data (as DP-Gen's label_prior: auto)
    label_prior: str = AUTO
    label_mu_share: Optional[float] = None  # null = the votes' sigma; s in (0,1) = its own sigma, s of mu^2
    label_sets: LabelSetOptions = field(default_factory=LabelSetOptions)
    min_words: int = 5
    embed_max_tokens: int = 256  # private documents and candidates are embedded from their first this many tokens

    def __post_init__(self) -> None:
        for key in ("iterations", "variations", "max_new_tokens", "embed_max_tokens"):
            if getattr(self, key) < 1:
                raise ConfigError(f"generator.{key}={getattr(self, key)} must be at least 1")
        if self.lookahead < 0:
            raise ConfigError(f"generator.lookahead={self.lookahead} must be at least 0")
        if self.population != AUTO and (isinstance(self.population, str) or self.population < 1):
            raise ConfigError(f"generator.population={self.population!r} must be auto or at least 1")
        if self.selection not in SELECTIONS:
            raise ConfigError(
                f"generator.selection={self.selection!r} is unknown; choose one of {', '.join(SELECTIONS)}"
            )
        if self.fill not in FILLS or self.label_prior not in PRIORS:
            raise ConfigError(f"generator.fill must be one of {FILLS} and generator.label_prior one of {PRIORS}")
        if not 0.0 <= self.blank_share < 1.0 or not 0.0 <= self.length_jitter < 1.0 or self.threshold < 0:
            raise ConfigError("generator.blank_share and length_jitter must lie in [0, 1), threshold at least 0")
        kinds = self.variation_kinds
        if set(kinds) - set(VARIATION_KINDS) or not sum(kinds.values()) > 0 or min(kinds.values()) < 0:
            raise ConfigError(f"generator.variation_kinds takes non-negative weights for {', '.join(VARIATION_KINDS)}")
