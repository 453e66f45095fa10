#!/usr/bin/env python3
"""Cold-download benchmark: one fixture kernel variant holding a ~100 MB .so, served by
`kernelhub serve` on loopback, fetched into a fresh cache by

  * curl                      -- the same files, in parallel, by commit (the floor),
  * kernelhub download        -- resolve v1, list build/, verify, publish into the cache,
  * huggingface_hub.snapshot_download(repo_type="kernel", allow_patterns=build/<variant>/*),
  * kernels.get_kernel(..., backend="cpu")  -- download and import.

Each client runs --reps times (round-robin, so none profits from a warmer machine), every run
into its own empty cache. Prints the medians and their ratios to curl. Goals (the issue):
kernelhub within 1.2x of curl, and at least 2x faster than each Python client.

Run with the project venv:  .venv/bin/python bench/download_bench.py   (see bench/README.md)
"""
import argparse
import base64
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REPO_ID = "kernels-community/relu-bench"
BRANCH = "v1"
_SKIP_DIGEST = {"metadata.json", "metadata.json.sigstore"}


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def find_fixture_variant(fixture_src: Path) -> Path:
    """build/fixtures/src/relu-v1/build/<variant>: the real, loadable fixture kernel. The store
    holds a CPU and a CUDA build of it; the CPU one is named in build/fixtures/variant.txt."""
    build = fixture_src / "relu-v1" / "build"
    named = fixture_src.parent / "variant.txt"
    if not named.is_file():
        sys.exit(f"{named} is missing (build the fixtures first: scripts/build.sh)")
    variant = build / named.read_text().strip()
    if not variant.is_dir():
        found = sorted(p.name for p in build.iterdir()) if build.is_dir() else []
        sys.exit(f"the fixture variant {variant.name} is not under {build} (found {found}; "
                 "build the fixtures first: scripts/build.sh)")
    return variant


def pad_shared_object(so: Path, pad_bytes: int, workdir: Path) -> None:
    """Grow the .so by an unloaded section so it stays a loadable extension."""
    pad = workdir / "khpad.bin"
    with open(pad, "wb") as f:
        remaining = pad_bytes
        while remaining:  # random, so no transport compression can shrink it
            chunk = min(remaining, 8 << 20)
            f.write(os.urandom(chunk))
            remaining -= chunk
    padded = so.with_name(so.name + ".padded")
    subprocess.run(["objcopy", f"--add-section=.khpad={pad}",
                    "--set-section-flags=.khpad=noload,readonly", str(so), str(padded)], check=True)
    padded.replace(so)
    pad.unlink()


def rewrite_digests(variant: Path) -> None:
    """metadata.json's digest must cover every file again after padding (kernel-builder rule:
    all files but metadata.json itself and bytecode, base64 of the raw sha256)."""
    meta_path = variant / "metadata.json"
    meta = json.loads(meta_path.read_text())
    files = {}
    for path in sorted(variant.rglob("*")):
        rel = path.relative_to(variant).as_posix()
        if not path.is_file() or rel in _SKIP_DIGEST or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        files[rel] = base64.b64encode(h.digest()).decode()
    meta["digest"] = {"algorithm": "sha256", "files": files}
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def build_store(kernelhub: Path, fixture: Path, size_mb: int, work: Path) -> tuple[str, str, dict[str, int]]:
    """Publishes the padded variant as REPO_ID@v1; returns (commit, variant, {relpath: size})."""
    src = work / "src"
    variant_dir = src / "build" / fixture.name
    shutil.copytree(fixture, variant_dir, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    sos = sorted(variant_dir.glob("*.so"))
    if not sos:
        sys.exit(f"no .so in {fixture}")
    pad_shared_object(sos[0], size_mb << 20, work)
    rewrite_digests(variant_dir)
    out = subprocess.run([str(kernelhub), "publish", "--root", str(work / "store"), "--repo", REPO_ID,
                          "--branch", BRANCH, "--message", "bench: padded fixture", str(src)],
                         check=True, capture_output=True, text=True)
    commit = out.stdout.strip().splitlines()[-1]
    sizes = {p.relative_to(src).as_posix(): p.stat().st_size for p in variant_dir.rglob("*") if p.is_file()}
    return commit, fixture.name, sizes


class Server:
    """`kernelhub serve` on a free loopback port, stopped on exit."""

    def __init__(self, kernelhub: Path, store: Path, work: Path):
        port_file = work / "serve.port"
        self._log = open(work / "serve.log", "wb")
        self.proc = subprocess.Popen([str(kernelhub), "serve", "--root", str(store), "--port", "0",
                                      "--port-file", str(port_file)],
                                     stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip().isdigit()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit(f"kernelhub serve did not start; log: {(work / 'serve.log').read_text()}")
            time.sleep(0.05)
        self.endpoint = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# Python clients run in a fresh interpreter each time (cold, like the CLI) and report the
# time of the call itself, so import cost (torch!) is shown apart from download cost.
_PY_SNAPSHOT = """
import json, sys, time
from huggingface_hub import snapshot_download
t = time.perf_counter()
path = snapshot_download(sys.argv[1], repo_type="kernel", revision=sys.argv[2],
                         allow_patterns=[f"build/{sys.argv[3]}/*"], cache_dir=sys.argv[4])
print(json.dumps({"call_s": time.perf_counter() - t, "path": f"{path}/build/{sys.argv[3]}"}))
"""
_PY_GET_KERNEL = """
import json, sys, time
import torch
from kernels import get_kernel
t = time.perf_counter()
# trust_remote_code=True skips kernels' publisher lookup (one API request); kernelhub's trust
# decision is a local policy check, so this only ever favours kernels.
k = get_kernel(sys.argv[1], revision=sys.argv[2], backend="cpu", trust_remote_code=True)
call = time.perf_counter() - t
x = torch.randn(4, 4); out = torch.empty_like(x); k.relu(out, x)
assert torch.equal(out, torch.relu(x)), "the benchmark kernel computed a wrong relu"
import os
print(json.dumps({"call_s": call, "path": os.path.dirname(k.__file__)}))
"""


def clean_env(endpoint: str, cache: Path) -> dict:
    # HF_HUB_DISABLE_TELEMETRY stays unset: with it, kernels 0.17.2 builds an empty user agent that
    # huggingface_hub 2.4.0 turns into a header ending in "; ", which httpx2 refuses. Telemetry
    # would go to HF_ENDPOINT (loopback) anyway.
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_TOKEN", "HF_HUB_OFFLINE", "LOCAL_KERNELS", "DIFFUSERS_DISABLE_REMOTE_CODE",
                        "KERNELHUB_SOCKET", "HF_HUB_DISABLE_TELEMETRY")}
    env.update({"HF_ENDPOINT": endpoint, "HF_HOME": str(cache / "hf-home"), "HF_HUB_CACHE": str(cache),
                "KERNELS_CACHE": str(cache), "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                # kernelhub selects for the torch of this python, as `kernels` in it does.
                "KERNELHUB_PYTHON": sys.executable})
    return env


def check_sizes(variant_path: Path, sizes: dict[str, int], variant: str) -> None:
    prefix = f"build/{variant}/"
    for rel, size in sizes.items():
        got = (variant_path / rel[len(prefix):]).stat().st_size
        if got != size:
            raise RuntimeError(f"{variant_path}/{rel}: {got} bytes, expected {size}")


def run_timed(argv: list[str], env: dict) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} ... failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, proc.stdout


def run_curl(ctx: dict, cache: Path) -> tuple[float, float]:
    argv = ["curl", "--parallel", "--parallel-max", "8", "--fail", "-sS", "-L", "--create-dirs"]
    for rel in ctx["sizes"]:
        argv += ["-o", str(cache / rel), f"{ctx['endpoint']}/kernels/{REPO_ID}/resolve/{ctx['commit']}/{rel}"]
    wall, _ = run_timed(argv, clean_env(ctx["endpoint"], cache))
    check_sizes(cache / "build" / ctx["variant"], ctx["sizes"], ctx["variant"])
    return wall, wall


def run_kernelhub(ctx: dict, cache: Path) -> tuple[float, float]:
    argv = [str(ctx["kernelhub"]), "download", REPO_ID, "--revision", BRANCH, "--variant", ctx["variant"],
            "--cache-dir", str(cache), "--json"]
    wall, out = run_timed(argv, clean_env(ctx["endpoint"], cache))
    check_sizes(Path(json.loads(out)["path"]), ctx["sizes"], ctx["variant"])
    return wall, wall


def run_python_client(script: str, ctx: dict, cache: Path, *args: str) -> tuple[float, float]:
    wall, out = run_timed([sys.executable, "-c", script, REPO_ID, BRANCH, *args], clean_env(ctx["endpoint"], cache))
    result = json.loads(out.strip().splitlines()[-1])
    check_sizes(Path(result["path"]), ctx["sizes"], ctx["variant"])
    return result["call_s"], wall


def run_snapshot_download(ctx: dict, cache: Path) -> tuple[float, float]:
    return run_python_client(_PY_SNAPSHOT, ctx, cache, ctx["variant"], str(cache))


def run_get_kernel(ctx: dict, cache: Path) -> tuple[float, float]:
    return run_python_client(_PY_GET_KERNEL, ctx, cache)


CLIENTS = [
    ("curl --parallel (same files)", run_curl),
    ("kernelhub download", run_kernelhub),
    ("huggingface_hub.snapshot_download", run_snapshot_download),
    ("kernels.get_kernel", run_get_kernel),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelhub", type=Path, default=REPO_ROOT / "build" / "bin" / "kernelhub")
    ap.add_argument("--fixture-src", type=Path, default=REPO_ROOT / "build" / "fixtures" / "src")
    ap.add_argument("--size-mb", type=int, default=100, help="bytes added to the .so, in MiB")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workdir", type=Path, help="keep everything here instead of a temp dir")
    ap.add_argument("--only", action="append", help="run only clients whose name contains this")
    ap.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    ap.add_argument("--smoke", action="store_true",
                    help="1 MiB, one round: checks that every client runs and the table is printed "
                         "(exit 1 when a client fails), not the figures (ctest bench.download_smoke)")
    args = ap.parse_args()
    if args.smoke:
        args.size_mb, args.reps = 1, 1

    if not args.kernelhub.exists():
        sys.exit(f"{args.kernelhub} is not built (scripts/build.sh)")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="kh-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    fixture = find_fixture_variant(args.fixture_src)
    log(f"padding {fixture.name} by {args.size_mb} MiB and publishing {REPO_ID}@{BRANCH} in {work}")
    commit, variant, sizes = build_store(args.kernelhub, fixture, args.size_mb, work)
    total = sum(sizes.values())
    server = Server(args.kernelhub, work / "store", work)
    ctx = {"kernelhub": args.kernelhub, "endpoint": server.endpoint, "commit": commit, "variant": variant,
           "sizes": sizes}
    clients = [c for c in CLIENTS if not args.only or any(o in c[0] for o in args.only)]
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in clients}
    failures: dict[str, str] = {}
    try:
        for rep in range(args.reps):
            for name, run in clients:
                if name in failures:
                    continue
                cache = work / "caches" / f"{rep}-{name.split()[0].split('.')[0]}"
                shutil.rmtree(cache, ignore_errors=True)
                cache.mkdir(parents=True)
                # Settle the previous client's dirty pages so nobody pays for another's writeback.
                os.sync()
                try:
                    call, wall = run(ctx, cache)
                except (RuntimeError, OSError, ValueError, KeyError) as e:
                    # A failing client is reported in the table, not hidden, and not retried.
                    failures[name] = str(e).strip().splitlines()[-1][:160]
                    log(f"rep {rep + 1}/{args.reps} {name}: FAILED: {e}")
                    continue
                finally:
                    shutil.rmtree(cache, ignore_errors=True)  # keep disk use to one copy
                times[name].append((call, wall))
                log(f"rep {rep + 1}/{args.reps} {name}: {call:.3f} s (process {wall:.3f} s)")
    finally:
        server.stop()
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    med = {name: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v))
           for name, v in times.items() if name not in failures}
    curl = med.get(CLIENTS[0][0], (None, None))[0]
    print(f"\nCold download of {variant} ({len(sizes)} files, {total / (1 << 20):.1f} MiB) over loopback, "
          f"median of {args.reps}:\n")
    print(f"{'client':<36} {'download s':>10} {'x curl':>7} {'MiB/s':>7} {'process s':>10}")
    for name, (call, wall) in med.items():
        ratio = f"{call / curl:.2f}" if curl else "-"
        print(f"{name:<36} {call:>10.3f} {ratio:>7} {total / (1 << 20) / call:>7.0f} {wall:>10.3f}")
    for name, why in failures.items():
        print(f"{name:<36} {'FAILED':>10}  {why}")
    print("\n'download s' is the call itself; for the Python clients 'process s' adds interpreter start "
          "and imports (torch for kernels). curl writes the files but does not fsync them; kernelhub "
          "fsyncs every blob before publishing.")
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, 1-min load average {load:.2f} at the end")

    ok = True
    kh = med.get("kernelhub download", (None,))[0]
    if kh and curl:
        good = kh <= 1.2 * curl
        ok &= good
        print(f"goal kernelhub <= 1.2x curl: {kh / curl:.2f}x  {'met' if good else 'MISSED'}")
    for name in ("huggingface_hub.snapshot_download", "kernels.get_kernel"):
        if kh and name in med:
            speedup = med[name][0] / kh
            good = speedup >= 2.0
            ok &= good
            print(f"goal kernelhub >= 2x faster than {name}: {speedup:.2f}x  {'met' if good else 'MISSED'}")
    ok &= not failures
    if args.smoke:
        return 1 if failures or len(med) != len(clients) else 0
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
