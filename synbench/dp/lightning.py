"""A Lightning Trainer built and fitted without the console lines that say nothing about a job.

Lightning logs on rank zero, at INFO, which accelerators it found, a
"💡 Tip" advertising its cloud products and why a fit stopped; a job's own
log says what ran, so that logger is kept at WARNING (Lightning's warnings
still show). Inside a fit, two warnings say nothing about the job either:
torch's deprecation of the pytree class Lightning itself uses, and torch's
note that a full backward hook fires where no input requires grad (the
frozen layers below the trained ones; Opacus's per-sample hooks read output
gradients, never input ones). Those two are ignored by their message, in the
fit only; every other warning shows.
"""

from __future__ import annotations

import logging
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

import pytorch_lightning as pl

RANK_ZERO_LOGGER = "pytorch_lightning.utilities.rank_zero"
FIT_NOISE = (
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",
    r"Full backward hook is firing when gradients are computed with respect to module outputs",
)


def quiet_trainer(**options: Any) -> pl.Trainer:
    """`pl.Trainer(**options)`, with Lightning's rank-zero INFO lines (devices, tips, why a fit stopped) silenced."""
    logging.getLogger(RANK_ZERO_LOGGER).setLevel(logging.WARNING)
    return pl.Trainer(**options)


@contextmanager
def quiet_fit() -> Iterator[None]:
    """Run a fit or predict with the two warnings of `FIT_NOISE` ignored, every other one shown."""
    with warnings.catch_warnings():
        for message in FIT_NOISE:
            warnings.filterwarnings("ignore", message=message)
        yield
