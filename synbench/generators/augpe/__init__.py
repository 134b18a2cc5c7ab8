"""AUG-PE: Private Evolution of text through an LM API (Xie et al. 2024), with GDP accounting; see `generator`."""

from synbench.core.exports import lazy_exports

# the generator on first use: the schema imports `settings` from this package without torch
__all__ = ["AugPEGenerator"]
__getattr__ = lazy_exports(__name__, {"AugPEGenerator": "synbench.generators.augpe.generator"})
