"""Air-gapped bundles with the official `kernels` library: `kernelhub bundle create` on a host
with a Hub, `kernelhub bundle import` into an empty cache, then `kernels` loads the kernel with
HF_HUB_OFFLINE=1 and no server at all, from a cache that only the import filled."""

import json
import os
import subprocess

from conftest import (KERNEL, check_fixture_relu, files_under, fixture_variant_dir, run_kernelhub,
                      variant_name)


def test_kernels_loads_offline_from_a_cache_filled_only_by_bundle_import(hub, tmp_path):
    bundle = tmp_path / "kernels.tar.zst"
    created = run_kernelhub("bundle", "create", str(bundle), f"kernels-community/{KERNEL}",
                            "--version", "1", "--cache-dir", str(tmp_path / "online-cache"),
                            "--json")
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["blobs"] >= 3
    # `tar` reads it: a plain zstd-compressed tar with the manifest first.
    listing = subprocess.run(["tar", "--zstd", "-tf", str(bundle)], capture_output=True, text=True)
    assert listing.returncode == 0 and listing.stdout.splitlines()[0] == "kernelhub-bundle.json"

    hub.stop()  # from here on there is no Hub
    cache = tmp_path / "air-gapped-cache"
    imported = run_kernelhub("bundle", "import", str(bundle), "--cache-dir", str(cache), "--json",
                             env={"HF_ENDPOINT": "http://127.0.0.1:9"})
    assert imported.returncode == 0, imported.stderr
    [repo] = json.loads(imported.stdout)
    assert repo["refs_written"] == ["v1"]
    folder = cache / f"kernels--kernels-community--{KERNEL}"
    # .locks: the lock files (huggingface_hub's folder for them; the import held the repo).
    assert sorted(p.name for p in cache.iterdir() if p.name != ".locks") == ["CACHEDIR.TAG", folder.name]
    variant = folder / "snapshots" / repo["commit"] / "build" / variant_name()
    assert files_under(variant) == files_under(fixture_variant_dir(1))

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HUB_CACHE"] = str(cache)
    os.environ["KERNELS_CACHE"] = str(cache)
    from kernels import get_kernel

    check_fixture_relu(get_kernel(f"kernels-community/{KERNEL}", version=1, backend="cpu"), cache)
