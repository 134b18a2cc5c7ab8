"""DP-Diffusion: a masked discrete diffusion LM trained with DP-SGD on the shared core (see `generator`)."""

from typing import Any

__all__ = ["DPDiffusionGenerator"]


def __getattr__(name: str) -> Any:
    """`DPDiffusionGenerator` on first use (PEP 562): the schema imports `settings` from this package without torch."""
    if name == "DPDiffusionGenerator":
        from synbench.generators.dpdiffusion.generator import DPDiffusionGenerator

        return DPDiffusionGenerator
    raise AttributeError(name)
