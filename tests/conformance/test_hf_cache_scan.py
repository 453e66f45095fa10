"""huggingface_hub's own cache tools see a clean cache where kernelhub wrote one: `hf cache ls`
(and scan_cache_dir) on a kernelhubd cache and on the CLI's embedded cache list the kernel
with its ref and report no warning. The daemon keeps its instance lock under .locks/, which
huggingface_hub skips, and removes a free root `.kernelhubd.lock` left by earlier builds."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BIN_DIR, KERNEL, run_kernelhub

REPO_ID = f"kernels-community/{KERNEL}"
HF = Path(sys.executable).with_name("hf")  # huggingface_hub's CLI, from the same venv


@pytest.fixture(scope="module")
def daemon_cache(hub, tmp_path_factory):
    work = tmp_path_factory.mktemp("daemon")
    cache, socket = work / "cache", work / "kh.sock"
    cache.mkdir()
    (cache / ".kernelhubd.lock").touch()  # what an earlier build left at the cache root
    env = dict(os.environ, HF_ENDPOINT=hub.endpoint)
    with open(work / "kernelhubd.log", "wb") as log:
        daemon = subprocess.Popen([str(BIN_DIR / "kernelhubd"), "--socket", str(socket),
                                   "--cache-dir", str(cache)],
                                  env=env, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not socket.exists():
            assert daemon.poll() is None, (work / "kernelhubd.log").read_text()
            assert time.monotonic() < deadline, "kernelhubd did not listen within 20 s"
            time.sleep(0.05)
        r = run_kernelhub("download", REPO_ID, "--version", "1", "--socket", str(socket),
                          "--require-daemon", env={"HF_ENDPOINT": hub.endpoint})
        assert r.returncode == 0, f"download through kernelhubd failed:\n{r.stdout}\n{r.stderr}"
    finally:
        daemon.terminate()
        daemon.wait(timeout=20)
    return cache


@pytest.fixture(scope="module")
def cli_cache(hub, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cli-cache")
    r = run_kernelhub("download", REPO_ID, "--version", "1", "--cache-dir", str(cache),
                      env={"HF_ENDPOINT": hub.endpoint})
    assert r.returncode == 0, f"kernelhub download failed:\n{r.stdout}\n{r.stderr}"
    return cache


def hf_cache_ls(cache: Path) -> tuple[list, str]:
    assert HF.exists(), f"huggingface_hub's CLI is not installed next to {sys.executable}"
    r = subprocess.run([str(HF), "cache", "ls", "--cache-dir", str(cache), "--show-warnings",
                        "--format", "json"], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL, env=dict(os.environ, NO_COLOR="1"))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stdout + r.stderr


@pytest.mark.parametrize("which", ["daemon_cache", "cli_cache"])
def test_hf_cache_ls_lists_the_kernel_without_warnings(which, request):
    cache = request.getfixturevalue(which)
    repos, output = hf_cache_ls(cache)
    assert "arning" not in output, output
    assert [(r["repo_id"], r["repo_type"], r["refs"]) for r in repos] == \
        [(REPO_ID, "kernel", ["v1"])], output

    from huggingface_hub import scan_cache_dir
    info = scan_cache_dir(cache)
    assert info.warnings == [], info.warnings
    assert [r.repo_id for r in info.repos] == [REPO_ID]
    assert not info.incomplete_files


def test_daemon_instance_lock_is_under_locks(daemon_cache):
    assert (daemon_cache / ".locks" / "kernelhubd.lock").is_file()
    assert not (daemon_cache / ".kernelhubd.lock").exists()
