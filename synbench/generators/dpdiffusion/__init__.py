"""DP-Diffusion: a masked discrete diffusion LM trained with DP-SGD on the shared core (see `generator`)."""

from synbench.core.exports import lazy_exports

# the generator on first use: the schema imports `settings` from this package without torch
__all__ = ["DPDiffusionGenerator"]
__getattr__ = lazy_exports(__name__, {"DPDiffusionGenerator": "synbench.generators.dpdiffusion.generator"})
