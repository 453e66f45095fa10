"""(h) Python-only kernels: kernelhub's embedded runtime (kh_python_kernel_tool, linked against
libkernelhub) fetches a noarch fixture kernel into a cache and runs it; the official `kernels`
library then loads the same kernel from that cache (offline) and, on identical inputs, gives
identical results. Both import the same verified files under the same module name."""

import json
import os
import subprocess

import torch

from attention_io import read, write
from conftest import BIN_DIR

TOOL = BIN_DIR / "kh_python_kernel_tool"


def run_tool(tmp_path, spec):
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ, TRITON_INTERPRET="1", KERNELHUB_SOCKET=str(tmp_path / "no-daemon.sock"))
    env.pop("HF_HUB_OFFLINE", None)  # kernelhub fetches from the test Hub
    run = subprocess.run([str(TOOL), str(tmp_path / "spec.json")], capture_output=True, text=True,
                         env=env, timeout=240)
    assert run.returncode == 0, run.stderr
    module, variant = run.stdout.split()
    return module, variant


def kernels_module(repo, version):
    """`kernels` loading `repo` from the cache kernelhub filled, with no network (huggingface_hub
    reads HF_HUB_OFFLINE when first imported, which is here)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from kernels import get_kernel
    return get_kernel(repo, version=version, backend="cpu")


def test_flash_attn4_through_kernelhub_equals_kernels(hub, hf_cache, tmp_path):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 24, 4, 64), torch.randn(2, 24, 2, 64), torch.randn(2, 24, 2, 64)
    spec = {"repo": "kernels-community/flash-attn4", "version": 0, "function": "flash_attn_func",
            "args": [], "kwargs": {"q": write(tmp_path, "q", q), "k": write(tmp_path, "k", k),
                                   "v": write(tmp_path, "v", v), "causal": True,
                                   "return_lse": True},
            "outputs": [str(tmp_path / "out.bin"), str(tmp_path / "lse.bin")]}
    module, variant = run_tool(tmp_path, spec)
    assert variant == "torch-cpu"

    fa4 = kernels_module("kernels-community/flash-attn4", 0)
    assert fa4.__name__ == module  # the same module name: the metadata id
    out, lse = fa4.flash_attn_func(q, k, v, causal=True, return_lse=True)
    assert torch.equal(read(tmp_path / "out.bin", torch.float32, out.shape), out)
    assert torch.equal(read(tmp_path / "lse.bin", torch.float32, lse.shape), lse)


def test_triton_kernel_through_kernelhub_equals_kernels(hub, hf_cache, tmp_path):
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported here
    x, y = torch.randn(4096), torch.randn(4096)
    spec = {"repo": "kernels-community/triton-axpy", "version": 1, "function": "axpy",
            "args": [1.75, write(tmp_path, "x", x), write(tmp_path, "y", y)], "kwargs": {},
            "outputs": [str(tmp_path / "out.bin")]}
    module, variant = run_tool(tmp_path, spec)
    assert variant == "torch-universal"
    axpy = kernels_module("kernels-community/triton-axpy", 1)
    assert axpy.__name__ == module
    assert torch.equal(read(tmp_path / "out.bin", torch.float32, x.shape), axpy.axpy(1.75, x, y))
