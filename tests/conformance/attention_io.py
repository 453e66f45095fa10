"""Tensors to and from kh_attention_tool: raw little-endian files named in its spec.json."""
import json
import subprocess

import torch

from conftest import BIN_DIR

TOOL = BIN_DIR / "kh_attention_tool"

_DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16",
           torch.bool: "bool", torch.int64: "int64"}


def write(tmp_path, name, tensor):
    path = tmp_path / f"{name}.bin"
    raw = tensor.contiguous()
    if raw.dtype in (torch.bfloat16, torch.float16):
        raw = raw.view(torch.int16)
    path.write_bytes(raw.numpy().tobytes())
    return {"file": str(path), "shape": list(tensor.shape), "dtype": _DTYPES[tensor.dtype]}


def read(path, dtype, shape):
    raw = torch.frombuffer(bytearray(path.read_bytes()),
                           dtype=torch.int16 if dtype in (torch.bfloat16, torch.float16) else dtype)
    return (raw.view(dtype) if raw.dtype != dtype else raw).reshape(shape)


def run_tool(tmp_path, spec):
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    run = subprocess.run([str(TOOL), str(tmp_path / "spec.json")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
