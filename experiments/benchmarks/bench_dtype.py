"""bf16 against float32 on this machine's CPU: why the grid's dtypes are `bfloat16_if_native`.

One torch thread, the matmul shapes of SmolLM2-135M's MLP at the grid's sampling batch (128 rows of 576 against
576 x 1536), each dtype timed REPEATS times after a warm-up, the smallest kept; and `native_bf16`, oneDNN's own
check (AVX512-BF16 or AMX), which `bfloat16_if_native` / `bf16-mixed-if-native` follow. On a CPU without native bf16
PyTorch emulates it, and the ratio says by how much. Run: `make bench BENCH=dtype`.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from synbench.lm.models import native_bf16

ROWS, WIDTH, HIDDEN, CALLS, REPEATS = 128, 576, 1536, 20, 3


def matmul_ms(dtype: torch.dtype) -> float:
    """Milliseconds per (ROWS x WIDTH) @ (WIDTH x HIDDEN) product in `dtype`, the least disturbed of REPEATS."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(ROWS, WIDTH, generator=generator).to(dtype)
    b = torch.randn(WIDTH, HIDDEN, generator=generator).to(dtype)
    a @ b  # warm-up: oneDNN picks its kernel
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(CALLS):
            a @ b
        best = min(best, (time.perf_counter() - start) / CALLS)
    return best * 1000


def main() -> dict[str, Any]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        fp32, bf16 = matmul_ms(torch.float32), matmul_ms(torch.bfloat16)
    finally:
        torch.set_num_threads(before)
    return {
        "native_bf16_cpu": native_bf16(torch.device("cpu")),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "shape": f"{ROWS}x{WIDTH} @ {WIDTH}x{HIDDEN}",
        "float32_ms": round(fp32, 3),
        "bfloat16_ms": round(bf16, 3),
        "bfloat16_over_float32": round(bf16 / fp32, 2),
    }
