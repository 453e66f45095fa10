#!/usr/bin/env bash
# The NCCL path of context parallelism on a GPU host: bench/cp_bench.py with --device cuda
# (kh_cp_bench_nccl: ProcessGroupNCCL, one rank per GPU). 2+ GPUs: ring and Ulysses on 2
# ranks (and 4, with unified, when there are 4); 1 GPU: only the single-process row, since
# context parallelism needs 2 ranks and NCCL refuses two ranks on one GPU. Run after
# scripts/build.sh (KERNELHUB_WITH_NCCL is ON when the venv has the NCCL headers).
# TORCH_NCCL_BLOCKING_WAIT=1: wait() blocks the host, so "comm ms" is time spent waiting.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KERNELHUB_BUILD_DIR:-${ROOT}/build}"
[[ -x "${BUILD}/bin/kh_cp_bench_nccl" ]] \
  || { echo "gpu_cp_check: ${BUILD}/bin/kh_cp_bench_nccl is not built (KERNELHUB_WITH_NCCL)" >&2; exit 1; }
gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
[[ "${gpus}" -ge 1 ]] || { echo "gpu_cp_check: no GPU (nvidia-smi -L lists none)" >&2; exit 1; }
if [[ "${gpus}" -ge 4 ]]; then worlds=2,4; elif [[ "${gpus}" -ge 2 ]]; then worlds=2; else worlds=""; fi
echo "gpu_cp_check: ${gpus} GPU(s); context-parallel worlds: ${worlds:-none (one GPU)}"
export TORCH_NCCL_BLOCKING_WAIT=1
exec "${ROOT}/.venv/bin/python" "${ROOT}/bench/cp_bench.py" --build "${BUILD}" --device cuda \
  --seq "${CP_SEQ:-32768}" --heads 16 --dim 128 --iters 10 --worlds "${worlds}"
