#!/usr/bin/env python3
"""Issue 25 benchmarks: what kernelize costs, against Python `kernels` in the same run.

  * Per-layer overhead on a tiny input (1 x 16, fp32, one thread): a kernelized SiluAndMul
    against the direct call of activation's silu_and_mul op (output allocated, op called
    through the dispatcher). kernelhub: kh_layers_bench; kernels: the same fixture kernel
    through kernels.kernelize (LocalLayerRepository) against `ops.silu_and_mul(out, x)`.
    Goal: kernelhub adds < 1 us per call.
  * A Python layer (liger-kernels' LigerRMSNorm, plain torch in the fixture) bound to the C++
    RMSNorm, against ATen's RMSNorm: what a Python layer costs per call.
  * The Llama block of tests/torch_support/llama_block.hpp (hidden 256, 4 heads, seq 64, fp32,
    one thread), plain ATen vs kernelized (rmsnorm, activation, rotary): ms per forward.
  Under inference mode (c10::InferenceMode; torch.inference_mode for kernels).

Run with the project venv after a build:
  .venv/bin/python bench/layers_bench.py [--build build] [--check]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def kernels_overhead(src: Path, iterations: int, rounds: int) -> dict:
    """kernels.kernelize's SiluAndMul (the same fixture build) against its op."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="kh-bench-hf-"))
    import torch
    import torch.nn as nn
    from kernels import (LocalLayerRepository, Mode, kernelize, use_kernel_forward_from_hub,
                         use_kernel_mapping)

    torch.set_num_threads(1)

    @use_kernel_forward_from_hub("SiluAndMul")
    class SiluAndMul(nn.Module):
        def forward(self, x):
            d = x.shape[-1] // 2
            return nn.functional.silu(x[..., :d]) * x[..., d:]

    class CpuLayerRepository(LocalLayerRepository):
        """The CPU variant: LocalLayerRepository.load() lets kernels pick torch's build
        (torch-cuda with this venv's CUDA torch, whose ops take CUDA tensors only)."""

        def load(self):
            from kernels import get_local_kernel
            return getattr(get_local_kernel(self._repo_path, backend="cpu").layers, self.layer_name)

    mapping = {"SiluAndMul": {"cpu": CpuLayerRepository(
        repo_path=src / "activation-v1", layer_name="SiluAndMul")}}
    model = SiluAndMul()
    with use_kernel_mapping(mapping, inherit_mapping=False):
        kernelize(model, mode=Mode.INFERENCE, device="cpu")
    ops = sys.modules[model.forward.__func__.__module__.rsplit(".", 1)[0]].ops
    x = torch.randn(1, 16)

    def direct():
        out = torch.empty(1, 8)
        ops.silu_and_mul(out, x)
        return out

    def layer():
        return model(x)

    def per_call(fn):
        start = time.perf_counter_ns()
        for _ in range(iterations):
            fn()
        return (time.perf_counter_ns() - start) / iterations

    d, k, added = [], [], []
    with torch.inference_mode():  # as kh_layers_bench runs
        assert torch.allclose(direct(), layer())
        for _ in range(iterations):
            direct()
            layer()
        for _ in range(rounds):
            d.append(per_call(direct))
            k.append(per_call(layer))
            added.append(k[-1] - d[-1])
    return {"direct_ns": statistics.median(d), "kernelized_ns": statistics.median(k),
            "added_ns": statistics.median(added)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", type=Path, default=REPO_ROOT / "build")
    parser.add_argument("--smoke", action="store_true", help="few iterations, few rounds")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args()
    iterations, rounds, block = (200, 3, 3) if args.smoke else (5000, 31, 50)
    src = args.build / "fixtures" / "src"
    tool = args.build / "bin" / "kh_layers_bench"

    log("kernelhub: kh_layers_bench")
    env = dict(os.environ, KERNELHUB_PYTHON=os.environ.get("KERNELHUB_PYTHON", sys.executable))
    run = subprocess.run([str(tool), str(src), str(iterations), str(rounds), str(block)],
                         capture_output=True, text=True, env=env, timeout=900)
    if run.returncode != 0:
        print(run.stderr, file=sys.stderr)
        print("| kh_layers_bench | FAILED |")
        return 1
    ours = json.loads(run.stdout)
    log("kernels: kernelize of the same fixture")
    theirs = kernels_overhead(src, iterations, rounds)

    layer = ours["layer"]
    python_layer = ours["python_layer"]
    blk = ours["block"]
    goal_met = layer["added_ns"] < 1000
    print("| layer (1 x 16 fp32, one thread) | direct op call | kernelized layer | added per call |")
    print("|---|---|---|---|")
    print(f"| kernelhub SiluAndMul (native adapter) | {layer['direct_ns']:.0f} ns | "
          f"{layer['kernelized_ns']:.0f} ns | {layer['added_ns']:.0f} ns |")
    print(f"| kernels SiluAndMul (Python kernelize) | {theirs['direct_ns']:.0f} ns | "
          f"{theirs['kernelized_ns']:.0f} ns | {theirs['added_ns']:.0f} ns |")
    print(f"| kernelhub LigerRMSNorm (Python layer) vs ATen RMSNorm | {python_layer['aten_ns']:.0f} ns | "
          f"{python_layer['kernelized_ns']:.0f} ns | {python_layer['added_ns']:.0f} ns |")
    print()
    print("| Llama block (hidden 256, seq 64, fp32, one thread) | ATen | kernelized | ratio |")
    print("|---|---|---|---|")
    print(f"| forward | {blk['aten_ns'] / 1e6:.3f} ms | {blk['kernelized_ns'] / 1e6:.3f} ms | "
          f"{blk['ratio']:.3f} |")
    print()
    print(f"kernelhub's added cost per layer call: {layer['added_ns']:.0f} ns (goal < 1000 ns): "
          f"{'met' if goal_met else 'MISSED'}; kernels adds {theirs['added_ns']:.0f} ns "
          f"({theirs['added_ns'] / max(layer['added_ns'], 1.0):.1f}x kernelhub's). "
          f"Block outputs differ by at most {blk['max_abs_difference']:.2e}.")
    return 1 if args.check and not goal_met else 0


if __name__ == "__main__":
    sys.exit(main())
