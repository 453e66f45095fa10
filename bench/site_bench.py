#!/usr/bin/env python3
"""Site cache benchmark (issue 11): N nodes x M clients fetch one kernel cold, with every node
straight to the Hub, then through the site cache (deploy/nginx), in one run.

The topology is tests/site/site_topology.py's network namespaces: a Hub namespace running
`kernelhub-test-hub --test-endpoints` (kernelhub serve with test endpoints) on a store holding download_bench's padded fixture kernel
(one variant whose .so carries --size-mb MiB of random bytes, an LFS file behind the Hub's
redirect), a site namespace and N node namespaces, each node with its own kernelhubd and an
empty cache. Direct: the site namespace only routes (ip_forward=1) and HF_ENDPOINT is the Hub.
Site: it does not route, runs deploy/nginx/run-site-cache.sh with an empty cache, and
HF_ENDPOINT is the site. The Hub's link (everything it sends, in both modes) is shaped to
--uplink-mbit (default 1000, a site's uplink; 0: the bare veth) with a tbf qdisc, so the
Hub-side bandwidth the nodes share is the site's real bottleneck. In each mode all N x M
`kernelhub download --version 1` clients start at once; the wall time runs from the first start
to the last exit. Upstream requests come from the Hub's request log, upstream bytes from the
Hub's interface counter (everything it sent: bodies, headers, TCP/IP framing). Every client
must succeed and every node's copy must hash right.

Needs root, iproute2 and nginx (scripts/setup.sh), and the build (scripts/build.sh).
Run with the project venv:  .venv/bin/python bench/site_bench.py   (see bench/README.md)
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "bench"))
sys.path.insert(0, str(REPO_ROOT / "tests" / "site"))
from download_bench import REPO_ID, build_store, find_fixture_variant, log  # noqa: E402
from site_topology import Hub, Node, Site, Topology, missing_prerequisites, tree_hashes  # noqa: E402

MIB = 1 << 20


def node_env(python: str, work: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGING_FACE", "KERNELHUB_", "KERNELS_", "DIFFUSERS_", "LOCAL_KERNELS",
                                "LISTEN_", "NOTIFY_SOCKET"))}
    env.update({"HF_TOKEN": "", "HF_HOME": str(work / "hf-home"), "KERNELHUB_PYTHON": python,
                # Clients waiting on the site's lock see no byte until the object is whole.
                "HF_HUB_DOWNLOAD_TIMEOUT": "120", "HF_HUB_ETAG_TIMEOUT": "120"})
    return env


def run_mode(name: str, topo: Topology, hub: Hub, endpoint: str, args, work: Path, env: dict,
             want: dict[str, str]) -> dict:
    """Fresh kernelhubds (empty caches) on every node, all clients at once; the measurements."""
    mode_work = work / name
    mode_work.mkdir()
    nodes = [Node(topo, i, args.bin_dir, endpoint, mode_work, env) for i in range(args.nodes)]
    hub.reset_requests()
    sent_before = topo.tx_bytes(topo.hub, "up0")
    site_sent_before = topo.tx_bytes(topo.site, "br0")
    log(f"{name}: {args.nodes} nodes x {args.clients} clients, cold")
    start = time.perf_counter()
    procs = [node.kernelhub_async(mode_work / f"client-{n}-{c}.log", "download", REPO_ID, "--version", "1", "--json")
             for n, node in enumerate(nodes) for c in range(args.clients)]
    for proc, _ in procs:
        proc.wait(timeout=args.timeout)
    wall = time.perf_counter() - start
    sent = topo.tx_bytes(topo.hub, "up0") - sent_before
    to_nodes = topo.tx_bytes(topo.site, "br0") - site_sent_before

    checked = set()
    for i, (proc, out) in enumerate(procs):
        if proc.returncode != 0:
            sys.exit(f"{name}: a client failed: {out.with_suffix('.log').read_text()[-2000:]}")
        node = i // args.clients
        if node not in checked:  # every client of a node is handed the same files
            got = tree_hashes(Path(json.loads(out.read_text())["path"]))
            if got != want:
                sys.exit(f"{name}: node {node} holds other bytes than the store: {got} != {want}")
            checked.add(node)
    requests = hub.requests()
    file_gets = [r for r in requests if r["method"] == "GET" and r["status"] == 200
                 and ("/resolve/" in r["path"] or r["path"].startswith("/lfs-objects/"))]
    for node in nodes:
        Topology.stop(node.proc)
    return {"wall": wall, "requests": len(requests), "file_gets": len(file_gets), "sent": sent,
            "to_nodes": to_nodes}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, default=REPO_ROOT / "build", help="build dir with bin/ and fixtures/")
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--clients", type=int, default=8, help="clients per node")
    ap.add_argument("--size-mb", type=int, default=100, help="bytes added to the kernel's .so, in MiB")
    ap.add_argument("--uplink-mbit", type=int, default=1000,
                    help="shape the Hub's outgoing link to this many Mbit/s (0: unshaped)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a mode may take")
    ap.add_argument("--python", default=str(REPO_ROOT / ".venv" / "bin" / "python"))
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless the site mode made one upstream GET per file")
    ap.add_argument("--smoke", action="store_true",
                    help="a quick run that checks the benchmark works and prints its table, not "
                         "its figures (ctest bench.site_smoke)")
    args = ap.parse_args()
    if args.smoke:
        args.nodes, args.clients, args.size_mb, args.uplink_mbit = 2, 2, 1, 0
    args.bin_dir = args.build / "bin"
    problems = missing_prerequisites(args.bin_dir)
    if problems:
        sys.exit("site_bench cannot run here:\n  " + "\n  ".join(problems))
    if not 1 <= args.nodes <= 200:
        sys.exit("--nodes must be 1-200 (one /24 for the nodes)")

    work = Path(tempfile.mkdtemp(prefix="kh-site-bench-"))
    os.chmod(work, 0o755)  # nginx's workers (www-data) reach the site cache below it
    try:
        fixture = find_fixture_variant(args.build / "fixtures" / "src")
        log(f"padding {fixture.name} by {args.size_mb} MiB and publishing {REPO_ID}@v1 in {work}")
        _, variant, sizes = build_store(args.bin_dir / "kernelhub", fixture, args.size_mb, work)
        want = tree_hashes(work / "src" / "build" / variant)
        total = sum(sizes.values())
        env = node_env(args.python, work)
        with Topology(work, args.nodes) as topo:
            hub = Hub(topo, args.bin_dir, work / "store", work)
            if args.uplink_mbit:
                topo.run(topo.hub, ["tc", "qdisc", "add", "dev", "up0", "root", "tbf", "rate",
                                    f"{args.uplink_mbit}mbit", "burst", "512kb", "latency", "100ms"], check=True)
            topo.set_forwarding(True)
            direct = run_mode("direct", topo, hub, hub.endpoint, args, work, env, want)
            topo.set_forwarding(False)
            site = Site(topo, hub.endpoint, work / "site-cache", work / "site.log")
            cached = run_mode("site", topo, hub, site.endpoint, args, work, env, want)
            site.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    files = len(sizes)
    link = f"{args.uplink_mbit} Mbit/s" if args.uplink_mbit else "unshaped veth"
    print(f"\n{args.nodes} nodes x {args.clients} clients, one kernel variant cold ({files} files, "
          f"{total / MIB:.1f} MiB), kernelhubd on every node, Hub link {link}:\n")
    print("| mode | wall s | upstream requests | upstream file GETs | Hub sent MiB | site sent to nodes MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in (("every node straight to the Hub", direct), ("through the site cache", cached)):
        to_nodes = f"{r['to_nodes'] / MIB:.1f}" if r is cached else "-"
        print(f"| {name} | {r['wall']:.2f} | {r['requests']} | {r['file_gets']} | {r['sent'] / MIB:.1f} "
              f"| {to_nodes} |")
    print(f"\nThrough the site: {direct['sent'] / max(cached['sent'], 1):.1f}x fewer upstream bytes, "
          f"{direct['requests'] / max(cached['requests'], 1):.1f}x fewer upstream requests, "
          f"{cached['wall'] / direct['wall']:.2f}x the wall time. 'file GETs' are 200 answers of resolve and "
          f"LFS object URLs (an LFS resolve is a 302 plus one object GET); 'Hub sent' is the Hub's interface "
          f"counter.")
    print(f"machine: {os.cpu_count()} CPUs, 1-min load average {os.getloadavg()[0]:.2f} at the end")
    ok = cached["file_gets"] == files
    if args.check and not ok:
        print(f"goal one upstream GET per file through the site: {cached['file_gets']} for {files} files  MISSED")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
