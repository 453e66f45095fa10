"""(a) huggingface_hub.snapshot_download against `kernelhub serve` fetches the published
kernel repo byte for byte, into a standard HF cache layout."""

import re
from pathlib import Path

from conftest import KERNEL, files_under, fixture_variant_dir, variant_name


def _repo_folder(cache: Path, repo_id: str) -> Path:
    return cache / ("kernels--" + repo_id.replace("/", "--"))


def test_snapshot_download_v1_matches_fixture_bytes(hub, hf_cache):
    from huggingface_hub import snapshot_download

    repo_id = f"kernels-community/{KERNEL}"
    snapshot = Path(snapshot_download(repo_id, repo_type="kernel", revision="v1"))

    got = files_under(snapshot / "build" / variant_name())
    want = files_under(fixture_variant_dir(1))
    assert sorted(got) == sorted(want)
    for rel, data in want.items():
        assert got[rel] == data, f"{rel} differs from the fixture build"

    # The cache is the standard one: refs/v1 holds the 40-hex commit without a newline and
    # snapshot files are relative symlinks into blobs/.
    folder = _repo_folder(hf_cache, repo_id)
    commit = (folder / "refs" / "v1").read_text()
    assert re.fullmatch(r"[0-9a-f]{40}", commit), repr(commit)
    assert snapshot == folder / "snapshots" / commit
    so = next(p for p in (snapshot / "build" / variant_name()).iterdir() if p.name.endswith(".abi3.so"))
    assert so.is_symlink() and not Path(so.readlink()).is_absolute()
    assert so.resolve().parent == (folder / "blobs").resolve()


def test_snapshot_download_v2_is_a_different_commit_with_v2_metadata(hub, hf_cache):
    import json

    from huggingface_hub import snapshot_download

    repo_id = f"kernels-community/{KERNEL}"
    v1 = Path(snapshot_download(repo_id, repo_type="kernel", revision="v1"))
    v2 = Path(snapshot_download(repo_id, repo_type="kernel", revision="v2"))
    assert v1 != v2
    meta = json.loads((v2 / "build" / variant_name() / "metadata.json").read_text())
    assert meta["version"] == 2
    assert files_under(v2 / "build" / variant_name()) == files_under(fixture_variant_dir(2))


def test_hf_hub_download_single_file_by_commit(hub, hf_cache):
    from huggingface_hub import HfApi, hf_hub_download

    repo_id = f"kernels-community/{KERNEL}"
    commit = HfApi().repo_info(repo_id, repo_type="kernel", revision="v1").sha
    path = hf_hub_download(repo_id, f"build/{variant_name()}/metadata.json",
                           repo_type="kernel", revision=commit)
    assert Path(path).read_bytes() == (fixture_variant_dir(1) / "metadata.json").read_bytes()
