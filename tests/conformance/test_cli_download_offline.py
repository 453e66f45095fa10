"""(c) `kernelhub download` fills a cache that the official `kernels` library then loads fully
offline (HF_HUB_OFFLINE=1, the server stopped): our cache layout is the HF layout.
Also kernelhub's own trust rule at the CLI: SageAttention needs DIFFUSERS_TRUST_REMOTE_KERNELS."""

import os
import re

import pytest

from conftest import (KERNEL, check_fixture_relu, files_under, fixture_variant_dir, run_kernelhub,
                      variant_name)


@pytest.fixture(scope="module")
def cli_cache(hub, tmp_path_factory):
    cache = tmp_path_factory.mktemp("kernelhub-cache")
    r = run_kernelhub("download", f"kernels-community/{KERNEL}", "--version", "1",
                      "--cache-dir", str(cache), env={"HF_ENDPOINT": hub.endpoint})
    assert r.returncode == 0, f"kernelhub download failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return cache


def test_download_writes_hf_layout_with_fixture_bytes(cli_cache):
    folder = cli_cache / f"kernels--kernels-community--{KERNEL}"
    commit = (folder / "refs" / "v1").read_text()
    assert re.fullmatch(r"[0-9a-f]{40}", commit), repr(commit)
    variant = folder / "snapshots" / commit / "build" / variant_name()
    assert files_under(variant) == files_under(fixture_variant_dir(1))


def test_download_refuses_untrusted_publisher_unless_opted_in(hub, cli_cache):
    repo_id = f"SageAttention/{KERNEL}"
    refused = run_kernelhub("download", repo_id, "--version", "1", "--cache-dir", str(cli_cache),
                            env={"HF_ENDPOINT": hub.endpoint})
    assert refused.returncode != 0
    assert "DIFFUSERS_TRUST_REMOTE_KERNELS" in refused.stderr and "SageAttention" in refused.stderr
    assert not (cli_cache / f"kernels--SageAttention--{KERNEL}" / "blobs").exists() or \
        not any((cli_cache / f"kernels--SageAttention--{KERNEL}" / "blobs").iterdir()), \
        "nothing may be downloaded for a refused publisher"

    accepted = run_kernelhub("download", repo_id, "--version", "1", "--cache-dir", str(cli_cache),
                             env={"HF_ENDPOINT": hub.endpoint, "DIFFUSERS_TRUST_REMOTE_KERNELS": "1"})
    assert accepted.returncode == 0, accepted.stderr
    assert (cli_cache / f"kernels--SageAttention--{KERNEL}" / "refs" / "v1").is_file()


def test_kernels_loads_kernelhub_cache_offline(hub, cli_cache):
    # Stop the server first: the load below must need no network at all.
    hub.stop()
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HUB_CACHE"] = str(cli_cache)
    os.environ["KERNELS_CACHE"] = str(cli_cache)

    from kernels import get_kernel

    check_fixture_relu(get_kernel(f"kernels-community/{KERNEL}", version=1, backend="cpu"),
                       cli_cache)
