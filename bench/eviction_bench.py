#!/usr/bin/env python3
"""Eviction benchmark (issue 24): a large synthetic cache evicted to half its size, and the
warm-fetch cost of recording uses.

  * kh_eviction_bench builds a cache of 100 repos x 10 commits x 10 variants x 10 small
    files (10,000 variant folders, 100,000 blobs) and evicts it down to half its size by
    least recent use: the dry-run plan's seconds, the eviction's seconds and files removed
    per second (links and blobs).
  * Two kernelhubd on one `kernelhub serve`, one recording uses (the default), one with
    --no-record-usage: kh_daemon_loadgen's warm-fetch p50 (1 client, connection kept) on
    each, in alternating rounds of the same run, and their ratio.

Goals: the eviction to half within the bound the scale test asserts (tests/cache/
eviction_scale_test.cpp); warm-fetch p50 with usage recorded within 5 % of without.

Run with the project venv:  .venv/bin/python bench/eviction_bench.py   (see bench/README.md)
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daemon_bench import REPO_ROOT, Daemon, loadgen, log, start_serve, stop_all  # noqa: E402


def eviction_run(args, work: Path) -> dict:
    shape = (["10", "2", "5", "2"] if args.smoke else
             [str(args.repos), str(args.commits), str(args.variants), str(args.files)])
    out = subprocess.run([str(args.build / "bin" / "kh_eviction_bench"), str(work / "synthetic"),
                          *shape, "0.5"], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"kh_eviction_bench failed: {out.stderr}")
    return json.loads(out.stdout)


def warm_p50(args, endpoint: str, work: Path, variant: str) -> tuple:
    on = Daemon(args.build / "bin" / "kernelhubd", work, "recording", endpoint)
    off = Daemon(args.build / "bin" / "kernelhubd", work, "not-recording", endpoint,
                 ["--no-record-usage"])
    try:
        for daemon in (on, off):
            loadgen(args, daemon, 1, 0, variant)  # the cold fetch
        samples = {"on": [], "off": []}
        for _ in range(args.rounds):  # alternating: drift on the machine hits both alike
            for name, daemon in (("on", on), ("off", off)):
                samples[name].append(loadgen(args, daemon, 1, args.seconds, variant, reuse=True)["p50_us"])
        return statistics.median(samples["on"]), statistics.median(samples["off"])
    finally:
        on.stop()
        off.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", type=Path, default=REPO_ROOT / "build")
    p.add_argument("--repos", type=int, default=100)
    p.add_argument("--commits", type=int, default=10)
    p.add_argument("--variants", type=int, default=10)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--seconds", type=float, default=2.0, help="duration of each warm round")
    p.add_argument("--rounds", type=int, default=5, help="alternating warm rounds per daemon")
    p.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    p.add_argument("--smoke", action="store_true", help="a tiny cache and 0.2 s rounds (ctest)")
    args = p.parse_args()
    if args.smoke:
        args.seconds, args.rounds = 0.2, 1
    args.loadgen = args.build / "bin" / "kh_daemon_loadgen"
    variant = (args.build / "fixtures" / "variant.txt").read_text().strip()
    work = Path(tempfile.mkdtemp(prefix="kh-eviction-bench-"))
    procs = []
    try:
        log("building the synthetic cache and evicting it to half")
        ev = eviction_run(args, work)
        serve, endpoint = start_serve(args.build / "bin", args.build / "fixtures" / "hub", work)
        procs.append(serve)
        log("warm fetches with and without usage recording")
        on, off = warm_p50(args, endpoint, work, variant)
    finally:
        stop_all(procs, work)
    ratio = on / off
    print(f"Synthetic cache: {ev['variants']} variant folders, {ev['blobs']} blobs, "
          f"{ev['bytes'] / 1e6:.1f} MB; built in {ev['build_s']:.1f} s\n")
    print("| what | figure |\n|---|---|")
    print(f"| plan (dry run: scan and choose) | {ev['plan_s']:.2f} s |")
    print(f"| evict to half | {ev['evict_s']:.2f} s: {ev['evicted_variants']} variants, "
          f"{ev['removed_blobs']} blobs, {ev['removed_snapshots']} snapshots; "
          f"{ev['files_per_s']:.0f} files/s; within bounds: {ev['within_bounds']} |")
    print(f"| warm fetch p50, usage recorded | {on:.1f} us |")
    print(f"| warm fetch p50, --no-record-usage | {off:.1f} us |")
    print(f"| ratio recorded / not | {ratio:.3f} (goal <= 1.05) |")
    goals = {"within bounds after eviction": ev["within_bounds"], "usage recording within 5 %": ratio <= 1.05}
    for goal, met in goals.items():
        print(f"goal {goal}: {'met' if met else 'MISSED'}")
    return 1 if args.check and not all(goals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
