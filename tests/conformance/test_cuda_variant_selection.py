"""The CUDA fixture variant beside the CPU one: the store holds both, kernelhub selects the CUDA
build when told the host has CUDA (--backend / KERNELHUB_BACKEND) and the CPU build otherwise,
and the official `kernels` resolver picks the same variant from the same names."""

import json
import os
from pathlib import Path

import pytest

from conftest import FIXTURE_SRC, KERNEL, run_kernelhub, variant_name, variant_names

NVIDIA_DRIVER = Path("/proc/driver/nvidia/version")


def cuda_variant_name() -> str:
    names = [n for n in variant_names() if "-cu" in n]
    assert len(names) == 1, (
        f"expected one CUDA fixture variant beside the CPU one, found {variant_names()}: "
        "the CUDA fixtures were not built (see 'CUDA fixtures' in CMake's output)")
    return names[0]


def kernels_choice(backend: str) -> str:
    """What `kernels` resolves from the fixture's build/ folder names for `backend`."""
    from kernels.variants import get_variants_local, resolve_variant

    variant, trace = resolve_variant(get_variants_local(FIXTURE_SRC / f"{KERNEL}-v1" / "build"),
                                     backend=backend)
    assert variant is not None, trace
    return variant.variant_str


def kernelhub_choice(hub, tmp_path: Path, args: tuple = (), env: dict | None = None) -> str:
    """The one variant `kernelhub download` fetched from the fixture store."""
    cache = tmp_path / "cache"
    r = run_kernelhub("download", f"kernels-community/{KERNEL}", "--version", "1", "--cache-dir",
                      str(cache), *args, env={"HF_ENDPOINT": hub.endpoint, **(env or {})})
    assert r.returncode == 0, f"kernelhub download failed ({r.returncode}):\n{r.stderr}"
    builds = list((cache / f"kernels--kernels-community--{KERNEL}" / "snapshots").glob("*/build/*"))
    assert len(builds) == 1, builds
    return builds[0].name


def test_store_has_a_cuda_variant_beside_the_cpu_one():
    cuda = cuda_variant_name()
    # Same torch, C++ ABI, CPU and OS; the backend is the nvcc's CUDA (cu130 from nvcc 13.0).
    token = cuda.split("-")[2]
    assert token.startswith("cu") and token[2:].isdigit()
    assert cuda == variant_name().replace("-cpu-", f"-{token}-", 1)
    assert set(variant_names()) == {variant_name(), cuda}
    meta = json.loads((FIXTURE_SRC / f"{KERNEL}-v1" / "build" / cuda / "metadata.json").read_text())
    assert meta["backend"] == {"type": "cuda", "archs": ["8.0", "9.0"]}
    assert meta["id"].startswith(f"_{KERNEL}_cuda_")


@pytest.mark.parametrize("backend", ["cuda", "cpu"])
def test_flag_and_environment_select_what_kernels_selects(hub, tmp_path, backend):
    expected = kernels_choice(backend)
    assert expected == (cuda_variant_name() if backend == "cuda" else variant_name())
    assert kernelhub_choice(hub, tmp_path / "flag", ("--backend", backend)) == expected
    assert kernelhub_choice(hub, tmp_path / "env", env={"KERNELHUB_BACKEND": backend}) == expected


def test_without_a_driver_the_cpu_variant_is_selected(hub, tmp_path):
    # kernels takes CUDA from torch.version.cuda alone; kernelhub also needs an NVIDIA driver,
    # so a CPU host with the CUDA wheel keeps loading the CPU build.
    assert "KERNELHUB_BACKEND" not in os.environ
    expected = kernels_choice("cuda") if NVIDIA_DRIVER.exists() else kernels_choice("cpu")
    assert kernelhub_choice(hub, tmp_path) == expected
