"""(d) What the anchor does about untrusted publishers: `kernels` refuses SageAttention/<name>
unless trust_remote_code opts in, and refuses before downloading anything. (kernelhub's own
rule uses DIFFUSERS_TRUST_REMOTE_KERNELS instead; see test_cli_download_offline.py.)

Its own process: the accepted SageAttention copy has the same ops namespace as
kernels-community v1, and one process can register a namespace only once."""

import pytest

from conftest import KERNEL


def test_kernels_refuses_untrusted_publisher_without_trust_remote_code(hub, hf_cache):
    from kernels import get_kernel

    repo_id = f"SageAttention/{KERNEL}"
    with pytest.raises(ValueError, match="trust_remote_code") as err:
        get_kernel(repo_id, version=1, backend="cpu")
    assert repo_id in str(err.value)
    assert not (hf_cache / f"kernels--SageAttention--{KERNEL}").exists(), \
        "the refusal must come before any download"


def test_kernels_accepts_untrusted_publisher_with_trust_remote_code(hub, hf_cache):
    import torch
    from kernels import get_kernel

    kernel = get_kernel(f"SageAttention/{KERNEL}", version=1, backend="cpu", trust_remote_code=True)
    x = torch.randn(3, 4)
    out = torch.empty_like(x)
    kernel.relu(out, x)
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)
