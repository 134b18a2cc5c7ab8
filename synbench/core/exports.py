"""Lazy package exports (PEP 562): a package names each public name's home module, and the name is imported from it
on first use. A package whose settings the config schema reads at every CLI start (`synbench.lm`,
`synbench.audit`, the generator families) thus does not import torch or scikit-learn with them."""

from __future__ import annotations

import sys
import warnings
from importlib import import_module
from typing import Any, Callable, Mapping

# public names that changed, old -> new: the option classes took the one suffix `Options` (SynBench 0.1 named some
# `Config` or `Settings`); the old name still imports, with a FutureWarning, so a published plugin keeps working
RENAMED = {"AuditConfig": "AuditOptions", "LabelSetConfig": "LabelSetOptions"}


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module-level `__getattr__` of `package`: each name of `homes` imported from its module (a full dotted
    name) when first asked for, a `RENAMED` old name as its new one (with a warning); any other name is an
    AttributeError, as for a plain module."""

    def __getattr__(name: str) -> Any:
        new = RENAMED.get(name)
        if new is not None and (new in homes or hasattr(sys.modules[package], new)):
            warnings.warn(f"{package}.{name} is now {package}.{new}; import that", FutureWarning, stacklevel=2)
            return getattr(sys.modules[package], new)
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(homes[name]), name)

    return __getattr__
