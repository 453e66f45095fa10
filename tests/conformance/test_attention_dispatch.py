"""Diffusers' dispatch_attention_fn (backend native) and kernelhub's dispatch_attention give
the same outputs on identical inputs (kh_attention_tool runs ours on the tensors written here).
"""
import subprocess

import pytest
import torch

from attention_io import TOOL, read, run_tool, write

CASES = {
    "plain": dict(shape_q=(2, 64, 4, 64), shape_kv=(2, 64, 4, 64)),
    "causal": dict(shape_q=(2, 64, 4, 64), shape_kv=(2, 64, 4, 64), is_causal=True),
    "cross_lengths": dict(shape_q=(1, 48, 4, 64), shape_kv=(1, 80, 4, 64)),
    "gqa": dict(shape_q=(2, 32, 8, 64), shape_kv=(2, 32, 2, 64), enable_gqa=True),
    "scale": dict(shape_q=(1, 32, 2, 128), shape_kv=(1, 32, 2, 128), scale=0.05),
    "padding_mask_2d": dict(shape_q=(2, 40, 4, 64), shape_kv=(2, 40, 4, 64), mask="bool2d"),
    "additive_mask_4d": dict(shape_q=(2, 24, 4, 64), shape_kv=(2, 24, 4, 64), mask="float4d"),
    "bf16_head128": dict(shape_q=(1, 64, 4, 128), shape_kv=(1, 64, 4, 128), dtype=torch.bfloat16),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_native_matches_diffusers(case, tmp_path):
    from diffusers.models.attention_dispatch import dispatch_attention_fn

    c = CASES[case]
    dtype = c.get("dtype", torch.float32)
    gen = torch.Generator().manual_seed(1234)
    q = torch.randn(c["shape_q"], generator=gen).to(dtype)
    k = torch.randn(c["shape_kv"], generator=gen).to(dtype)
    v = torch.randn(c["shape_kv"], generator=gen).to(dtype)
    batch, seq_kv = c["shape_kv"][0], c["shape_kv"][1]
    mask = None
    if c.get("mask") == "bool2d":
        lengths = torch.tensor([seq_kv, seq_kv // 2])
        mask = torch.arange(seq_kv)[None, :] < lengths[:, None]
    elif c.get("mask") == "float4d":
        mask = torch.randn(batch, 1, c["shape_q"][1], seq_kv, generator=gen).to(dtype)

    theirs = dispatch_attention_fn(q, k, v, attn_mask=mask, is_causal=c.get("is_causal", False),
                                   scale=c.get("scale"), enable_gqa=c.get("enable_gqa", False),
                                   backend="native")
    spec = {
        "query": write(tmp_path, "q", q), "key": write(tmp_path, "k", k),
        "value": write(tmp_path, "v", v),
        "attn_mask": write(tmp_path, "mask", mask) if mask is not None else None,
        "dropout_p": 0.0, "is_causal": c.get("is_causal", False), "scale": c.get("scale"),
        "enable_gqa": c.get("enable_gqa", False), "backend": "native",
        "output": str(tmp_path / "out.bin"),
    }
    run_tool(tmp_path, spec)
    ours = read(tmp_path / "out.bin", dtype, theirs.shape)
    # Both run ATen SDPA on the same libtorch: the outputs must agree to the last bits that
    # thread scheduling can change.
    tolerance = 1e-6 if dtype == torch.float32 else 1e-2
    diff = (ours.float() - theirs.float()).abs().max().item()
    assert diff <= tolerance, f"{case}: max difference {diff}"


def test_backend_names_match_diffusers():
    from diffusers.models.attention_dispatch import AttentionBackendName

    run = subprocess.run([str(TOOL), "--list-backends"], capture_output=True, text=True, check=True)
    assert run.stdout.split() == [b.value for b in AttentionBackendName]
