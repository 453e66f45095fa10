"""kernelhub's C++ flex equals torch's flex_attention (venv torch, CPU, eager, with
create_block_mask) on identical inputs: causal, sliding window, packed documents, prefix-LM,
an additive bias as a score_mod, GQA, head dims 64 and 128; output and lse in fp32 within
1e-5. Then the dispatcher's `flex` against Diffusers' dispatch_attention_fn(backend="flex")
with the masks Diffusers' flex accepts (its public function has no return_lse, and its flex
backend's own return_lse path is broken: the lse is checked against torch's flex above and
against a float64 reference in tests/attention).
"""
import pytest
import torch
from torch.nn.attention.flex_attention import AuxRequest, create_block_mask, flex_attention

from attention_io import read, run_tool, write

SEQ = 384  # three 128-token tiles: empty, partial and full tiles all occur
DOC_BOUNDS = (0, 100, 250, SEQ)  # three packed documents of uneven length


def documents():
    doc = torch.zeros(SEQ, dtype=torch.int64)
    for i, (start, end) in enumerate(zip(DOC_BOUNDS, DOC_BOUNDS[1:])):
        doc[start:end] = i
    return doc


def torch_mask_mod(kind):
    if kind == "causal":
        return lambda b, h, q, kv: q >= kv
    if kind == "sliding_window":
        return lambda b, h, q, kv: (q >= kv) & (q - kv < 128)
    if kind == "prefix_lm":
        return lambda b, h, q, kv: (kv < 96) | (q >= kv)
    if kind == "documents":
        doc = documents()
        return lambda b, h, q, kv: doc[q] == doc[kv]
    raise ValueError(kind)


CASES = {  # name: (mask_mod kind or None, with an additive bias, head_dim, query heads, kv heads)
    "causal_d64": ("causal", False, 64, 4, 4),
    "causal_d128": ("causal", False, 128, 4, 4),
    "sliding_window_d64": ("sliding_window", False, 64, 4, 4),
    "documents_d64": ("documents", False, 64, 4, 4),
    "prefix_lm_d128": ("prefix_lm", False, 128, 4, 4),
    "bias_d64": (None, True, 64, 4, 4),
    "causal_bias_d128": ("causal", True, 128, 4, 4),
    "gqa_causal_d64": ("causal", False, 64, 8, 2),
    "gqa_documents_d128": ("documents", False, 128, 8, 2),
}


def qkv(batch, heads_q, heads_kv, head_dim, seed=1234):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, SEQ, heads_q, head_dim, generator=gen)
    k = torch.randn(batch, SEQ, heads_kv, head_dim, generator=gen)
    v = torch.randn(batch, SEQ, heads_kv, head_dim, generator=gen)
    return q, k, v


def compare(tmp_path, spec, theirs_out, theirs_lse=None):
    spec["output"] = str(tmp_path / "out.bin")
    if theirs_lse is not None:
        spec["lse_output"] = str(tmp_path / "lse.bin")
    run_tool(tmp_path, spec)
    ours_out = read(tmp_path / "out.bin", torch.float32, theirs_out.shape)
    out_diff = (ours_out - theirs_out).abs().max().item()
    print(f"\n{spec.get('backend', 'flex_attention')}: output {out_diff:.2g}", end="")
    assert out_diff <= 1e-5, f"output differs by {out_diff:.3g}"
    if theirs_lse is not None:
        ours_lse = read(tmp_path / "lse.bin", torch.float32, theirs_lse.shape)
        lse_diff = (ours_lse - theirs_lse).abs().max().item()
        print(f", lse {lse_diff:.2g}", end="")
        assert lse_diff <= 1e-5, f"lse differs by {lse_diff:.3g}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_flex_matches_torch_flex_attention(case, tmp_path):
    kind, with_bias, head_dim, heads_q, heads_kv = CASES[case]
    batch = 2
    q, k, v = qkv(batch, heads_q, heads_kv, head_dim)
    bias = torch.randn(batch, heads_q, SEQ, SEQ, generator=torch.Generator().manual_seed(7))
    score_mod = (lambda s, b, h, qi, kv: s + bias[b, h, qi, kv]) if with_bias else None
    block_mask = (create_block_mask(torch_mask_mod(kind), batch, heads_q, SEQ, SEQ, device="cpu")
                  if kind else None)
    out, aux = flex_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                              score_mod=score_mod, block_mask=block_mask,
                              enable_gqa=heads_q != heads_kv, return_aux=AuxRequest(lse=True))
    flex = {}
    if kind:
        flex["mask_mod"] = {"kind": kind, "window": 128, "prefix": 96,
                            "documents": write(tmp_path, "doc", documents())}
    if with_bias:
        flex["bias"] = write(tmp_path, "bias", bias)
    spec = {"query": write(tmp_path, "q", q), "key": write(tmp_path, "k", k),
            "value": write(tmp_path, "v", v), "scale": None,
            "enable_gqa": heads_q != heads_kv, "flex": flex}
    compare(tmp_path, spec, out.transpose(1, 2), aux.lse)


DISPATCH_CASES = {  # what Diffusers' flex takes: bool/float 4-D masks, GQA, scale
    "bool_mask_4d": dict(mask="bool"),
    "float_mask_4d": dict(mask="float"),
    "gqa_scale": dict(heads=(8, 2), scale=0.07),
    "no_mask": dict(),
}


@pytest.mark.parametrize("case", sorted(DISPATCH_CASES))
def test_dispatcher_flex_matches_diffusers_flex(case, tmp_path):
    from diffusers.models.attention_dispatch import dispatch_attention_fn

    c = DISPATCH_CASES[case]
    heads_q, heads_kv = c.get("heads", (4, 4))
    q, k, v = qkv(1, heads_q, heads_kv, 64)
    gen = torch.Generator().manual_seed(9)
    mask = None
    if c.get("mask") == "bool":
        mask = torch.rand(1, 1, SEQ, SEQ, generator=gen) > 0.3
        mask[..., 0] = True  # every query attends something
    elif c.get("mask") == "float":
        mask = torch.randn(1, 1, SEQ, SEQ, generator=gen)
    theirs = dispatch_attention_fn(q, k, v, attn_mask=mask, scale=c.get("scale"),
                                   enable_gqa=heads_q != heads_kv, backend="flex")
    spec = {"query": write(tmp_path, "q", q), "key": write(tmp_path, "k", k),
            "value": write(tmp_path, "v", v),
            "attn_mask": write(tmp_path, "mask", mask) if mask is not None else None,
            "dropout_p": 0.0, "is_causal": False, "scale": c.get("scale"),
            "enable_gqa": heads_q != heads_kv, "backend": "flex"}
    compare(tmp_path, spec, theirs)
