"""The schema of `filter=pyes_pno` (conf/filter/pyes_pno.yaml sets only what differs), importable without torch.

Hydra's ConfigStore registers it when it first reads the configs, so every
`filter.*` value is typed on merge; the checks a type cannot express are in
`__post_init__`, one place per setting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Tuple

from omegaconf import MISSING

from synbench.core.errors import ConfigError
from synbench.lm.settings import check_num_threads, check_prompt

ANSWERS = ("yes_answers", "no_answers")
PLACEHOLDERS = ("text", "domain", "label")  # what the prompt is formatted with; {text} is required


@dataclass(frozen=True)
class PYesPNoOptions:
    """`filter=pyes_pno`: keep the top `keep_share` of synthetic documents by P(yes) - P(no) under the public LM."""

    model: Any = MISSING  # the `model` group's node (the YAML wires `${model}`)
    keep_share: float = 0.5  # share of synthetic documents kept
    per_label: bool = True  # keep the top share within each label set (the released label distribution is unchanged)
    domain: Optional[str] = None  # the dataset's domain word (medical, financial, ...): what "realistic" means
    prompt: str = "{text}\n\nIs this a realistic {domain} document about {label}? Answer yes or no."
    batch_size: int = 16
    max_length: int = 384  # prompt tokens (cut from the left: the question at the end is kept)
    num_threads: Optional[int] = 1  # torch CPU threads while scoring; null = PyTorch's default
    # answer spellings summed into P(yes) and P(no) (only those that are one token count)
    yes_answers: Tuple[str, ...] = field(default=("Yes", "yes", " Yes", " yes"))
    no_answers: Tuple[str, ...] = field(default=("No", "no", " No", " no"))

    def __post_init__(self) -> None:
        for key in ANSWERS:  # the schema gives lists: kept as tuples, so a built config is immutable
            object.__setattr__(self, key, tuple(getattr(self, key)))
        if not 0 < self.keep_share <= 1:
            raise ConfigError(f"filter.keep_share={self.keep_share} must lie in (0, 1]")
        check_num_threads(self.num_threads, "filter.num_threads")
        if not self.domain and "{domain}" in self.prompt:
            raise ConfigError(
                "filter.domain is not set: the filter's prompt asks whether a document is a realistic one of "
                "the dataset's domain; add `domain: <medical|financial|legal|...>` to the dataset's config "
                "(conf/dataset/<name>.yaml), or pass dataset.domain=<word> or filter.domain=<word>"
            )
        check_prompt(self.prompt, "filter.prompt", PLACEHOLDERS, "text")
        if self.batch_size < 1 or self.max_length < 8:
            raise ConfigError("filter.batch_size must be >= 1 and filter.max_length >= 8")
