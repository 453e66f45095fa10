"""kernels.lock both ways with the official `kernels` 0.17 library, against `kernelhub serve`:
`kernels lock` and `kernelhub lock` write the same bytes (transitive kernel-depends included),
`kernelhub download --lockfile` reads what `kernels lock` wrote, and `kernels download` /
`kernels.load_kernel(lockfile=...)` work offline on a cache that `kernelhub download --lockfile`
filled. Also kernelhub's own rules: the trust decision for every transitive dependency, cycle
detection, legacy per-variant hashes checked before any byte is downloaded and offline."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (FIXTURE_SRC, HUB_ROOT, KERNEL, KERNELHUB, HubServer, check_fixture_relu,
                      run_kernelhub, variant_name)

KERNELS_CLI = [str(Path(sys.executable).parent / "kernels")]  # the venv's console script


def publish(store, repo: str, deps: list[dict], tmp_path_factory) -> None:
    """Publishes the relu fixture build as `repo` v1 with metadata.json `kernel-depends` =
    deps (metadata.json is outside the per-file digest, so the build stays valid)."""
    src = tmp_path_factory.mktemp("src")
    shutil.copytree(FIXTURE_SRC / f"{KERNEL}-v1" / "build", src / "build")
    meta_path = src / "build" / variant_name() / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["kernel-depends"] = deps
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True))
    r = subprocess.run([str(KERNELHUB), "publish", "--root", str(store), "--repo", repo,
                        "--branch", "v1", str(src)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def dep(repo: str, version: int = 1) -> dict:
    return {"repo-id": repo, "version": version}


@pytest.fixture(scope="module")
def store_hub(tmp_path_factory):
    """The fixture store plus kernels that depend on others (one on an untrusted publisher,
    two on each other), served on loopback; HF_ENDPOINT points at it."""
    store = tmp_path_factory.mktemp("store") / "hub"
    shutil.copytree(HUB_ROOT, store, symlinks=True)
    publish(store, "kernels-community/uses-relu", [dep(f"kernels-community/{KERNEL}")],
            tmp_path_factory)
    publish(store, "kernels-community/uses-sage", [dep(f"SageAttention/{KERNEL}")],
            tmp_path_factory)
    publish(store, "kernels-community/cycle-a", [dep("kernels-community/cycle-b")],
            tmp_path_factory)
    publish(store, "kernels-community/cycle-b", [dep("kernels-community/cycle-a")],
            tmp_path_factory)
    server = HubServer(tmp_path_factory.mktemp("serve"), root=store)
    os.environ["HF_ENDPOINT"] = server.endpoint
    yield server, store
    server.stop()


def project(tmp_path, deps: dict[str, int], manifest: str = "pyproject.toml"):
    lines = [f'"{repo}" = {version}' for repo, version in deps.items()]
    head = '[project]\nname = "app"\nversion = "0.1"\n' if manifest == "pyproject.toml" else ""
    (tmp_path / manifest).write_text(head + "[tool.kernels.dependencies]\n" + "\n".join(lines) + "\n")
    return tmp_path


def kernels_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([*KERNELS_CLI, *args], env=full, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def locked_repos(lock_text: str) -> list[str]:
    return [entry["dependency"]["repo-id"] for entry in json.loads(lock_text)]


def test_lock_is_byte_identical_to_kernels_lock_with_transitive_dependencies(store_hub, tmp_path):
    proj = project(tmp_path, {"kernels-community/uses-relu": 1, "kernels-community/flash-attn2": 3})
    r = kernels_cli("lock", str(proj))
    assert r.returncode == 0, r.stderr
    theirs = (proj / "kernels.lock").read_bytes()
    ours_path = tmp_path / "kernelhub.lock"
    r = run_kernelhub("lock", str(proj), "-o", str(ours_path))
    assert r.returncode == 0, r.stderr
    assert ours_path.read_bytes() == theirs
    # relu is locked only because uses-relu's metadata.json depends on it.
    assert locked_repos(theirs.decode()) == [
        "kernels-community/flash-attn2", f"kernels-community/{KERNEL}", "kernels-community/uses-relu"]


def test_kernelhub_toml_declares_the_same_table(store_hub, tmp_path):
    proj = project(tmp_path, {f"kernels-community/{KERNEL}": 1}, manifest="kernelhub.toml")
    r = run_kernelhub("lock", str(proj))
    assert r.returncode == 0, r.stderr
    assert locked_repos((proj / "kernels.lock").read_text()) == [f"kernels-community/{KERNEL}"]


def test_every_transitive_dependency_passes_the_trust_rule(store_hub, tmp_path):
    proj = project(tmp_path, {"kernels-community/uses-sage": 1})
    refused = run_kernelhub("lock", str(proj))
    assert refused.returncode == 3, refused.stderr
    assert "SageAttention" in refused.stderr and "DIFFUSERS_TRUST_REMOTE_KERNELS" in refused.stderr
    assert "a dependency of kernels-community/uses-sage" in refused.stderr
    assert not (proj / "kernels.lock").exists()
    allowed = run_kernelhub("lock", str(proj), env={"DIFFUSERS_TRUST_REMOTE_KERNELS": "1"})
    assert allowed.returncode == 0, allowed.stderr
    assert f"SageAttention/{KERNEL}" in locked_repos((proj / "kernels.lock").read_text())
    disabled = run_kernelhub("lock", str(proj), "-o", str(tmp_path / "x.lock"),
                             env={"DIFFUSERS_TRUST_REMOTE_KERNELS": "1",
                                  "DIFFUSERS_DISABLE_REMOTE_CODE": "1"})
    assert disabled.returncode == 3 and "DIFFUSERS_DISABLE_REMOTE_CODE" in disabled.stderr


def test_a_dependency_cycle_is_an_error_naming_it(store_hub, tmp_path):
    proj = project(tmp_path, {"kernels-community/cycle-a": 1})
    r = run_kernelhub("lock", str(proj))
    assert r.returncode != 0
    assert ("cyclic kernel dependency: kernels-community/cycle-a -> kernels-community/cycle-b -> "
            "kernels-community/cycle-a") in r.stderr
    assert not (proj / "kernels.lock").exists()


@pytest.fixture(scope="module")
def kernels_written_lock(store_hub, tmp_path_factory):
    proj = project(tmp_path_factory.mktemp("proj"), {"kernels-community/uses-relu": 1})
    r = kernels_cli("lock", str(proj))
    assert r.returncode == 0, r.stderr
    return proj


@pytest.fixture(scope="module")
def locked_cache(kernels_written_lock, tmp_path_factory):
    """A cache filled only by `kernelhub download --lockfile` from the lock `kernels` wrote."""
    cache = tmp_path_factory.mktemp("locked-cache")
    # Every variant (the fixtures have CPU and CUDA builds), as `kernels download
    # --all-variants` below wants them.
    r = run_kernelhub("download", "--lockfile", str(kernels_written_lock / "kernels.lock"),
                      "--cache-dir", str(cache), "--json", "--all-variants")
    assert r.returncode == 0, r.stderr
    fetched = json.loads(r.stdout)
    locks = {e["dependency"]["repo-id"]: e["lock"]["commit"]
             for e in json.loads((kernels_written_lock / "kernels.lock").read_text())}
    assert {k["repo"]: k["commit"] for k in fetched} == locks
    return cache


def test_a_locked_commit_is_fetched_even_after_the_branch_moves(store_hub, kernels_written_lock,
                                                                 locked_cache, tmp_path_factory):
    _, store = store_hub
    locks = {e["dependency"]["repo-id"]: e["lock"]["commit"]
             for e in json.loads((kernels_written_lock / "kernels.lock").read_text())}
    publish(store, "kernels-community/uses-relu", [dep(f"kernels-community/{KERNEL}")],
            tmp_path_factory)  # v1 now points at a newer commit
    cache = tmp_path_factory.mktemp("after-move")
    r = run_kernelhub("download", "--lockfile", str(kernels_written_lock / "kernels.lock"),
                      "--cache-dir", str(cache), "--json")
    assert r.returncode == 0, r.stderr
    assert {k["repo"]: k["commit"] for k in json.loads(r.stdout)} == locks
    floating = run_kernelhub("download", "kernels-community/uses-relu", "--version", "1",
                             "--cache-dir", str(cache), "--json")
    assert json.loads(floating.stdout)["commit"] != locks["kernels-community/uses-relu"]


def blobs_of(cache: Path) -> dict[str, int]:
    return {str(p.relative_to(cache)): p.stat().st_mtime_ns for p in cache.glob("*/blobs/*")}


def test_kernels_download_project_finds_everything_in_the_kernelhub_cache(kernels_written_lock,
                                                                          locked_cache):
    # `kernels download` lists the tree even when the files are cached, so it runs online;
    # every file it needs is already there, written by kernelhub, and none is written again.
    # --all-variants: both sides hold every variant (kernels alone would select for the venv
    # torch's CUDA backend).
    before = blobs_of(locked_cache)
    assert before
    r = kernels_cli("download", str(kernels_written_lock), "--all-variants",
                    env={"HF_HUB_CACHE": str(locked_cache), "KERNELS_CACHE": str(locked_cache)})
    assert r.returncode == 0, r.stderr
    assert blobs_of(locked_cache) == before


def test_legacy_lock_hashes_are_checked_before_download_and_offline(store_hub, tmp_path):
    proj = project(tmp_path, {f"kernels-community/{KERNEL}": 1})
    legacy = tmp_path / "legacy.lock"
    r = run_kernelhub("lock", str(proj), "--format", "legacy", "-o", str(legacy))
    assert r.returncode == 0, r.stderr
    entries = json.loads(legacy.read_text())
    assert list(entries[0]) == ["repo_id", "sha", "variants"]
    assert entries[0]["variants"][variant_name()]["hash_type"] == "git_lfs_concat"

    cache = tmp_path / "cache"
    ok = run_kernelhub("download", "--lockfile", str(legacy), "--cache-dir", str(cache))
    assert ok.returncode == 0, ok.stderr
    offline = run_kernelhub("download", "--lockfile", str(legacy), "--cache-dir", str(cache),
                            env={"HF_HUB_OFFLINE": "1"})
    assert offline.returncode == 0, offline.stderr

    hash_ = entries[0]["variants"][variant_name()]["hash"]
    entries[0]["variants"][variant_name()]["hash"] = "sha256-" + "0" * 64
    tampered = tmp_path / "tampered.lock"
    tampered.write_text(json.dumps(entries, indent=2))
    assert hash_ != entries[0]["variants"][variant_name()]["hash"]
    for env in ({"HF_HUB_OFFLINE": "1"}, {}):
        bad = run_kernelhub("download", "--lockfile", str(tampered), "--cache-dir", str(cache),
                            env=env)
        assert bad.returncode == 7 and "hash_mismatch" in bad.stderr, bad.stderr
        assert bad.stdout == ""  # nothing handed out
    fresh = tmp_path / "fresh"
    bad = run_kernelhub("download", "--lockfile", str(tampered), "--cache-dir", str(fresh))
    assert bad.returncode == 7
    blobs = fresh / f"kernels--kernels-community--{KERNEL}" / "blobs"
    assert not blobs.exists() or not any(blobs.iterdir()), "refused before any download"


# Last: it imports torch and kernels into this process with the offline environment.
def test_kernels_load_kernel_with_lockfile_offline(kernels_written_lock, locked_cache, store_hub):
    store_hub[0].stop()
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HUB_CACHE"] = str(locked_cache)
    os.environ["KERNELS_CACHE"] = str(locked_cache)
    from kernels import load_kernel

    kernel = load_kernel(f"kernels-community/{KERNEL}",
                         lockfile=kernels_written_lock / "kernels.lock", backend="cpu")
    check_fixture_relu(kernel, locked_cache)
