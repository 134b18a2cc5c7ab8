"""DP-Diffusion: a masked discrete diffusion LM trained with DP-SGD on the shared core (see `generator`)."""

from synbench.generators.dpdiffusion.generator import DPDiffusionGenerator

__all__ = ["DPDiffusionGenerator"]
