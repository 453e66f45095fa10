"""Shared pieces of the conformance tests: the official Python clients (huggingface_hub,
kernels) pointed at `kernelhub serve` on loopback, and at caches that kernelhub filled.

huggingface_hub and kernels read their environment (HF_ENDPOINT, HF_HUB_OFFLINE, caches) once,
at import. So test modules import them only inside tests, after the fixtures below have set
the environment, and each test file runs in its own process (one ctest test per file).
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("KH_BIN_DIR", REPO_ROOT / "build" / "bin"))
KERNELHUB = BIN_DIR / "kernelhub"
TEST_HUB = BIN_DIR / "kernelhub-test-hub"
HUB_ROOT = Path(os.environ.get("KH_FIXTURE_HUB", REPO_ROOT / "build" / "fixtures" / "hub"))
FIXTURE_SRC = Path(os.environ.get("KH_FIXTURE_SRC", REPO_ROOT / "build" / "fixtures" / "src"))
KERNEL = "relu"  # the fixture kernel's name (tests/fixtures/relu)

# Never reach the internet, and never touch the user's own Hub cache, token or config:
# everything below points at loopback and at per-session temp dirs.
_SESSION_HOME = Path(tempfile.mkdtemp(prefix="kh-conformance-home-"))
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
# kernels 0.17.2 passes an empty user agent when telemetry is off, and huggingface_hub 2.4.0
# then ends the User-Agent with "; ", which httpx refuses to send. An origin suffix avoids it.
os.environ["HF_HUB_USER_AGENT_ORIGIN"] = "kernelhub-conformance"
os.environ["HF_HOME"] = str(_SESSION_HOME / "hf-home")
os.environ["HF_ENDPOINT"] = "http://127.0.0.1:9"  # discard port until a server is started
for var in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "KERNELS_CACHE", "LOCAL_KERNELS",
            "DIFFUSERS_TRUST_REMOTE_KERNELS", "DIFFUSERS_DISABLE_REMOTE_CODE"):
    os.environ.pop(var, None)


def variant_names() -> list[str]:
    """Every variant folder of the fixture relu v1: the CPU one, and beside it the CUDA one."""
    return sorted(p.name for p in (FIXTURE_SRC / f"{KERNEL}-v1" / "build").iterdir())


def variant_name() -> str:
    """The CPU variant folder the fixture build produced (e.g. torch215-cxx11-cpu-x86_64-linux),
    which CPU hosts select."""
    names = [n for n in variant_names() if "-cpu-" in n]
    assert len(names) == 1, f"expected one CPU fixture variant, found {variant_names()}"
    return names[0]


def fixture_variant_dir(version: int) -> Path:
    return FIXTURE_SRC / f"{KERNEL}-v{version}" / "build" / variant_name()


def files_under(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file under root (symlinks followed), bytecode skipped."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


class HubServer:
    """`kernelhub serve --root ROOT --port 0 --port-file F` as a child process (ROOT: the
    fixture store unless given). test_endpoints: the test Hub (kernelhub-test-hub, the same
    server with /_kernelhub/{requests,faults}) instead."""

    def __init__(self, workdir: Path, root: Path = HUB_ROOT, test_endpoints: bool = False):
        server = [str(TEST_HUB), "--test-endpoints"] if test_endpoints else [str(KERNELHUB), "serve"]
        assert Path(server[0]).exists(), f"{server[0]} is not built (scripts/build.sh)"
        assert root.is_dir(), f"hub store {root} is missing (scripts/build.sh)"
        port_file = workdir / "serve.port"
        self._log = open(workdir / "serve.log", "wb")
        self.proc = subprocess.Popen(
            [*server, "--root", str(root), "--port", "0", "--port-file", str(port_file)],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            text = port_file.read_text().strip() if port_file.exists() else ""
            if text.isdigit():
                self.port = int(text)
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"kernelhub serve exited with {self.proc.returncode}: "
                                   f"{(workdir / 'serve.log').read_text()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("kernelhub serve wrote no port file within 30 s")
            time.sleep(0.05)
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@pytest.fixture(scope="session")
def hub(tmp_path_factory):
    """A running server; HF_ENDPOINT points at it (set before the clients are imported)."""
    assert "huggingface_hub" not in sys.modules, \
        "huggingface_hub was imported before HF_ENDPOINT was set; import it inside tests"
    server = HubServer(tmp_path_factory.mktemp("serve"))
    os.environ["HF_ENDPOINT"] = server.endpoint
    yield server
    server.stop()


@pytest.fixture(scope="session")
def hf_cache(tmp_path_factory):
    """An empty cache that both huggingface_hub (HF_HUB_CACHE) and kernels (KERNELS_CACHE) use."""
    cache = tmp_path_factory.mktemp("hf-cache")
    os.environ["HF_HUB_CACHE"] = str(cache)
    os.environ["KERNELS_CACHE"] = str(cache)
    return cache


def check_fixture_relu(kernel, cache: Path) -> None:
    """A loaded fixture relu kernel: it comes from `cache`, is version 1, and computes relu."""
    import torch

    assert Path(kernel.__file__).resolve().is_relative_to(cache.resolve())
    assert kernel.fixture_version() == 1
    x = torch.randn(4, 10)
    out = torch.empty_like(x)
    kernel.relu(out, x)
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)


def run_kernelhub(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([str(KERNELHUB), *args], env=full_env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
