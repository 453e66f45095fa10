#!/usr/bin/env python3
"""Bundle benchmark: one fixture kernel variant holding a ~200 MB .so (random padding, as in
download_bench.py), fetched once into a cache, then in one run and round-robin:

  * kernelhub bundle create   -- re-hash every blob from the cache into a .tar.zst,
  * tar --zstd -c             -- the same files (symlinks dereferenced), the anchor for create,
  * kernelhub bundle import   -- stream, verify (sha256, git ids, metadata digests), publish,
  * tar --zstd -x             -- extraction of the tar's files, the anchor for import,
  * zstd -d + sha256          -- decoding the bundle to /dev/null plus `openssl dgst -sha256`
                                 of its tar bytes, one after the other: the floor any
                                 verifying import pays on one core.

Prints the medians and the ratios. Goal (issue 9): import within 1.3x of zstd decode + sha256.

Run with the project venv:  .venv/bin/python bench/bundle_bench.py   (see bench/README.md)
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from download_bench import REPO_ID, Server, build_store, find_fixture_variant, log

REPO_ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str], env: dict, **kwargs) -> float:
    os.sync()  # nobody pays for another step's writeback
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, **kwargs)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelhub", type=Path, default=REPO_ROOT / "build" / "bin" / "kernelhub")
    ap.add_argument("--fixture-src", type=Path, default=REPO_ROOT / "build" / "fixtures" / "src")
    ap.add_argument("--size-mb", type=int, default=200, help="bytes added to the .so, in MiB")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workdir", type=Path, help="keep everything here instead of a temp dir")
    ap.add_argument("--check", action="store_true", help="exit 1 when the goal is missed")
    ap.add_argument("--smoke", action="store_true",
                    help="a quick run that checks the benchmark works and prints its table, not "
                         "its figures (ctest bench.bundle_smoke)")
    args = ap.parse_args()
    if args.smoke:
        args.size_mb, args.reps = 1, 1

    work = args.workdir or Path(tempfile.mkdtemp(prefix="kh-bundle-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    fixture = find_fixture_variant(args.fixture_src)
    log(f"padding {fixture.name} by {args.size_mb} MiB and publishing {REPO_ID} in {work}")
    commit, variant, sizes = build_store(args.kernelhub, fixture, args.size_mb, work)
    server = Server(args.kernelhub, work / "store", work)
    env = dict(os.environ, HF_ENDPOINT=server.endpoint, KERNELHUB_SOCKET=str(work / "none.sock"),
               HF_HUB_DISABLE_TELEMETRY="1")
    cache = work / "cache"
    fetch = [str(args.kernelhub), "download", REPO_ID, "--revision", commit, "--variant", variant,
             "--cache-dir", str(cache)]
    subprocess.run(fetch, env=env, check=True, capture_output=True)
    server.stop()  # create reads the cache: no Hub needed from here on
    variant_dir = cache / f"kernels--{REPO_ID.replace('/', '--')}" / "snapshots" / commit / "build" / variant
    content = sum(sizes.values())

    rows: dict[str, list[float]] = {k: [] for k in
                                    ("bundle create", "tar --zstd -c", "bundle import", "tar --zstd -x",
                                     "zstd -d + sha256")}
    bundle, tarball, raw = work / "b.tar.zst", work / "t.tar.zst", work / "b.tar"
    offline = dict(env, HF_HUB_OFFLINE="1")
    for rep in range(args.reps):
        for path in (bundle, tarball):
            path.unlink(missing_ok=True)
        rows["bundle create"].append(timed(
            [str(args.kernelhub), "bundle", "create", str(bundle), REPO_ID, "--revision", commit,
             "--variant", variant, "--cache-dir", str(cache)], offline))
        rows["tar --zstd -c"].append(timed(
            ["tar", "--zstd", "-chf", str(tarball), "-C", str(variant_dir), "."], env))
        target = work / f"import-{rep}"
        shutil.rmtree(target, ignore_errors=True)
        rows["bundle import"].append(timed(
            [str(args.kernelhub), "bundle", "import", str(bundle), "--cache-dir", str(target)], env))
        extract = work / f"extract-{rep}"
        shutil.rmtree(extract, ignore_errors=True)
        extract.mkdir()
        rows["tar --zstd -x"].append(timed(["tar", "--zstd", "-xf", str(tarball), "-C", str(extract)], env))
        subprocess.run(["zstd", "-d", "-q", "-f", str(bundle), "-o", str(raw)], check=True)
        decode = timed(["sh", "-c", f"zstd -d -q -c '{bundle}' > /dev/null"], env)
        # OpenSSL's sha256 (SHA-NI where the CPU has it), the one kernelhub links.
        digest = timed(["openssl", "dgst", "-sha256", str(raw)], env)
        rows["zstd -d + sha256"].append(decode + digest)
        shutil.rmtree(target, ignore_errors=True)
        shutil.rmtree(extract, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"\n{content / 2**20:.0f} MiB of kernel files, bundle {bundle.stat().st_size / 2**20:.0f} MiB, "
          f"{args.reps} rounds, load {os.getloadavg()[0]:.2f}\n")
    print("| step | median s | MB/s | ratio |")
    print("|---|---|---|---|")
    anchors = {"bundle create": "tar --zstd -c", "bundle import": "zstd -d + sha256"}
    for name, seconds in med.items():
        anchor = anchors.get(name)
        ratio = f"{seconds / med[anchor]:.2f}x {anchor}" if anchor else ""
        if name == "bundle import":
            ratio += f", {seconds / med['tar --zstd -x']:.2f}x tar --zstd -x"
        print(f"| {name} | {seconds:.3f} | {content / 1e6 / seconds:.0f} | {ratio} |")
    goal = med["bundle import"] <= 1.3 * med["zstd -d + sha256"]
    print(f"\ngoal: import within 1.3x of zstd decode + sha256: {'met' if goal else 'MISSED'}")
    return 1 if args.check and not goal else 0


if __name__ == "__main__":
    sys.exit(main())
