"""Context parallelism across two "hosts": two network namespaces joined by a veth pair,
ranks 0-1 in host A and ranks 2-3 in host B, the TCPStore on host A's address and each rank's
Gloo connections bound to its host's veth address, so every exchange between the hosts
crosses the link (its byte counters prove it). Runs kh_cp_worker like parallel_tests does:
ring, Ulysses and 2x2 unified against single-process attention (fp32 within 1e-5) for native,
flex and flash_hub (each host fetches the fixture kernel into its own cache from a test Hub
served on host A), and a rank of host B that dies mid-call. Needs root and iproute2: without them this FAILS, it does not
skip (scripts/setup.sh installs iproute2; CI runs as root).

    host A ns   10.202.0.1/24  veth a0  <-->  veth b0  10.202.0.2/24   host B ns
"""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("KH_BIN_DIR", REPO_ROOT / "build" / "bin"))
WORKER = BIN_DIR / "kh_cp_worker"
FIXTURE_HUB = Path(os.environ.get("KH_FIXTURE_HUB", REPO_ROOT / "build" / "fixtures" / "hub"))
HUB_PORT = 29600
ADDR = {"a": "10.202.0.1", "b": "10.202.0.2"}
SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
STORE_PORT = 29500  # the namespaces are ours alone: a fixed port cannot collide


def ip_tool() -> str:
    return shutil.which("ip") or shutil.which("ip", path=SBIN_PATH) or "ip"


def missing_prerequisites() -> list[str]:
    problems = []
    if os.geteuid() != 0:
        problems.append("must run as root (network namespaces, veth links)")
    if not (shutil.which("ip") or shutil.which("ip", path=SBIN_PATH)):
        problems.append("no `ip` on PATH (Debian package iproute2; scripts/setup.sh installs it)")
    if not WORKER.exists():
        problems.append(f"{WORKER} is not built (scripts/build.sh)")
    if not FIXTURE_HUB.is_dir():
        problems.append(f"no fixture hub at {FIXTURE_HUB} (scripts/build.sh)")
    return problems


class TwoHosts:
    def __init__(self):
        tag = f"khcp{os.getpid()}"
        self.ns = {"a": f"{tag}-a", "b": f"{tag}-b"}
        self.created = []
        try:
            for ns in self.ns.values():
                subprocess.run([ip_tool(), "netns", "del", ns], capture_output=True)
                self.ip("netns", "add", ns)
                self.created.append(ns)
                self.ip("-n", ns, "link", "set", "lo", "up")
            self.ip("-n", self.ns["a"], "link", "add", "a0", "type", "veth", "peer", "name", "b0",
                    "netns", self.ns["b"])
            for host, dev in (("a", "a0"), ("b", "b0")):
                self.ip("-n", self.ns[host], "addr", "add", f"{ADDR[host]}/24", "dev", dev)
                self.ip("-n", self.ns[host], "link", "set", dev, "up")
        except BaseException:
            self.close()
            raise

    @staticmethod
    def ip(*args: str) -> None:
        out = subprocess.run([ip_tool(), *args], capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {out.stderr.strip()}")

    def tx_bytes(self, host: str) -> int:
        dev = "a0" if host == "a" else "b0"
        out = subprocess.run([ip_tool(), "netns", "exec", self.ns[host], "cat",
                              f"/sys/class/net/{dev}/statistics/tx_bytes"],
                             capture_output=True, text=True, check=True, timeout=30)
        return int(out.stdout)

    def serve_hub(self, work: Path) -> subprocess.Popen:
        """The fixture Hub on host A's link address, reachable from both hosts."""
        port_file = work / "hub-port"
        server = subprocess.Popen(
            [ip_tool(), "netns", "exec", self.ns["a"], str(BIN_DIR / "kernelhub-test-hub"),
             "--root", str(FIXTURE_HUB), "--bind", f"{ADDR['a']}:{HUB_PORT}", "--port-file",
             str(port_file), "--test-endpoints"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            assert server.poll() is None, "kernelhub serve exited"
            assert time.monotonic() < deadline, "kernelhub serve did not start within 30 s"
            time.sleep(0.05)
        return server

    def run_ranks(self, args: list[str], work: Path, deadline: float = 120) -> list[tuple[int, str]]:
        """Ranks 0-1 on host A, 2-3 on host B; (exit code, output) per rank. Each host has its
        own kernel cache and reaches the Hub over the link (embedded mode: no daemon)."""
        procs = []
        for rank in range(4):
            host = "a" if rank < 2 else "b"
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("HF_", "KERNELHUB_", "DIFFUSERS_", "LOCAL_KERNELS"))}
            env.update({"HF_ENDPOINT": f"http://{ADDR['a']}:{HUB_PORT}",
                        "HF_HUB_CACHE": str(work / f"cache-{host}"),
                        "HF_HOME": str(work / f"hf-{host}"),
                        "KERNELHUB_SOCKET": str(work / "no-daemon.sock")})
            log = work / f"rank{rank}.log"
            argv = [ip_tool(), "netns", "exec", self.ns[host], str(WORKER), "--rank", str(rank),
                    "--world", "4", "--store-host", ADDR["a"], "--port", str(STORE_PORT),
                    "--bind", ADDR[host], *args]
            with open(log, "wb") as out:
                procs.append((subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                               stderr=subprocess.STDOUT, env=env), log))
        start = time.monotonic()
        results = []
        for proc, log in procs:
            try:
                code = proc.wait(timeout=max(1.0, deadline - (time.monotonic() - start)))
            except subprocess.TimeoutExpired:
                for other, _ in procs:
                    if other.poll() is None:
                        other.send_signal(signal.SIGKILL)
                        other.wait()
                code = -1
            results.append((code, log.read_text(errors="replace")))
        return results

    def close(self) -> None:
        for ns in reversed(self.created):
            pids = subprocess.run([ip_tool(), "netns", "pids", ns], capture_output=True, text=True)
            for pid in pids.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run([ip_tool(), "netns", "del", ns], capture_output=True)
        self.created.clear()


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    problems = missing_prerequisites()
    assert not problems, "cannot build the two hosts: " + "; ".join(problems)
    topology = TwoHosts()
    try:
        topology.serve_hub(tmp_path_factory.mktemp("hub"))  # closed with host A's namespace
    except BaseException:
        topology.close()
        raise
    yield topology
    topology.close()


def describe(results) -> str:
    return "\n".join(f"--- rank {i} (exit {code})\n{out}" for i, (code, out) in enumerate(results))


@pytest.mark.parametrize("mode", ["ring", "ulysses", "unified"])
def test_equal_to_single_process_across_hosts(hosts, mode, tmp_path):
    before = hosts.tx_bytes("a"), hosts.tx_bytes("b")
    results = hosts.run_ranks(["--mode", mode, "--scenario", "equal", "--backends",
                               "native,flex,flash_hub"], tmp_path)
    for code, out in results:
        assert code == 0, describe(results)
        assert out.count(" ok\n") == 6, describe(results)  # 3 backends, causal and not
    # flash_hub came over the link into each host's own cache.
    for host in ("a", "b"):
        assert list((tmp_path / f"cache-{host}").glob("kernels--kernels-community--flash-attn2")), host
    # The hosts really talked over the link, both ways (well beyond the store's few bytes:
    # each rank sends tens of KB of key/value blocks or all-to-all chunks).
    sent_a, sent_b = hosts.tx_bytes("a") - before[0], hosts.tx_bytes("b") - before[1]
    assert sent_a > 20_000 and sent_b > 20_000, (sent_a, sent_b)


def test_a_rank_of_host_b_dies_mid_call(hosts, tmp_path):
    results = hosts.run_ranks(["--mode", "ring", "--scenario", "die", "--timeout-ms", "3000"], tmp_path,
                              deadline=60)
    # The fault happened: rank 3 (host B) exited mid-call with its own code.
    assert results[3][0] == 42 and "exiting mid-call" in results[3][1], describe(results)
    for code, out in results[:3]:
        assert code == 0 and "Context parallelism: " in out, describe(results)
