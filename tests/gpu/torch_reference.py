"""torch's own fused attention kernels from Python at the shape kh_gpu_check times
(B=2, S=4096, H=24, D=128, bf16, (B, H, S, D) contiguous): the anchor its dispatcher rows
are read against. Writes a Markdown table (same columns as kh_gpu_check's) to --table.

    python3 tests/gpu/torch_reference.py --table torch.md
"""

import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

KERNELS = [
    ("_native_flash", [SDPBackend.FLASH_ATTENTION]),
    ("_native_cudnn", [SDPBackend.CUDNN_ATTENTION]),
    ("_native_efficient", [SDPBackend.EFFICIENT_ATTENTION]),
    ("native", None),  # SDPA's own choice
]


def ms_per_call(call, iterations=10, rounds=7):
    """Median over rounds of wall time per call, the queue drained at each round's end
    (the clock kh_gpu_check uses)."""
    for _ in range(3):
        call()
    times = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(iterations):
            call()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3 / iterations)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table", required=True)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_reference: no CUDA device", file=sys.stderr)
        return 2
    shape = (2, 24, 4096, 128)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    rows = []
    for name, backends in KERNELS:
        try:
            if backends is None:
                ms = ms_per_call(lambda: F.scaled_dot_product_attention(q, k, v))
            else:
                with sdpa_kernel(backends):
                    ms = ms_per_call(lambda: F.scaled_dot_product_attention(q, k, v))
            rows.append(f"| timing | torch {torch.__version__} Python SDPA as {name}, B2 S4096 "
                        f"H24 D128 bf16 |  | {ms:.3f} ms |")
        except RuntimeError as error:  # a kernel this GPU or build lacks
            rows.append(f"| timing | torch Python SDPA as {name} | n/a | "
                        f"{str(error).splitlines()[0]} |")
    with open(args.table, "w") as out:
        out.write("| section | check | result | detail |\n| --- | --- | --- | --- |\n")
        out.write("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
