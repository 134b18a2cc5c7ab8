"""The public reader of a sweep's results: `synbench.results.load(sweep)`, one pandas row per job.

The results writer and the rest of the job's record live in the internal `synbench.job.results`; this module is
the one name of it that users' notebooks and scripts import (docs/results.md).
"""

from synbench.job.results import load

__all__ = ["load"]
