#!/usr/bin/env python3
"""Issue 23 benchmarks: Python-only kernels run from C++ (kernelhub::python), against the anchors,
in one run.

  * First use in a fresh process: interpreter start + import torch + fetch + import the kernel
    + one call (kh_python_bench first-use), against
    `python -c 'import torch, kernels; kernels.get_kernel(...)'` + the same call, both on the
    same warm cache with HF_HUB_OFFLINE=1 (no network for either). Whole-process wall time,
    medians over alternating runs.
  * Per call, tiny CPU attention (1 x 8 x 2 x 16, fp32, one thread):
      - kernelhub: a Python kernel's `sdpa` (ATen SDPA called from Python) from C++, against
        the native dispatch of the same shape: the added time. Goal: under 10 us.
      - kernelhub dispatch_attention(flash_4_hub) against Diffusers' dispatch_attention_fn
        (flash_4_hub) of the same Python kernel (the fixture flash-attn4 through LOCAL_KERNELS
        for both). Goal: kernelhub faster.
      - for reference: the same `sdpa` and flash_attn_func called directly in Python.

  .venv/bin/python bench/python_kernel_bench.py [--build build] [--reps 7] [--smoke]
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

SDPA_KERNEL = '''\
"""Bench kernel: exactly what kernelhub's native backend computes, from Python."""
import torch


def sdpa(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)


def identity(x):
    return x
'''


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def write_noarch_kernel(root: Path, name: str, files: dict) -> Path:
    """root/build/torch-universal with its metadata.json (id, digests), written by the fixtures'
    own writer (tests/fixtures/write_metadata.py --noarch), as kernel-builder lays it out."""
    variant = root / "build" / "torch-universal"
    variant.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        (variant / path).write_text(text)
    unique = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:7]
    subprocess.run([sys.executable, str(REPO_ROOT / "tests" / "fixtures" / "write_metadata.py"),
                    str(variant), "--noarch", "--name", name, "--version", "1",
                    "--id", f"_{name.replace('-', '_')}_universal_{unique}"],
                   check=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    return root


def start_server(build: Path, work: Path):
    port_file = work / "serve.port"
    server = subprocess.Popen([str(build / "bin" / "kernelhub"), "serve", "--root",
                               str(build / "fixtures" / "hub"), "--port", "0", "--port-file",
                               str(port_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (port_file.exists() and port_file.read_text().strip()):
        if time.monotonic() > deadline or server.poll() is not None:
            raise RuntimeError("kernelhub serve did not start")
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port_file.read_text().strip()}"


def timed(argv, env) -> tuple[float, str]:
    start = time.perf_counter()
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {run.stderr[-2000:]}")
    return elapsed, run.stdout


def first_use(build: Path, work: Path, reps: int) -> dict:
    server, endpoint = start_server(build, work)
    cache = work / "cache"
    env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_CACHE=str(cache), KERNELS_CACHE=str(cache),
               HF_HOME=str(work / "hf"), KERNELHUB_SOCKET=str(work / "no-daemon.sock"),
               HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_USER_AGENT_ORIGIN="kernelhub-bench")
    tool = [str(build / "bin" / "kh_python_bench"), "first-use", "kernels-community/py-ops", "1"]
    python = [sys.executable, "-c",
              "import torch, kernels; k = kernels.get_kernel('kernels-community/py-ops', "
              "version=1, backend='cpu'); x = torch.ones(4); assert k.identity(x) is x"]
    try:
        timed(tool, env)  # fills the cache (online), once
    finally:
        server.terminate()
        server.wait()
    offline = dict(env, HF_HUB_OFFLINE="1")
    kernelhub_s, kernels_s, inner_s = [], [], []
    for _ in range(reps):  # alternating, so drift hits both alike
        elapsed, out = timed(tool, offline)
        kernelhub_s.append(elapsed)
        inner_s.append(json.loads(out)["first_use_s"])
        kernels_s.append(timed(python, offline)[0])
    return {"kernelhub_s": statistics.median(kernelhub_s),
            "kernelhub_in_process_s": statistics.median(inner_s),
            "kernels_s": statistics.median(kernels_s)}


def per_call(build: Path, work: Path, iterations: int, rounds: int) -> dict:
    kernel = write_noarch_kernel(work / "sdpa-kernel", "bench-sdpa", {"__init__.py": SDPA_KERNEL})
    fa4 = build / "fixtures" / "src" / "flash-attn4-v0"
    env = dict(os.environ, LOCAL_KERNELS=f"kernels-community/flash-attn4={fa4}",
               KERNELHUB_SOCKET=str(work / "no-daemon.sock"))
    _, out = timed([str(build / "bin" / "kh_python_bench"), "per-call", str(kernel),
                    str(iterations), str(rounds)], env)
    cpp = json.loads(out)

    # The Python side, in this process: the same kernels, the same shape, one thread.
    os.environ["LOCAL_KERNELS"] = f"kernels-community/flash-attn4={fa4}"
    os.environ["DIFFUSERS_TRUST_REMOTE_KERNELS"] = "1"
    import torch
    from diffusers.models.attention_dispatch import attention_backend, dispatch_attention_fn
    from kernels import get_kernel, get_local_kernel

    torch.set_num_threads(1)
    q, k, v = (torch.randn(1, 8, 2, 16) for _ in range(3))
    sdpa = get_local_kernel(kernel, backend="cpu").sdpa
    flash = get_kernel("kernels-community/flash-attn4", version=0).flash_attn_func

    def diffusers_flash4():
        return dispatch_attention_fn(q, k, v)

    def per_call_ns(fn):
        for _ in range(200):
            fn()
        samples = []
        for _ in range(rounds):
            start = time.perf_counter_ns()
            for _ in range(iterations):
                fn()
            samples.append((time.perf_counter_ns() - start) / iterations)
        return statistics.median(samples)

    with attention_backend("flash_4_hub"):
        torch.testing.assert_close(diffusers_flash4(), sdpa(q, k, v), atol=1e-5, rtol=1e-5)
        diffusers_ns = per_call_ns(diffusers_flash4)
    return dict(cpp, python_sdpa_in_python_ns=per_call_ns(lambda: sdpa(q, k, v)),
                flash_attn_func_in_python_ns=per_call_ns(lambda: flash(q=q, k=k, v=v)[0]),
                diffusers_flash_4_hub_ns=diffusers_ns)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=REPO_ROOT / "build")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="one rep, few iterations")
    args = parser.parse_args()
    build = args.build.resolve()
    reps, iterations, rounds = (1, 50, 3) if args.smoke else (args.reps, 2000, 21)
    os.environ.setdefault("KERNELHUB_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory(prefix="kh-pybench-") as tmp:
        work = Path(tmp)
        log("first use in a fresh process")
        first = first_use(build, work, reps)
        log("per-call overhead")
        calls = per_call(build, work, iterations, rounds)
    print(f"# Python kernels from C++ (torch {__import__('torch').__version__}, "
          f"load {os.getloadavg()[0]:.2f})\n")
    print("## First use in a fresh process (interpreter + import torch + fetch + import + call)\n")
    print("| what | s | vs kernels |\n|---|---|---|")
    print(f"| kernelhub (kh_python_bench first-use, whole process) | {first['kernelhub_s']:.3f} | "
          f"{first['kernelhub_s'] / first['kernels_s']:.2f}x |")
    print(f"| kernelhub, inside the process (from main to the call's result) | "
          f"{first['kernelhub_in_process_s']:.3f} | |")
    print(f"| python -c 'import torch, kernels; kernels.get_kernel(...)' | {first['kernels_s']:.3f} "
          f"| 1.00x |")
    added_us = calls["added_ns"] / 1000
    faster = calls["diffusers_flash_4_hub_ns"] / calls["flash_4_hub_ns"]
    print("\n## Per call, tiny CPU attention (1 x 8 x 2 x 16, fp32, one thread)\n")
    print("| path | us/call |\n|---|---|")
    print(f"| C++ dispatch_attention, native (ATen SDPA) | {calls['native_ns'] / 1000:.2f} |")
    print(f"| C++ -> Python kernel sdpa (kernelhub::python) | {calls['python_sdpa_ns'] / 1000:.2f} |")
    print(f"| Python: the same sdpa called in Python | {calls['python_sdpa_in_python_ns'] / 1000:.2f} |")
    print(f"| C++ dispatch_attention, flash_4_hub (kernelhub) | {calls['flash_4_hub_ns'] / 1000:.2f} |")
    print(f"| Python: Diffusers dispatch_attention_fn, flash_4_hub | "
          f"{calls['diffusers_flash_4_hub_ns'] / 1000:.2f} |")
    print(f"| Python: flash_attn_func called in Python | "
          f"{calls['flash_attn_func_in_python_ns'] / 1000:.2f} |")
    print(f"\nadded by a Python kernel call from C++: {added_us:.2f} us (goal < 10 us: "
          f"{'met' if added_us < 10 else 'MISSED'}); flash_4_hub: kernelhub {faster:.2f}x "
          f"Diffusers' speed (goal > 1: {'met' if faster > 1 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
