"""AUG-PE: Private Evolution of text through an LM API (Xie et al. 2024), with GDP accounting; see `generator`."""

from typing import Any

__all__ = ["AugPEGenerator"]


def __getattr__(name: str) -> Any:
    """`AugPEGenerator` on first use (PEP 562): the schema imports `settings` from this package without torch."""
    if name == "AugPEGenerator":
        from synbench.generators.augpe.generator import AugPEGenerator

        return AugPEGenerator
    raise AttributeError(name)
