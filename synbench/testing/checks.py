"""`ConformanceError`, the collector that gathers every broken contract of one plugin, and how a check starts.

A plugin author runs a kit check from their own test suite and wants to see,
in one run, every contract their plugin breaks and how to fix each, rather
than one failure per test run. So a check records failures as it goes and
raises one `ConformanceError` at the end; only a failure that makes the rest
meaningless (a `fit` that returns no `FitReport`, a plugin that raises) stops it
early.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, NoReturn, TypeVar

import numpy as np

from synbench.core.errors import PluginError

P = TypeVar("P")


@dataclass(frozen=True)
class Failure:
    """One broken contract: its short id, what the plugin did, and what to change."""

    contract: str
    problem: str
    fix: str


class ConformanceError(AssertionError):
    """A plugin breaks one or more contracts of the plugin API.

    An `AssertionError`, so pytest reports it as a test failure. The message
    names the plugin, each broken contract (`[budget-epsilon]`, ...) and its
    fix; `contracts` lists the ids, for tests that expect a given failure.
    """

    def __init__(self, kind: str, plugin: str, failures: list[Failure]) -> None:
        self.kind = kind
        self.plugin = plugin
        self.failures = tuple(failures)
        lines = [f"{kind} {plugin} breaks {len(failures)} contract(s) of the SynBench plugin API:"]
        for f in failures:
            lines += [f"  [{f.contract}] {f.problem}", f"      fix: {f.fix}"]
        super().__init__("\n".join(lines))

    @property
    def contracts(self) -> list[str]:
        return [f.contract for f in self.failures]


def describe(obj: object) -> str:
    """How messages name a plugin: its class and module (the author's own words for it)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__qualname__} ({cls.__module__})"


class Checks:
    """The failures found so far for one plugin; the first failure of each contract is kept."""

    def __init__(self, kind: str, plugin: str) -> None:
        self.kind = kind
        self.plugin = plugin
        self.failures: list[Failure] = []

    def fail(self, contract: str, problem: str, fix: str) -> None:
        """Record a broken contract and go on (a contract broken again later is not repeated)."""
        if contract not in {f.contract for f in self.failures}:
            self.failures.append(Failure(contract, problem, fix))

    def stop(self, contract: str, problem: str, fix: str, cause: BaseException | None = None) -> NoReturn:
        """Record a broken contract that leaves nothing further to check, and raise everything found so far."""
        self.fail(contract, problem, fix)
        raise ConformanceError(self.kind, self.plugin, self.failures) from cause

    def done(self) -> None:
        """Raise one `ConformanceError` naming every broken contract, if any."""
        if self.failures:
            raise ConformanceError(self.kind, self.plugin, self.failures)

    @contextmanager
    def running(self, contract: str, where: str) -> Iterator[None]:
        """Turn an exception of the plugin into a failure of `contract`, chained so pytest shows its traceback."""
        try:
            yield
        except ConformanceError:
            raise
        except Exception as exc:  # the plugin's own error, whatever it is
            self.stop(
                contract,
                f"{where} raised {type(exc).__name__}: {exc}",
                "see the traceback above this message (the plugin's exception is chained as its cause)",
                exc,
            )


def begin(kind: str, factory: Callable[[], P], base: type) -> tuple[P, Checks]:
    """The first plugin `factory()` builds and the collector for it, after the checks the registry makes on load.

    A plugin must subclass its kind's base, and its class passes the base's
    `check_plugin_class` (a generator's `public_details` a frozenset of names,
    a metric's `section` a results section): the registry refuses it otherwise.
    """
    first = factory()
    checks = Checks(kind, describe(first))
    if not isinstance(first, base):
        checks.stop(
            "subclass",
            f"factory() returned a {type(first).__name__}, not a synbench.core.base.{base.__name__}",
            f"subclass synbench.core.base.{base.__name__} and pass the class (or a function building a fresh instance)",
        )
    declared = getattr(type(first), "check_plugin_class", None)
    if declared is not None:
        try:
            declared(type(first).__name__)
        except PluginError as exc:
            checks.fail("declaration", str(exc), "fix the class attribute the message names")
    return first, checks


def checked_scores(out: object, n: int, checks: Checks, call: str, shape_fix: str, finite_fix: str) -> np.ndarray:
    """An attack's output as `n` finite float scores, or stop with the `scores` contract broken (an ROC needs them)."""
    if not isinstance(out, np.ndarray) or out.shape != (n,) or out.dtype.kind not in "fiu":
        checks.stop(
            "scores",
            f"{call} of {n} items returned {type(out).__name__} {getattr(out, 'shape', '')} "
            f"{getattr(out, 'dtype', '')}",
            f"return a 1-d numpy array of floats, {shape_fix}",
        )
    if not np.all(np.isfinite(out)):
        checks.stop(
            "scores",
            f"{call} returned {int(np.sum(~np.isfinite(out)))} non-finite score(s)",
            f"return finite scores ({finite_fix}): ROC thresholds need an order",
        )
    return out.astype(float)
