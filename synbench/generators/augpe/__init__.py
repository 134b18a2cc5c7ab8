"""AUG-PE: Private Evolution of text through an LM API (Xie et al. 2024), with GDP accounting; see `generator`."""

from synbench.generators.augpe.generator import AugPEGenerator

__all__ = ["AugPEGenerator"]
