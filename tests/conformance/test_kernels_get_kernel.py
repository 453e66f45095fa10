"""(b) The official `kernels` library loads our fixture from `kernelhub serve` (trust check,
version -> branch resolution, variant listing, metadata validation, import) and its ops
compute the right results."""

import os
from pathlib import Path

from conftest import KERNEL


def test_get_kernel_v1_loads_and_computes(hub, hf_cache):
    import torch
    from kernels import get_kernel

    kernel = get_kernel(f"kernels-community/{KERNEL}", version=1, backend="cpu")
    # Loaded from the cache our server filled, not from anywhere else.
    assert Path(kernel.__file__).resolve().is_relative_to(Path(os.environ["KERNELS_CACHE"]).resolve())
    assert kernel.fixture_version() == 1
    assert not hasattr(kernel, "scaled_relu")

    x = torch.randn(8, 16)
    out = torch.empty_like(x)
    kernel.relu(out, x)
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)

    half = torch.empty(8, 8)
    kernel.silu_and_mul(half, x)
    torch.testing.assert_close(half, torch.nn.functional.silu(x[:, :8]) * x[:, 8:])


def test_get_kernel_v2_is_the_v2_build(hub, hf_cache):
    import torch
    from kernels import get_kernel

    kernel = get_kernel(f"kernels-community/{KERNEL}", version=2, backend="cpu")
    assert kernel.fixture_version() == 2
    x = torch.randn(5, 6)
    torch.testing.assert_close(kernel.scaled_relu(x, 3.0), torch.relu(x) * 3.0)
