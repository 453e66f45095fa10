"""kernelhubd --http: the daemon as the host's local Hub for the official Python clients, and
its Prometheus /metrics, read with the reference parser (prometheus_client).

16 Python processes with HF_ENDPOINT at the daemon load the same cold kernel with
`kernels.get_kernel` at once: every one succeeds and the Hub sees one GET per file. An org the
admin does not trust is refused over HTTP even with trust_remote_code=True, and the refusal
says why. The counters move as requests are made, on /metrics and `status --prometheus`.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import BIN_DIR, HubServer, run_kernelhub, variant_name

KERNELHUBD = BIN_DIR / "kernelhubd"
PROCESSES = 16

# Each process imports first, then waits for the start file, so the 16 fetches overlap.
LOADER = r"""
import sys, time
from pathlib import Path
import torch, kernels
start = Path(sys.argv[1])
deadline = time.monotonic() + 120
while not start.exists() and time.monotonic() < deadline:
    time.sleep(0.005)
kernel = kernels.get_kernel(sys.argv[2], version=1, backend="cpu",
                           trust_remote_code=sys.argv[3] == "trust")
x = torch.randn(4, 10)
out = torch.empty_like(x)
kernel.relu(out, x)
assert torch.equal(out, torch.relu(x)), "the kernel computed something else"
print("OK", kernel.fixture_version(), flush=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(text: str) -> dict:
    """(sample name, frozen labels) -> value, parsed by prometheus_client."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(parsed: dict, name: str, **labels) -> float:
    return parsed[(name, tuple(sorted(labels.items())))]


class Daemon:
    def __init__(self, work: Path, upstream: str):
        self.socket = work / "kh.sock"
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = work / "kernelhubd.log"
        env = dict(os.environ, HF_ENDPOINT=upstream, KERNELHUB_LOG="info")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(KERNELHUBD), "--socket", str(self.socket), "--cache-dir", str(work / "cache"),
             "--http", f"127.0.0.1:{self.port}"],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.metrics_text()
                break
            except OSError:
                assert self.proc.poll() is None, self.log_path.read_text()
                assert time.monotonic() < deadline, "kernelhubd --http did not answer in 20 s"
                time.sleep(0.05)

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"{self.endpoint}/metrics", timeout=5) as r:
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            return r.read().decode()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self._log.close()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    hub = HubServer(tmp_path_factory.mktemp("serve"), test_endpoints=True)
    daemon = Daemon(tmp_path_factory.mktemp("daemon"), hub.endpoint)
    yield hub, daemon, tmp_path_factory
    daemon.stop()
    hub.stop()


def hub_requests(hub: HubServer) -> list:
    with urllib.request.urlopen(f"{hub.endpoint}/_kernelhub/requests", timeout=5) as r:
        return json.load(r)


def run_loaders(work: Path, endpoint: str, repo: str, count: int, trust: bool) -> list:
    start = work / "start"
    procs = []
    for i in range(count):
        cache = work / f"hf-cache-{i}"
        env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_CACHE=str(cache),
                   KERNELS_CACHE=str(cache), HF_HOME=str(work / f"hf-home-{i}"))
        procs.append(subprocess.Popen(
            [sys.executable, "-c", LOADER, str(start), repo, "trust" if trust else "no"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL))
    time.sleep(1.0)  # most have imported torch by now; the rest join late, which is fine
    start.touch()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        results.append((p.returncode, out, err))
    return results


def test_sixteen_processes_share_one_download(setup):
    hub, daemon, factory = setup
    before = metrics(daemon.metrics_text())
    results = run_loaders(factory.mktemp("loaders"), daemon.endpoint, "kernels-community/relu",
                          PROCESSES, trust=False)
    failures = [r for r in results if r[0] != 0 or r[1].split() != ["OK", "1"]]
    assert not failures, failures[0][2][-3000:]

    # One upstream GET per file of the variant, for all 16 processes together.
    variant = variant_name()
    prefix = f"build/{variant}/"
    gets = Counter()
    for r in hub_requests(hub):
        if r["method"] == "GET" and "/resolve/" in r["path"] and prefix in r["path"]:
            gets[r["path"].split(prefix, 1)[1]] += 1
    assert gets, "the Hub saw no file download at all"
    assert all(n == 1 for n in gets.values()), gets
    api_calls = sum(1 for r in hub_requests(hub) if r["path"].startswith("/api/"))
    print(f"\n{PROCESSES} processes: {len(gets)} files, one GET each; {api_calls} upstream API "
          f"calls in all")

    after = metrics(daemon.metrics_text())
    assert value(after, "kernelhub_http_requests_total") > value(before, "kernelhub_http_requests_total") + PROCESSES
    assert value(after, "kernelhub_flights_total") >= 1
    assert value(after, "kernelhub_cache_misses_total") == 1  # one flight downloaded the files
    assert value(after, "kernelhub_upstream_bytes_total") > 0
    assert value(after, "kernelhub_flight_duration_seconds_count") == value(after, "kernelhub_flights_total")
    assert value(after, "kernelhub_flights_in_flight") == 0
    assert value(after, "kernelhub_up") == 1


def test_untrusted_org_refused_over_http_despite_trust_remote_code(setup):
    hub, daemon, factory = setup
    before = metrics(daemon.metrics_text())
    results = run_loaders(factory.mktemp("untrusted"), daemon.endpoint, "SageAttention/relu", 1,
                          trust=True)
    code, out, err = results[0]
    assert code != 0, out
    assert "admin policy alone decides trust over HTTP" in err, err[-3000:]
    assert not any("SageAttention" in r["path"] for r in hub_requests(hub)), \
        "an untrusted repo reached the Hub"
    after = metrics(daemon.metrics_text())
    assert value(after, "kernelhub_refusals_total", decision="trust") > \
        value(before, "kernelhub_refusals_total", decision="trust")
    assert value(after, "kernelhub_errors_total", **{"class": "untrusted_publisher"}) >= 1
    # The refusal is logged once per request, with the org and the client, at warning level.
    assert "refused SageAttention/relu for http 127.0.0.1" in daemon.log_path.read_text()


def test_status_prometheus_matches_the_daemon(setup):
    hub, daemon, factory = setup
    done = run_kernelhub("status", "--prometheus", "--socket", str(daemon.socket),
                         "--require-daemon")
    assert done.returncode == 0, done.stderr
    parsed = metrics(done.stdout)
    assert value(parsed, "kernelhub_up") == 1
    assert value(parsed, "kernelhub_flights_total") == \
        value(metrics(daemon.metrics_text()), "kernelhub_flights_total")
    # No daemon: a textfile collector must learn that, not keep the last file.
    down = run_kernelhub("status", "--prometheus", "--socket", str(factory.mktemp("none") / "s"))
    assert down.returncode == 0, down.stderr
    assert value(metrics(down.stdout), "kernelhub_up") == 0


def test_http_listener_is_loopback_only(tmp_path):
    done = subprocess.run([str(KERNELHUBD), "--socket", str(tmp_path / "s"), "--cache-dir",
                           str(tmp_path / "c"), "--http", "0.0.0.0:8765"],
                          capture_output=True, text=True, timeout=20)
    assert done.returncode != 0
    assert "loopback only" in done.stderr
