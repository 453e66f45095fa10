#!/usr/bin/env python3
"""kernelhub's C++ flex against torch's eager flex_attention on CPU, in one run.

Times dense, causal and sliding-window-256 attention at 4096 tokens (fp32) through
kh_flex_sparsity (kernelhub) and through torch.nn.attention.flex_attention without
torch.compile (what a Python user gets on CPU without a compiler toolchain at run time),
block masks built beforehand in both, best of --repeats. Prints a markdown table: each
side's time, kernelhub/torch, and each side's ratio to its own dense case (issue 12's goals:
kernelhub causal <= 0.6x dense, window <= 0.15x). --compiled adds torch.compile(flex_attention)
(Inductor's C++ template; its first call per mask compiles, ~30 s, not timed). Needs
scripts/build.sh's binaries and the venv's torch.

  .venv/bin/python bench/flex_bench.py [--seq 4096] [--heads 4] [--head-dim 64] [--repeats 3]
                                       [--compiled]
"""
import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

ROOT = Path(__file__).resolve().parent.parent


def torch_times(seq, heads, head_dim, repeats, attend):
    q, k, v = (torch.randn(1, heads, seq, head_dim) for _ in range(3))
    masks = {
        "dense": None,
        "causal": create_block_mask(lambda b, h, qi, kv: qi >= kv, 1, heads, seq, seq,
                                    device="cpu"),
        "window": create_block_mask(lambda b, h, qi, kv: (qi >= kv) & (qi - kv < 256), 1, heads,
                                    seq, seq, device="cpu"),
    }
    times = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "called without torch.compile": that is the point
        for name, mask in masks.items():
            attend(q, k, v, block_mask=mask)  # warm-up (and compilation)
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                attend(q, k, v, block_mask=mask).sum().item()
                best = min(best, time.perf_counter() - start)
            times[name] = best * 1e3
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compiled", action="store_true",
                        help="also time torch.compile(flex_attention)")
    parser.add_argument("--bin-dir", type=Path, default=ROOT / "build" / "bin")
    parser.add_argument("--smoke", action="store_true",
                    help="a quick run that checks the benchmark works and prints its table, not "
                         "its figures (ctest bench.flex_smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.seq, args.repeats = 256, 1

    run = subprocess.run([str(args.bin_dir / "kh_flex_sparsity"), "--seq", str(args.seq),
                          "--heads", str(args.heads), "--head-dim", str(args.head_dim),
                          "--repeats", str(args.repeats), "--json"],
                         capture_output=True, text=True, check=True)
    ours = json.loads(run.stdout)
    theirs = torch_times(args.seq, args.heads, args.head_dim, args.repeats, flex_attention)
    compiled = (torch_times(args.seq, args.heads, args.head_dim, args.repeats,
                            torch.compile(flex_attention)) if args.compiled else None)
    densities = {"dense": 1.0, "causal": ours["causal_density"], "window": ours["window_density"]}
    print(f"S={args.seq}, H={args.heads}, D={args.head_dim}, fp32, CPU, "
          f"{torch.get_num_threads()} threads, best of {args.repeats}\n")
    print("| case | tiles computed | kernelhub ms | torch eager ms | kernelhub / torch "
          "| kernelhub vs its dense | torch vs its dense |"
          + (" torch.compile ms | kernelhub / compiled |" if compiled else ""))
    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if compiled else ""))
    for name in ("dense", "causal", "window"):
        mine = ours[f"{name}_ms"]
        print(f"| {name} | {densities[name]:.1%} | {mine:.1f} | {theirs[name]:.1f} "
              f"| {mine / theirs[name]:.2f}x | {mine / ours['dense_ms']:.3f}x "
              f"| {theirs[name] / theirs['dense']:.3f}x |"
              + (f" {compiled[name]:.1f} | {mine / compiled[name]:.2f}x |" if compiled else ""))
    ok = ours["causal_ms"] <= 0.6 * ours["dense_ms"] and ours["window_ms"] <= 0.15 * ours["dense_ms"]
    print("\ngoals (causal <= 0.6x, window <= 0.15x of kernelhub dense):",
          "met" if ok else "NOT met")
    return 0 if ok or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
