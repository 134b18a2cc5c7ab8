"""DP-Gen: DP-SGD fine-tuning of a causal LM, then label-conditioned sampling (see `generator`)."""

from synbench.core.exports import lazy_exports

# the generator on first use: the schema imports `settings` from this package without torch
__all__ = ["DPGenGenerator"]
__getattr__ = lazy_exports(__name__, {"DPGenGenerator": "synbench.generators.dpgen.generator"})
