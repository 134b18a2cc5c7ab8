"""Example third-party SynBench plugin: a differentially private unigram generator."""

from __future__ import annotations

__version__ = "0.1.0"
