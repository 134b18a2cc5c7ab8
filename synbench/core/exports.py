"""Lazy package exports (PEP 562): a package names each public name's home module, and the name is imported from it
on first use. A package whose settings the config schema reads at every CLI start (`synbench.lm`,
`synbench.audit`, the generator families) thus does not import torch or scikit-learn with them."""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable, Mapping


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module-level `__getattr__` of `package`: each name of `homes` imported from its module (a full dotted
    name) when first asked for; any other name is an AttributeError, as for a plain module."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(homes[name]), name)

    return __getattr__
