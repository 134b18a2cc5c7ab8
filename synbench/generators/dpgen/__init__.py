"""DP-Gen: DP-SGD fine-tuning of a causal LM, then label-conditioned sampling (see `generator`)."""

from synbench.generators.dpgen.generator import DPGenGenerator

__all__ = ["DPGenGenerator"]
