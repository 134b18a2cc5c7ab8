"""DP-Gen: DP-SGD fine-tuning of a causal LM, then label-conditioned sampling (see `generator`)."""

from typing import Any

__all__ = ["DPGenGenerator"]


def __getattr__(name: str) -> Any:
    """`DPGenGenerator` on first use (PEP 562): the schema imports `settings` from this package without torch."""
    if name == "DPGenGenerator":
        from synbench.generators.dpgen.generator import DPGenGenerator

        return DPGenGenerator
    raise AttributeError(name)
