#!/usr/bin/env python3
"""Issue 4 benchmarks: dispatch overhead and kernel load time, against the anchors.

  * Dispatch overhead on tiny CPU shapes (1 x 8 x 2 x 16, fp32, one thread), ns per call:
    kernelhub's dispatch_attention vs calling ATen SDPA directly on the same (B,S,H,D)
    tensors (kh_attention_overhead), and, in the same run, Diffusers' dispatch_attention_fn
    (backend native) vs F.scaled_dot_product_attention on the same layout.
    Goal: kernelhub adds < 1 us per call.
  * Load time of a ~100 MB kernel .so (bench/big_kernel): open beneath the folder, sha256
    of every byte, ELF scan, dlopen, op lookup (kh_kernel_load, a fresh process per run),
    vs the hashing bound: the same bytes at `openssl speed -evp sha256` throughput.
    Goal: within 1.3x of the bound.

Run with the project venv after a build:
  .venv/bin/python bench/attention_bench.py [--build build]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def diffusers_overhead(iterations: int, rounds: int) -> dict:
    import torch
    import torch.nn.functional as F
    from diffusers.models.attention_dispatch import dispatch_attention_fn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 8, 2, 16) for _ in range(3))

    def direct():
        return F.scaled_dot_product_attention(
            q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
        ).permute(0, 2, 1, 3)

    def dispatched():
        return dispatch_attention_fn(q, k, v, backend="native")

    assert torch.allclose(direct(), dispatched(), atol=1e-6)
    for _ in range(2000):
        direct()
        dispatched()

    def per_call(fn):
        start = time.perf_counter_ns()
        for _ in range(iterations):
            fn()
        return (time.perf_counter_ns() - start) / iterations

    d, x, added = [], [], []
    for _ in range(rounds):  # interleaved pairs; the median of per-pair differences
        d.append(per_call(direct))
        x.append(per_call(dispatched))
        added.append(x[-1] - d[-1])
    return {"direct_ns": statistics.median(d), "dispatch_ns": statistics.median(x),
            "added_ns": statistics.median(added)}


def openssl_sha256_bytes_per_s() -> float:
    out = subprocess.run(
        ["openssl", "speed", "-seconds", "3", "-bytes", "1048576", "-evp", "sha256"],
        capture_output=True, text=True, check=True).stdout
    # Last line: "sha256   <bytes/s in k>k" -> the figure is in 1000s of bytes per second.
    line = [l for l in out.splitlines() if l.lower().startswith("sha256")][-1]
    return float(re.findall(r"([\d.]+)k", line)[-1]) * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.environ.get("KERNELHUB_BUILD_DIR", REPO_ROOT / "build"))
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--smoke", action="store_true",
                    help="a quick run that checks the benchmark works and prints its table, not "
                         "its figures (ctest bench.attention_smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.iterations, args.rounds, args.loads = 50, 3, 1
    build = Path(args.build)

    log("building the benchmark binaries and the ~100 MB kernel")
    subprocess.run(["cmake", "--build", str(build), "--target", "kh_attention_overhead",
                    "kh_kernel_load", "kh_bench_big_kernel"], check=True, stdout=subprocess.DEVNULL)

    log("dispatch overhead: kernelhub")
    env = dict(os.environ, DIFFUSERS_ATTN_BACKEND="native")
    ours = json.loads(subprocess.run(
        [str(build / "bin" / "kh_attention_overhead"), str(args.iterations), str(args.rounds)],
        capture_output=True, text=True, check=True, env=env).stdout)
    log("dispatch overhead: Diffusers")
    theirs = diffusers_overhead(args.iterations, args.rounds)

    log(f"kernel load: {args.loads} fresh processes")
    big = build / "bench" / "big-kernel"
    loads = []
    for _ in range(args.loads):
        loads.append(json.loads(subprocess.run(
            [str(build / "bin" / "kh_kernel_load"), str(big), "relu"],
            capture_output=True, text=True, check=True).stdout))
    total_s = statistics.median(l["total_ns"] for l in loads) / 1e9
    size = loads[0]["bytes"]
    rate = openssl_sha256_bytes_per_s()
    bound_s = size / rate

    ours_added = ours["added_ns"]
    theirs_added = theirs["added_ns"]
    print(f"\n## Dispatch overhead (1x8x2x16 fp32, CPU, 1 thread; medians of {args.rounds} interleaved rounds of {args.iterations} calls)\n")
    print("| | direct SDPA ns | dispatched ns | added ns |")
    print("|---|---|---|---|")
    print(f"| kernelhub dispatch_attention | {ours['direct_ns']:.0f} | {ours['dispatch_ns']:.0f} | {ours_added:.0f} |")
    print(f"| Diffusers dispatch_attention_fn | {theirs['direct_ns']:.0f} | {theirs['dispatch_ns']:.0f} | {theirs_added:.0f} |")
    ratio = theirs_added / ours_added if ours_added > 0 else float("inf")
    print(f"\nkernelhub adds {ours_added:.0f} ns per call (goal < 1000 ns); "
          f"Diffusers adds {theirs_added:.0f} ns ({ratio:.1f}x kernelhub's).")
    print("\n## Kernel load (verify + dlopen + op lookup)\n")
    print("| .so bytes | load s (median) | sha256 bound s | x bound |")
    print("|---|---|---|---|")
    print(f"| {size} | {total_s:.3f} | {bound_s:.3f} | {total_s / bound_s:.2f} |")
    print(f"\nopenssl speed -evp sha256 (1 MiB blocks): {rate / 1e6:.0f} MB/s; goal: within 1.3x.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
