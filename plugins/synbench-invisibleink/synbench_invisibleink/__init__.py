"""SynBench plugin: InvisibleInk, differentially private decoding (Vinod, Pillutla & Thakurta, NeurIPS 2025)."""

from __future__ import annotations

__version__ = "0.1.0"
