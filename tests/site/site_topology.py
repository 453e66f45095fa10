"""A site of GPU nodes behind one nginx site cache, in network namespaces: used by
tests/site/test_site_cache.py and bench/site_bench.py.

    hub ns    kernelhub-test-hub --test-endpoints   10.201.1.1  --veth--  10.201.1.2  site ns
    site ns   nginx (deploy/nginx/run-site-cache.sh) 10.201.2.1 on a bridge
    node ns   kernelhubd + clients                  10.201.2.(10+i) on that bridge

Each node has a route to the Hub's subnet through the site and the Hub one back, so the only
thing that keeps nodes from reaching the Hub is that the site does not forward
(net.ipv4.ip_forward=0 in its namespace): `set_forwarding(True)` turns the site into a plain
router, for measuring nodes that fetch straight from the Hub.

Every link is created inside the namespaces (no interface ever exists in the caller's
namespace), and the namespace names carry the pid, so concurrent runs do not meet. Needs root
and iproute2. Everything started is tracked and stopped by `Topology.close()`, which also
deletes the namespaces; use the topology as a context manager.
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SITE_SCRIPT = REPO_ROOT / "deploy" / "nginx" / "run-site-cache.sh"

HUB_ADDR = "10.201.1.1"
SITE_UPLINK_ADDR = "10.201.1.2"
SITE_ADDR = "10.201.2.1"
SITE_PORT = 8080
SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def node_addr(i: int) -> str:
    return f"10.201.2.{10 + i}"


def which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=SBIN_PATH)


def missing_prerequisites(bin_dir: Path) -> list[str]:
    """What this host lacks to build the topology (empty: nothing)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("must run as root (network namespaces, veth links, nginx workers)")
    for tool, package in (("ip", "iproute2"), ("nginx", "nginx"), ("curl", "curl"), ("runuser", "util-linux"),
                          ("flock", "util-linux")):
        if not which(tool):
            problems.append(f"no `{tool}` on PATH (Debian package {package}; scripts/setup.sh installs it)")
    for binary in ("kernelhub", "kernelhubd"):
        if not (bin_dir / binary).exists():
            problems.append(f"{bin_dir / binary} is not built (scripts/build.sh)")
    if not SITE_SCRIPT.exists():
        problems.append(f"{SITE_SCRIPT} is missing")
    return problems


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_hashes(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every regular file under root (links followed), bytecode skipped."""
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


class Topology:
    """hub + site + `nodes` node namespaces; see the module docstring."""

    def __init__(self, work: Path, nodes: int):
        self.work = work
        tag = f"kh{os.getpid()}"
        self.hub = f"{tag}-hub"
        self.site = f"{tag}-site"
        self.nodes = [f"{tag}-n{i}" for i in range(nodes)]
        self._procs: list[tuple[subprocess.Popen, object]] = []
        self._created: list[str] = []
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    # -- construction -------------------------------------------------------------------------
    def _ip(self, *args: str) -> None:
        out = subprocess.run([which("ip") or "ip", *args], capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {out.stderr.strip()}")

    def _build(self) -> None:
        for ns in (self.hub, self.site, *self.nodes):
            # A namespace of this name can only be left over by a killed run with our pid.
            subprocess.run([which("ip") or "ip", "netns", "del", ns], capture_output=True)
            self._ip("netns", "add", ns)
            self._created.append(ns)
            self._ip("-n", ns, "link", "set", "lo", "up")
        # Hub <-> site: one veth pair, its own subnet.
        self._ip("-n", self.hub, "link", "add", "up0", "type", "veth", "peer", "name", "up1", "netns", self.site)
        self._ip("-n", self.hub, "addr", "add", f"{HUB_ADDR}/24", "dev", "up0")
        self._ip("-n", self.site, "addr", "add", f"{SITE_UPLINK_ADDR}/24", "dev", "up1")
        self._ip("-n", self.hub, "link", "set", "up0", "up")
        self._ip("-n", self.site, "link", "set", "up1", "up")
        # The nodes' subnet: a bridge in the site namespace, one veth per node.
        self._ip("-n", self.site, "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.site, "addr", "add", f"{SITE_ADDR}/24", "dev", "br0")
        self._ip("-n", self.site, "link", "set", "br0", "up")
        for i, ns in enumerate(self.nodes):
            port = f"p{i}"
            self._ip("-n", self.site, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
            self._ip("-n", self.site, "link", "set", port, "master", "br0")
            self._ip("-n", self.site, "link", "set", port, "up")
            self._ip("-n", ns, "addr", "add", f"{node_addr(i)}/24", "dev", "eth0")
            self._ip("-n", ns, "link", "set", "eth0", "up")
            # A way to the Hub exists on paper: only the site's forwarding decides.
            self._ip("-n", ns, "route", "add", "10.201.1.0/24", "via", SITE_ADDR)
        self._ip("-n", self.hub, "route", "add", "10.201.2.0/24", "via", SITE_UPLINK_ADDR)
        self.set_forwarding(False)

    def set_forwarding(self, on: bool) -> None:
        """Whether the site namespace routes between the nodes and the Hub (off: it only proxies)."""
        self.run(self.site, ["sh", "-c", f"echo {int(on)} > /proc/sys/net/ipv4/ip_forward"], check=True)
        got = self.run(self.site, ["cat", "/proc/sys/net/ipv4/ip_forward"], check=True).stdout.strip()
        assert got == str(int(on)), f"site ip_forward is {got}"

    # -- processes -----------------------------------------------------------------------------
    def _argv(self, ns: str, argv: list[str]) -> list[str]:
        return [which("ip") or "ip", "netns", "exec", ns, *argv]

    def run(self, ns: str, argv: list[str], env: dict | None = None, timeout: float = 120,
            check: bool = False, input: str | None = None) -> subprocess.CompletedProcess:
        """Runs argv inside namespace ns and waits for it."""
        out = subprocess.run(self._argv(ns, argv), env=env, capture_output=True, text=True, timeout=timeout,
                             input=input, stdin=None if input is not None else subprocess.DEVNULL)
        if check and out.returncode != 0:
            raise RuntimeError(f"[{ns}] {' '.join(argv)} exited {out.returncode}: {out.stderr.strip()[-2000:]}")
        return out

    def popen(self, ns: str, argv: list[str], log: Path, env: dict | None = None,
              stdout=None) -> subprocess.Popen:
        """Starts argv inside namespace ns (`ip netns exec` execs it: the pid is argv's own);
        stderr (and stdout unless given) go to log. Stopped by close() if still running."""
        log_file = open(log, "ab")
        proc = subprocess.Popen(self._argv(ns, argv), env=env, stdin=subprocess.DEVNULL,
                                stdout=stdout if stdout is not None else log_file, stderr=log_file)
        self._procs.append((proc, log_file))
        return proc

    def curl(self, ns: str, url: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return self.run(ns, ["curl", "-sS", "--max-time", str(int(timeout)), *args, url], timeout=timeout + 10)

    # -- teardown ------------------------------------------------------------------------------
    @staticmethod
    def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def close(self) -> None:
        """Stops every process started here, then anything left in our namespaces (their
        children), then deletes the namespaces (and with them every link)."""
        for proc, log_file in reversed(self._procs):
            try:
                self.stop(proc)
            finally:
                log_file.close()
        self._procs.clear()
        for ns in reversed(self._created):
            pids = subprocess.run([which("ip") or "ip", "netns", "pids", ns], capture_output=True, text=True)
            for pid in pids.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run([which("ip") or "ip", "netns", "del", ns], capture_output=True)
        self._created.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- measurements --------------------------------------------------------------------------
    def tx_bytes(self, ns: str, dev: str) -> int:
        return int(self.run(ns, ["cat", f"/sys/class/net/{dev}/statistics/tx_bytes"], check=True).stdout)


class Hub:
    """The test Hub (`kernelhub serve` with /_kernelhub/{requests,faults}: kernelhub-test-hub)
    of `root` in the hub namespace."""

    def __init__(self, topo: Topology, bin_dir: Path, root: Path, work: Path, extra_args=()):
        self.topo = topo
        port_file = work / "hub.port"
        port_file.unlink(missing_ok=True)
        self.proc = topo.popen(topo.hub, [str(bin_dir / "kernelhub-test-hub"), "--root", str(root), "--bind",
                                          f"{HUB_ADDR}:0", "--port-file", str(port_file), "--test-endpoints",
                                          *extra_args], work / "hub.log")
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip().isdigit()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kernelhub serve did not start: {(work / 'hub.log').read_text()[-2000:]}")
            time.sleep(0.05)
        self.endpoint = f"http://{HUB_ADDR}:{port_file.read_text().strip()}"

    def _call(self, path: str, body: object | None = None):
        args = ["--fail-with-body"]
        if body is not None:
            args += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
        out = self.topo.curl(self.topo.hub, f"{self.endpoint}{path}", *args)
        if out.returncode != 0:
            raise RuntimeError(f"hub {path}: {out.stderr.strip()} {out.stdout[-500:]}")
        return json.loads(out.stdout)

    def requests(self) -> list[dict]:
        """The Hub's request log: method, path, status, authorization (test endpoints excluded)."""
        return [r for r in self._call("/_kernelhub/requests") if not r["path"].startswith("/_kernelhub")]

    def reset_requests(self) -> None:
        self._call("/_kernelhub/requests/reset", {})

    def set_faults(self, plan: dict) -> None:
        self._call("/_kernelhub/faults", plan)


class Site:
    """deploy/nginx/run-site-cache.sh in the site namespace, listening on SITE_ADDR."""

    def __init__(self, topo: Topology, upstream: str, cache_dir: Path, log: Path, extra_args=(),
                 port: int = SITE_PORT):
        self.topo = topo
        self.cache_dir = cache_dir
        self.upstream = upstream
        self.log = log
        self.extra_args = list(extra_args)
        self.listen = f"{SITE_ADDR}:{port}"
        self.endpoint = f"http://{self.listen}"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.proc = self.topo.popen(self.topo.site, [str(SITE_SCRIPT), "--listen", self.listen,
                                                     "--upstream", self.upstream, "--cache-dir", str(self.cache_dir),
                                                     *self.extra_args], self.log)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"site cache exited with {self.proc.returncode}: {self.log.read_text()[-3000:]}")
            # nginx answers this itself (the Hub never sees the probe).
            if self.topo.curl(self.topo.site, f"{self.endpoint}/_site-cache/health", "--fail", "-o", "/dev/null",
                              timeout=2).returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"site cache did not listen within 30 s: {self.log.read_text()[-3000:]}")
            time.sleep(0.1)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """SIGTERM: nginx's fast stop (connections in flight are cut)."""
        if self.proc is not None:
            Topology.stop(self.proc, sig)
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def cache_file(self, request_uri: str) -> Path:
        """Where nginx keeps the answer for this request (key: upstream + raw request URI,
        levels=1:2 of its md5)."""
        digest = hashlib.md5(f"{self.upstream}{request_uri}".encode()).hexdigest()
        return self.cache_dir / "objects" / digest[-1] / digest[-3:-1] / digest

    def temp_files(self) -> list[Path]:
        """Objects being written right now (use_temp_path=off: `<md5>.<n>` beside their place)."""
        return [p for p in (self.cache_dir / "objects").rglob("*.*") if p.is_file()]


class Node:
    """A kernelhubd in a node namespace, its HF_ENDPOINT at `endpoint`."""

    def __init__(self, topo: Topology, index: int, bin_dir: Path, endpoint: str, work: Path, env: dict):
        self.topo = topo
        self.ns = topo.nodes[index]
        self.bin_dir = bin_dir
        self.socket = work / f"node{index}.sock"
        self.cache = work / f"node{index}-cache"
        self.env = dict(env)
        daemon_env = dict(env, HF_ENDPOINT=endpoint)
        self.proc = topo.popen(self.ns, [str(bin_dir / "kernelhubd"), "--socket", str(self.socket),
                                         "--cache-dir", str(self.cache)], work / f"node{index}.log", env=daemon_env)
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(self.socket))
                    return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = (work / f"node{index}.log").read_text()
                    raise RuntimeError(f"kernelhubd did not listen: {log[-2000:]}")
                time.sleep(0.05)

    def client_argv(self, *args: str) -> list[str]:
        return [str(self.bin_dir / "kernelhub"), *args, "--socket", str(self.socket), "--require-daemon"]

    def kernelhub(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """`kernelhub ARGS --socket S --require-daemon`, run in this node's namespace."""
        return self.topo.run(self.ns, self.client_argv(*args), env=self.env, timeout=timeout)

    def kernelhub_async(self, log: Path, *args: str) -> tuple[subprocess.Popen, Path]:
        """The same, started in the background; stdout goes to log.out, stderr to log."""
        out = log.with_suffix(".out")
        out_file = open(out, "wb")
        proc = self.topo.popen(self.ns, self.client_argv(*args), log, env=self.env, stdout=out_file)
        out_file.close()  # the child holds its own copy
        return proc, out
