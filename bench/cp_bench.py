#!/usr/bin/env python3
"""Issue 12 benchmark: context-parallel attention on CPU ranks over Gloo vs one process.

Ring and Ulysses on 2 and 4 ranks (and 2x2 unified), each rank its own process of
kh_cp_bench holding 1/W of a (1, S, H, D) fp32 sequence, against one process computing
attention on the whole sequence. Each rank runs one intra-op thread: this VM has 2 cores, so
2 ranks use both and 4 ranks oversubscribe them 2x (what 4 ranks would gain on 4 cores is
not measured here); the single process is shown with 1 thread and with 2. Columns:
  ms/call      wall time of one attention call (the slowest rank's mean)
  comm ms      time blocked on communication per call (mean over ranks): waiting for
               sends/receives/all-to-alls, which includes waiting for a slower peer
  MB/rank      bytes each rank sent per call
  speed-up     vs the single process with 2 threads (all of the machine's cores)

Run with the project venv after a build:
  .venv/bin/python bench/cp_bench.py [--build build] [--seq 4096] [--heads 8] [--dim 64]
GPU hosts: scripts/gpu_cp_check.sh (NCCL, --device cuda).
"""
import argparse
import json
import socket
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(binary: Path, world: int, mode: str, args: argparse.Namespace, causal: bool, threads: int) -> list[dict]:
    port = free_port()
    common = ["--mode", mode, "--world", str(world), "--port", str(port), "--seq", str(args.seq),
              "--heads", str(args.heads), "--dim", str(args.dim), "--iters", str(args.iters),
              "--causal", str(int(causal)), "--threads", str(threads), "--device", args.device]
    procs = [subprocess.Popen([str(binary), "--rank", str(r), *common], stdout=subprocess.PIPE, text=True)
             for r in range(world)]
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            sys.exit(f"{mode} on {world} ranks failed (exit {proc.returncode})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(REPO_ROOT / "build"))
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--worlds", default="2,4", help="rank counts, comma-separated (empty: one process only)")
    parser.add_argument("--smoke", action="store_true",
                    help="a quick run that checks the benchmark works and prints its table, not "
                         "its figures (ctest bench.cp_smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.seq, args.iters, args.worlds = 256, 1, "2"
    binary = Path(args.build) / "bin" / ("kh_cp_bench_nccl" if args.device == "cuda" else "kh_cp_bench")
    worlds = [int(w) for w in args.worlds.split(",") if w]

    print(f"shape (1, {args.seq}, {args.heads}, {args.dim}) fp32 on {args.device}, native backend, "
          f"{args.iters} calls after a warm-up\n")
    print("| mode | ranks | causal | ms/call | comm ms/call | comm share | MB/rank/call | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for causal in (False, True):
        single = {}
        for threads in ((1,) if args.device == "cuda" else (1, 2)):
            r = run(binary, 1, "single", args, causal, threads)[0]
            single[threads] = r["seconds_per_call"]
            label = "1 process" + ("" if args.device == "cuda" else f", {threads} thread{'s' if threads > 1 else ''}")
            print(f"| {label} | 1 | {causal} | {1e3 * r['seconds_per_call']:.1f} | - | - | - | "
                  f"{single[1] / r['seconds_per_call'] if threads == 2 else 1.0:.2f}x |")
        base = single.get(2, single[1])
        for world in worlds:
            for mode in ("ring", "ulysses", "unified"):
                if mode == "unified" and world < 4:
                    continue
                rs = run(binary, world, mode, args, causal, 1)
                wall = max(r["seconds_per_call"] for r in rs)
                comm = sum(r["comm_seconds_per_call"] for r in rs) / len(rs)
                sent = sum(r["bytes_sent_per_call"] for r in rs) / len(rs)
                print(f"| {mode} | {world} | {causal} | {1e3 * wall:.1f} | {1e3 * comm:.1f} | "
                      f"{100 * comm / wall:.0f}% | {sent / 1e6:.2f} | {base / wall:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
