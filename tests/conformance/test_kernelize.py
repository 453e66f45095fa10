"""kernelize conformance: for the same mapping, Python `kernels.kernelize` on the Python twin of
the layer fixtures and kernelhub's C++ kernelize (kh_kernelize_tool, linked against
libkernelhub) bind the same modules to the same kernel layers, and keep the same modules'
own forwards.

Both sides map to the local fixture builds (LocalLayerRepository / `path = ...`), so the
choice is the only thing compared: device types, capability intervals (the smallest that
holds the capability; kernels' `_find_capability` is set for the run), the mode fallback
chain, has_backward, and the fallback of unmapped layers. The one documented difference
(docs/layers.md): kernels takes a layer class without `has_backward` as having a backward,
kernelhub's adapters say what their ops have, so `activation` in training is bound by
kernels and left to the module's forward by kernelhub.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import BIN_DIR, FIXTURE_SRC

TOOL = BIN_DIR / "kh_kernelize_tool"

ACTIVATION = FIXTURE_SRC / "activation-v1"
DRIFT = FIXTURE_SRC / "activation-drift-v1"
RMSNORM = FIXTURE_SRC / "rmsnorm-v1"
LAYER_NORM = FIXTURE_SRC / "layer-norm-v1"
ROTARY = FIXTURE_SRC / "rotary-v2"
LIGER = FIXTURE_SRC / "liger-kernels-v3"

# The C++ tool's model: module name -> layer name (tests/conformance/kernelize_tool.cpp).
MODULES = {"norm": "RMSNorm", "ln": "LayerNorm", "act": "SiluAndMul", "silu": "SiLU",
           "gelu": "GeLU", "gelu_tanh": "GeluTanh", "fast": "FastGELU", "new": "NewGELU",
           "quick": "QuickGELU", "rotary": "rotary_pos_emb"}


def twin_model():
    """The same modules in Python, marked like transformers marks its layers."""
    from kernels import use_kernel_forward_from_hub

    def tensor_layer(name, **attributes):
        @use_kernel_forward_from_hub(name)
        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                for key, value in attributes.items():
                    setattr(self, key, value)

            def forward(self, x):
                return x

        return Layer()

    @use_kernel_forward_from_hub("rotary_pos_emb")
    class Rotary(nn.Module):
        def forward(self, q, k, cos, sin, unsqueeze_dim=1):
            return q, k

    model = nn.Module()
    weight = nn.Parameter(torch.ones(32))
    model.norm = tensor_layer("RMSNorm", weight=weight, variance_epsilon=1e-6)
    model.ln = tensor_layer("LayerNorm", weight=nn.Parameter(torch.ones(32)), variance_epsilon=1e-5)
    for module, layer in MODULES.items():
        if module not in ("norm", "ln", "rotary"):
            setattr(model, module, tensor_layer(layer))
    model.rotary = Rotary()
    return model


def python_choice(mapping, mode, device, capability):
    """{module: (kernel stem, layer class) or None} after kernels.kernelize."""
    import kernels.layer.repos as repos
    from kernels import (CUDAProperties, Device, LocalLayerRepository, Mode, get_local_kernel,
                         kernelize, use_kernel_mapping)

    class CpuLayerRepository(LocalLayerRepository):
        """The CPU build, as the C++ side loads on this GPU-less host: LocalLayerRepository
        lets kernels pick torch's build (torch-cuda with this CUDA torch), and the drift
        fixture has no CUDA build."""

        def load(self):
            return getattr(get_local_kernel(self._repo_path, backend="cpu").layers, self.layer_name)

    modes = {"fallback": Mode.FALLBACK, "inference": Mode.INFERENCE, "training": Mode.TRAINING,
             "inference+torch_compile": Mode.INFERENCE | Mode.TORCH_COMPILE,
             "training+torch_compile": Mode.TRAINING | Mode.TORCH_COMPILE}
    table = {}
    for entry in mapping:
        key = entry["device"]
        if "capability" in entry:
            low, high = entry["capability"]
            key = Device(type=entry["device"],
                         properties=CUDAProperties(min_capability=low, max_capability=high))
        repo = CpuLayerRepository(repo_path=entry["path"], layer_name=entry["layer"])
        table.setdefault(entry["name"], {}).setdefault(key, {})[
            modes[entry.get("mode", "fallback")]] = repo
    if capability is not None:
        repos._find_capability = lambda: capability
    model = twin_model()
    with use_kernel_mapping(table, inherit_mapping=False):
        kernelize(model, mode=modes[mode], device=device)
    out = {}
    for name in MODULES:
        module = getattr(model, name)
        function = module.forward.__func__
        if function is type(module).forward:
            out[name] = None
        else:
            # The fixture build the class came from: <src>/<name>-v<N>/build/<variant>/layers.py
            parts = Path(sys.modules[function.__module__].__file__).parts
            build = len(parts) - 1 - parts[::-1].index("build")
            out[name] = (parts[build - 1], function.__qualname__.split(".")[0])
    return out


def cpp_choice(tmp_path, mapping, mode, device, capability):
    path = tmp_path / "layers.json"
    path.write_text(json.dumps({"layers": [{k: str(v) if k == "path" else v
                                            for k, v in e.items()} for e in mapping]}))
    argv = [str(TOOL), str(path), "--mode", mode, "--device", device]
    if capability is not None:
        argv += ["--capability", str(capability)]
    env = dict(os.environ, KERNELHUB_SOCKET=str(tmp_path / "no-daemon.sock"))
    run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=240)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert "error" not in report, report
    out = {}
    for layer in report["layers"]:
        if not layer["bound"]:
            out[layer["module"]] = None
            continue
        # "<path> (<variant>) layers.<Class>, native|python", the path <src>/<name>-v<N>
        folder = Path(layer["kernel"].split(" (")[0]).name
        out[layer["module"]] = (folder, layer["kernel"].split("layers.")[1].split(",")[0])
    return out


def entry(name, device, path, layer, **extra):
    return {"name": name, "device": device, "path": path, "layer": layer, **extra}


SCENARIOS = {
    "cpu inference, mapped and unmapped layers": (
        [entry("RMSNorm", "cpu", RMSNORM, "RMSNorm"),
         entry("LayerNorm", "cpu", LAYER_NORM, "LayerNorm"),
         entry("SiluAndMul", "cpu", ACTIVATION, "SiluAndMul"),
         entry("SiLU", "cpu", ACTIVATION, "Silu"),
         entry("FastGELU", "cpu", ACTIVATION, "FastGELU"),
         entry("GeLU", "cuda", ACTIVATION, "Gelu"),
         entry("rotary_pos_emb", "cpu", ROTARY, "apply_rotary_transformers")],
        "inference", "cpu", None, {"norm", "ln", "act", "silu", "fast", "rotary"}),
    "modes: inference picks the inference entry": (
        [entry("RMSNorm", "cpu", LAYER_NORM, "LlamaRMSNorm", mode="inference"),
         entry("RMSNorm", "cpu", RMSNORM, "RMSNorm", mode="training"),
         entry("rotary_pos_emb", "cpu", ROTARY, "apply_rotary_transformers",
               mode="inference+torch_compile")],
        "inference", "cpu", None, {"norm", "rotary"}),
    "modes: training takes training and skips inference-only entries": (
        [entry("RMSNorm", "cpu", LAYER_NORM, "LlamaRMSNorm", mode="inference"),
         entry("RMSNorm", "cpu", RMSNORM, "RMSNorm", mode="training"),
         entry("rotary_pos_emb", "cpu", ROTARY, "apply_rotary_transformers",
               mode="inference+torch_compile")],
        "training", "cpu", None, {"norm"}),
    "a Python layer without backward in training keeps the forward": (
        [entry("RMSNorm", "cpu", LIGER, "LigerRMSNormForwardOnly")],
        "training", "cpu", None, set()),
    "a Python layer binds for inference": (
        [entry("RMSNorm", "cpu", LIGER, "LigerRMSNorm")],
        "inference", "cpu", None, {"norm"}),
}

CUDA_INTERVALS = [entry("SiLU", "cuda", DRIFT, "Silu"),
                  entry("SiLU", "cuda", ACTIVATION, "Silu", capability=[80, 90]),
                  entry("SiLU", "cuda", ACTIVATION, "Gelu", capability=[86, 89]),
                  entry("GeLU", "cuda", ACTIVATION, "Gelu", capability=[90, 100])]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_choices(tmp_path, scenario):
    mapping, mode, device, capability, bound = SCENARIOS[scenario]
    cpp = cpp_choice(tmp_path, mapping, mode, device, capability)
    python = python_choice(mapping, mode, device, capability)
    assert cpp == python
    assert {name for name, choice in cpp.items() if choice is not None} == bound


@pytest.mark.parametrize("capability", [75, 80, 86, 90, 95])
def test_same_capability_intervals(tmp_path, capability):
    cpp = cpp_choice(tmp_path, CUDA_INTERVALS, "inference", "cuda", capability)
    python = python_choice(CUDA_INTERVALS, "inference", "cuda", capability)
    assert cpp == python
    expected_silu = {75: ("activation-drift-v1", "Silu"), 80: ("activation-v1", "Silu"),
                     86: ("activation-v1", "Gelu"), 90: ("activation-v1", "Silu"),
                     95: ("activation-drift-v1", "Silu")}[capability]
    assert cpp["silu"] == expected_silu


def test_activation_in_training_is_the_documented_difference(tmp_path):
    mapping = [entry("SiluAndMul", "cpu", ACTIVATION, "SiluAndMul")]
    cpp = cpp_choice(tmp_path, mapping, "training", "cpu", None)
    python = python_choice(mapping, "training", "cpu", None)
    assert python["act"] == ("activation-v1", "SiluAndMul")  # kernels: has_backward defaults True
    assert cpp["act"] is None  # kernelhub: activation's ops have no backward
    assert {k: v for k, v in cpp.items() if k != "act"} == \
        {k: v for k, v in python.items() if k != "act"}
