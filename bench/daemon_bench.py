#!/usr/bin/env python3
"""Warm-fetch benchmark of kernelhubd against kernels.get_kernel, on loopback.

  * `kernelhub serve` serves the fixture store; a kernelhubd on a temp socket and cache
    fetches kernels-community/relu v1 once (that fills the cache).
  * kh_daemon_loadgen: 1, 8 and 64 client threads, each in a tight loop of connect + hello +
    fetch + receive fds + close; p50/p99 latency and requests/s.
  * kernelhubd VmRSS idle (before any request, and after the load) and under load (peak
    sampled during the 64-client run).
  * cold: a fresh daemon and cache, 64 clients released at once; the server's request log
    must show one GET per file.
  * kernels.get_kernel on the same cached kernel (the daemon's cache is HF-compatible), in
    one Python process after import: online to our server, and with HF_HUB_OFFLINE=1.

Goals (issue 3): warm p50 < 200 us; >= 100x faster than get_kernel online and >= 20x
offline; daemon RSS < 20 MB idle; 64 cold clients -> one upstream download per file.

Run with the project venv:  .venv/bin/python bench/daemon_bench.py   (see bench/README.md)
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REPO = "kernels-community/relu"
FOLDER = "kernels--kernels-community--relu"


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def wait_listening(path: Path, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(path))
                return
        except OSError:
            time.sleep(0.02)
    sys.exit(f"nothing listens on {path}")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def hub_requests(endpoint: str) -> list:
    import urllib.request
    with urllib.request.urlopen(f"{endpoint}/_kernelhub/requests") as r:
        return [x for x in json.load(r) if not x["path"].startswith("/_kernelhub")]


def hub_reset(endpoint: str) -> None:
    import urllib.request
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/_kernelhub/requests/reset", data=b"",
                                                  method="POST")).read()


def start_serve(bindir: Path, root: Path, work: Path) -> tuple:
    """The test Hub (kernelhub-test-hub: `kernelhub serve` with /_kernelhub/requests) of `root`
    on a free loopback port: (process, endpoint URL)."""
    port_file = work / "serve.port"
    serve = subprocess.Popen([str(bindir / "kernelhub-test-hub"), "--test-endpoints", "--root", str(root),
                              "--bind", "127.0.0.1:0", "--port-file", str(port_file)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        if port_file.exists() and port_file.read_text().strip():
            break
        time.sleep(0.05)
    return serve, f"http://127.0.0.1:{port_file.read_text().strip()}"


def stop_all(procs: list, work: Path) -> None:
    """Terminates the benchmark's children that still run and removes its work folder."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=20)
    shutil.rmtree(work, ignore_errors=True)


class Daemon:
    def __init__(self, kernelhubd: Path, work: Path, name: str, endpoint: str, extra_args=()):
        self.socket = work / f"{name}.sock"
        self.cache = work / f"{name}-cache"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("LISTEN_", "NOTIFY_SOCKET", "DIFFUSERS_", "KERNELHUB_"))}
        env["HF_ENDPOINT"] = endpoint
        self.log = open(work / f"{name}.log", "wb")
        self.proc = subprocess.Popen([str(kernelhubd), "--socket", str(self.socket), "--cache-dir",
                                      str(self.cache), *extra_args], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        wait_listening(self.socket, self.proc)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.log.close()


def loadgen(args, daemon: Daemon, clients: int, seconds: float, variant: str, reuse: bool = False) -> dict:
    cmd = [str(args.loadgen), str(daemon.socket), REPO, "1", variant, str(clients), str(seconds)]
    out = subprocess.run(cmd + (["reuse"] if reuse else []), capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        sys.exit(f"loadgen failed ({clients} clients): {out.stdout}{out.stderr}")
    return json.loads(out.stdout)


GET_KERNEL = r"""
import json, sys, time
from kernels import get_kernel
calls = int(sys.argv[1])
get_kernel("kernels-community/relu", version=1, backend="cpu")  # first call: imports, warms
times = []
for _ in range(calls):
    t0 = time.perf_counter()
    get_kernel("kernels-community/relu", version=1, backend="cpu")
    times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps({"median_us": times[len(times) // 2] * 1e6, "min_us": times[0] * 1e6, "calls": calls}))
"""


def get_kernel_timing(args, cache: Path, endpoint: str, offline: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DIFFUSERS_", "KERNELHUB_", "LOCAL_KERNELS"))}
    env.update({"HF_ENDPOINT": endpoint, "KERNELS_CACHE": str(cache), "HF_HUB_CACHE": str(cache),
                "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_USER_AGENT_ORIGIN": "kernelhub-bench"})
    env.pop("HF_HUB_OFFLINE", None)
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    out = subprocess.run([args.python, "-c", GET_KERNEL, str(args.get_kernel_calls)], env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"get_kernel ({'offline' if offline else 'online'}) failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    build = REPO_ROOT / "build"
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", type=Path, default=build, help="build dir with bin/ and fixtures/ (default: build)")
    p.add_argument("--seconds", type=float, default=3.0, help="duration of each warm run")
    p.add_argument("--get-kernel-calls", type=int, default=10, help="timed get_kernel calls per mode")
    p.add_argument("--python", default=str(REPO_ROOT / ".venv" / "bin" / "python"))
    p.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    p.add_argument("--smoke", action="store_true",
                   help="0.2 s runs, 2 get_kernel calls: checks that every row is produced, not the "
                        "figures (ctest bench.daemon_smoke)")
    args = p.parse_args()
    if args.smoke:
        args.seconds, args.get_kernel_calls = 0.2, 2
    bindir = args.build / "bin"
    args.loadgen = bindir / "kh_daemon_loadgen"
    for b in ("kernelhub", "kernelhubd", "kh_daemon_loadgen"):
        if not (bindir / b).exists():
            sys.exit(f"missing {bindir / b}: build it first (scripts/build.sh)")
    # The CPU build of relu v1 (the store also holds its CUDA build).
    variant = (args.build / "fixtures" / "variant.txt").read_text().strip()

    work = Path(tempfile.mkdtemp(prefix="kh-daemon-bench-"))
    procs = []
    try:
        serve, endpoint = start_serve(bindir, args.build / "fixtures" / "hub", work)
        procs.append(serve)

        daemon = Daemon(bindir / "kernelhubd", work, "warm", endpoint)
        procs.append(daemon.proc)
        time.sleep(0.3)
        rss_idle = rss_kb(daemon.proc.pid)
        log(f"daemon idle RSS {rss_idle} kB; filling its cache")
        loadgen(args, daemon, 1, 0, variant)  # the one cold fetch

        results = {}
        peak = [0]
        for clients in (1, 8, 64):
            stop = threading.Event()

            def sample():
                while not stop.is_set():
                    peak[0] = max(peak[0], rss_kb(daemon.proc.pid))
                    time.sleep(0.05)

            sampler = threading.Thread(target=sample)
            sampler.start()
            log(f"warm fetch, {clients} client(s), {args.seconds} s")
            results[clients] = loadgen(args, daemon, clients, args.seconds, variant)
            stop.set()
            sampler.join()
        log(f"warm fetch over one kept connection, {args.seconds} s")
        reused = loadgen(args, daemon, 1, args.seconds, variant, reuse=True)
        time.sleep(0.5)
        rss_after = rss_kb(daemon.proc.pid)
        daemon.stop()

        log("cold: 64 clients at once on a fresh daemon and cache")
        hub_reset(endpoint)
        cold_daemon = Daemon(bindir / "kernelhubd", work, "cold", endpoint)
        procs.append(cold_daemon.proc)
        cold = loadgen(args, cold_daemon, 64, 0, variant)
        requests = hub_requests(endpoint)
        cold_daemon.stop()
        files = [str(f.relative_to(cold_daemon.cache / FOLDER / "snapshots").as_posix()).split("/", 1)[1]
                 for f in (cold_daemon.cache / FOLDER / "snapshots").rglob("*") if f.is_symlink()]
        gets = {f: sum(1 for r in requests if r["method"] == "GET" and r["path"].endswith("/" + f)) for f in files}

        # Offline first, on the cache exactly as kernelhubd left it: an online get_kernel writes
        # huggingface_hub's trees/<commit>.json listing every variant of the repo, and kernels'
        # offline snapshot_download (no allow_patterns) then calls the snapshot incomplete,
        # since only the CPU variant is cached. kernels fails the same way on a cache it filled
        # itself (and cannot resolve version=1 offline there at all: it writes no refs/v1).
        log(f"kernels.get_kernel x{args.get_kernel_calls}, offline then online")
        gk_offline = get_kernel_timing(args, daemon.cache, endpoint, offline=True)
        gk_online = get_kernel_timing(args, daemon.cache, endpoint, offline=False)
    finally:
        stop_all(procs, work)

    p50_1 = results[1]["p50_us"]
    rows = [("client", "p50 us", "p99 us", "req/s", "vs daemon p50 (1 client)")]
    for clients, r in results.items():
        rows.append((f"kernelhubd warm, {clients} client(s)", f"{r['p50_us']:.0f}", f"{r['p99_us']:.0f}",
                     f"{r['rps']:.0f}", f"{r['p50_us'] / p50_1:.2f}x"))
    rows.append(("kernelhubd warm, 1 client, connection kept", f"{reused['p50_us']:.0f}",
                 f"{reused['p99_us']:.0f}", f"{reused['rps']:.0f}", f"{reused['p50_us'] / p50_1:.2f}x"))
    rows.append(("kernels.get_kernel online", f"{gk_online['median_us']:.0f}", "-",
                 f"{1e6 / gk_online['median_us']:.1f}", f"{gk_online['median_us'] / p50_1:.0f}x slower"))
    rows.append(("kernels.get_kernel HF_HUB_OFFLINE=1", f"{gk_offline['median_us']:.0f}", "-",
                 f"{1e6 / gk_offline['median_us']:.1f}", f"{gk_offline['median_us'] / p50_1:.0f}x slower"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, r in enumerate(rows):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print()
    print(f"daemon VmRSS: idle {rss_idle / 1024:.1f} MB, peak under 64-client load {peak[0] / 1024:.1f} MB, "
          f"after load {rss_after / 1024:.1f} MB")
    print(f"cold, 64 clients at once: {cold['requests']} fetched, p50 {cold['p50_us'] / 1000:.0f} ms; "
          f"upstream GETs per file: {sorted(set(gets.values()))} over {len(gets)} files")

    goals = {
        "warm p50 < 200 us (1 client)": p50_1 < 200,
        ">= 100x faster than get_kernel online": gk_online["median_us"] / p50_1 >= 100,
        ">= 20x faster than get_kernel offline (new connection per fetch)": gk_offline["median_us"] / p50_1 >= 20,
        ">= 20x faster than get_kernel offline (kept connection, both repeated in one process)":
            gk_offline["median_us"] / reused["p50_us"] >= 20,
        "daemon RSS < 20 MB idle": rss_idle < 20 * 1024,
        "64 cold clients: one GET per file": bool(gets) and all(n == 1 for n in gets.values()),
    }
    for goal, ok in goals.items():
        print(f"  [{'ok' if ok else 'MISSED'}] {goal}")
    return 1 if args.check and not all(goals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
