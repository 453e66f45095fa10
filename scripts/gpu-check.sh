#!/usr/bin/env bash
# The GPU check: builds what it needs against the torch of the machine it runs on and runs,
# on its GPU, the CUDA fixture variants through the loader, every dispatcher backend against
# ATen SDPA, the dispatch overhead and native flash/cuDNN timings; writes one table.
#
#   scripts/gpu-check.sh [--deps DIR] [--build-dir DIR] [--jobs N] [--rehearse-on-cpu]
#                        [--configure-only] TABLE.md
#   scripts/gpu-check.sh pack DIR
#
# A GPU host has python3 with a CUDA torch, nvcc of the same CUDA major, CMake, ninja and a
# C++ compiler, but may lack the -dev packages of the three libraries the offline build
# (KERNELHUB_WITH_HUB=OFF: trust, loader, dispatcher, fixtures) needs: nlohmann/json and
# toml++ (header-only), OpenSSL's headers (its libcrypto.so.3 is there: Python links it), and
# Python's headers. `pack DIR`, run where scripts/setup.sh installed them, copies those
# headers (about 5 MB) into DIR; carry DIR to the GPU host and pass --deps DIR. Whatever the
# host has itself is used first; the table says which was used.
#
# Nothing is downloaded. The kernels are per torch version, so the fixtures are rebuilt
# against the host's torch (variant torch<MM>-cxx11-cu<XY>-x86_64-linux from its version and
# nvcc's). --rehearse-on-cpu builds and runs the same checks on CPU tensors (no timings):
# the way to try this script on a machine without a GPU; --configure-only stops after the
# configure (does the host have what the build needs?). Exit status: 0 all passed, 1 a check
# failed, 2 it could not build or run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
START=${SECONDS}
say() { echo "gpu-check [$((SECONDS - START))s]: $*" >&2; }
die() { echo "gpu-check: $*" >&2; exit 2; }

pack() {
  local dir="$1"
  mkdir -p "${dir}/include/openssl" "${dir}/python"
  local inc=/usr/include arch
  arch="$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)"
  [[ -f ${inc}/nlohmann/json.hpp && -f ${inc}/toml++/toml.h && -f ${inc}/openssl/evp.h ]] \
    || die "pack: nlohmann-json3-dev, libtomlplusplus-dev or libssl-dev is missing (scripts/setup.sh)"
  cp -r "${inc}/nlohmann" "${inc}/toml++" "${dir}/include/"
  # OpenSSL keeps two headers in the multiarch folder; one flat folder holds them all.
  cp "${inc}"/openssl/*.h "${dir}/include/openssl/"
  cp "${inc}/${arch}"/openssl/*.h "${dir}/include/openssl/"
  # Python: the limited-API headers of this interpreter, pyconfig.h flattened likewise.
  local python="${KERNELHUB_PYTHON:-${ROOT}/.venv/bin/python}" py
  [[ -x ${python} ]] || python="$(command -v python3)"
  py="$("${python}" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  cp -r "${py}"/. "${dir}/python/"
  local multiarch_pyconfig
  multiarch_pyconfig="${inc}/${arch}/$(basename "${py}")/pyconfig.h"
  [[ -f ${multiarch_pyconfig} ]] && cp "${multiarch_pyconfig}" "${dir}/python/pyconfig.h"
  [[ -f ${dir}/python/Python.h ]] || die "pack: no Python.h under ${py} (python3-dev)"
  echo "gpu-check: packed $(du -sh "${dir}" | cut -f1) of headers into ${dir}" >&2
}

if [[ "${1:-}" == "pack" ]]; then
  [[ $# -eq 2 ]] || die "usage: scripts/gpu-check.sh pack DIR"
  pack "$2"
  exit 0
fi

DEPS="" BUILD="" JOBS="$(nproc)" REHEARSE=0 CONFIGURE_ONLY=0 TABLE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --deps) DEPS="$(realpath "$2")"; shift 2 ;;
    --build-dir) BUILD="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --rehearse-on-cpu) REHEARSE=1; shift ;;
    --configure-only) CONFIGURE_ONLY=1; shift ;;
    -*) die "unknown option $1" ;;
    *) [[ -z ${TABLE} ]] || die "one table file, not '${TABLE}' and '$1'"; TABLE="$1"; shift ;;
  esac
done
[[ -n ${TABLE} ]] || die "usage: scripts/gpu-check.sh [--deps DIR] [--build-dir DIR] [--jobs N] [--rehearse-on-cpu] [--configure-only] TABLE.md"
BUILD="$(realpath -m "${BUILD:-${ROOT}/build-gpu-check}")"
TABLE="$(realpath -m "${TABLE}")"
WORK="${BUILD}/gpu-check"
mkdir -p "${WORK}"

# --- what this machine has ------------------------------------------------------------
PYTHON="${KERNELHUB_PYTHON:-$(command -v python3 || true)}"
[[ -x ${PYTHON} ]] || die "no python3 (set KERNELHUB_PYTHON to the one that has torch)"
TORCH_INFO="$("${PYTHON}" -c 'import torch, os; print(torch.__version__, torch.version.cuda, os.path.dirname(torch.__file__))')" \
  || die "${PYTHON} cannot import torch (set KERNELHUB_PYTHON)"
read -r TORCH_VERSION TORCH_CUDA TORCH_DIR <<<"${TORCH_INFO}"
# The interpreter's folder first: a venv there may hold cmake and ninja.
PATH="$(dirname "${PYTHON}"):${PATH}"
export PATH
NVCC="$(command -v nvcc || true)"
for candidate in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [[ -z ${NVCC} && -x ${candidate} ]] && NVCC="${candidate}"
done
CMAKE="$(command -v cmake || true)"
NINJA="$(command -v ninja || true)"
CXX_BIN="${CXX:-$(command -v c++ || command -v g++ || true)}"
[[ -n ${CMAKE} ]] || die "no cmake on PATH"
[[ -n ${CXX_BIN} ]] || die "no C++ compiler (c++ or g++) on PATH"
if [[ ${REHEARSE} -eq 0 ]]; then
  [[ ${TORCH_CUDA} != "None" ]] || die "torch ${TORCH_VERSION} has no CUDA"
  [[ -n ${NVCC} ]] || die "no nvcc (PATH, CUDA_HOME/bin, /usr/local/cuda/bin)"
fi
NVCC_VERSION="$([[ -n ${NVCC} ]] && "${NVCC}" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p' || echo none)"
GPU="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed -n 1p || true)"
say "torch ${TORCH_VERSION} (CUDA ${TORCH_CUDA}) at ${TORCH_DIR}; nvcc ${NVCC_VERSION}; GPU: ${GPU:-none seen by nvidia-smi}"

# --- dependencies: the host's own, else those brought with --deps ---------------------------
CONFIGURE=()
DEPS_USED=()
compiles() {  # compiles '#include <$1>' with the host's default include paths
  echo "#include <$1>" | "${CXX_BIN}" -std=c++20 -fsyntax-only -x c++ - >/dev/null 2>&1
}
need_deps() {
  [[ -n ${DEPS} && -d ${DEPS}/include ]] \
    || die "$1 is not installed here: run 'scripts/gpu-check.sh pack DIR' on the build machine, carry DIR along and pass --deps DIR"
}
BROUGHT_HEADERS=0
for header in nlohmann/json.hpp toml++/toml.h; do
  if compiles "${header}"; then
    DEPS_USED+=("${header%%/*}: host")
  else
    need_deps "${header}"
    BROUGHT_HEADERS=1
    DEPS_USED+=("${header%%/*}: brought")
  fi
done
[[ ${BROUGHT_HEADERS} -eq 1 ]] && CONFIGURE+=("-DCMAKE_INCLUDE_PATH=${DEPS}/include")
if compiles openssl/evp.h; then
  DEPS_USED+=("OpenSSL headers: host")
else
  need_deps openssl/evp.h
  CONFIGURE+=("-DOPENSSL_INCLUDE_DIR=${DEPS}/include")
  DEPS_USED+=("OpenSSL headers: brought")
fi
if ! echo 'int main(){}' | "${CXX_BIN}" -x c++ - -lcrypto -o "${WORK}/crypto-probe" >/dev/null 2>&1; then
  # No libcrypto.so link: use the runtime library Python itself loads.
  # awk reads to the end: leaving early would SIGPIPE ldconfig, and pipefail would end the script.
  LIBCRYPTO="$(ldconfig -p 2>/dev/null | awk '/libcrypto\.so\.3 .*x86-64/ && !found {print $NF; found = 1}')"
  for candidate in /usr/lib/x86_64-linux-gnu/libcrypto.so.3 /usr/lib64/libcrypto.so.3; do
    [[ -z ${LIBCRYPTO} && -f ${candidate} ]] && LIBCRYPTO="${candidate}"
  done
  [[ -n ${LIBCRYPTO} ]] || die "no libcrypto.so.3 on this machine"
  CONFIGURE+=("-DOPENSSL_CRYPTO_LIBRARY=${LIBCRYPTO}")
  DEPS_USED+=("libcrypto: ${LIBCRYPTO}")
else
  DEPS_USED+=("libcrypto: host (-lcrypto)")
fi
PY_INCLUDE="$("${PYTHON}" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
if [[ -f ${PY_INCLUDE}/Python.h ]]; then
  DEPS_USED+=("Python.h: host (${PY_INCLUDE})")
else
  need_deps Python.h
  CONFIGURE+=("-DKERNELHUB_PYTHON_INCLUDE_DIR=${DEPS}/python")
  DEPS_USED+=("Python.h: brought ($(sed -n 's/^#define PY_VERSION *"\(.*\)"/\1/p' "${DEPS}/python/patchlevel.h"), limited API)")
fi
say "dependencies: $(IFS=';'; echo "${DEPS_USED[*]}")"

# --- build ------------------------------------------------------------------------------
GENERATOR=()
[[ -n ${NINJA} ]] && GENERATOR=(-G Ninja)
if [[ ${REHEARSE} -eq 1 ]]; then
  CONFIGURE+=(-DKERNELHUB_CUDA_FIXTURES=AUTO)
  TARGETS=(kh_gpu_check kh_fixture_kernels)
else
  CONFIGURE+=(-DKERNELHUB_CUDA_FIXTURES=ON)
  TARGETS=(kh_gpu_check kh_fixture_cuda_kernels)
fi
BUILD_START=${SECONDS}
# CMakePresets.json's gpu-offline: Release, no Hub client and no tests, and warnings stay
# warnings (this compiler is the host's, not the one CI holds to -Werror).
(cd "${ROOT}" && "${CMAKE}" --preset gpu-offline -B "${BUILD}" "${GENERATOR[@]}" \
  -DKERNELHUB_PYTHON="${PYTHON}" "${CONFIGURE[@]}") >"${WORK}/configure.log" 2>&1 \
  || { tail -30 "${WORK}/configure.log" >&2; die "configure failed (${WORK}/configure.log)"; }
say "configured ($(grep -E 'CUDA fixtures' "${WORK}/configure.log" | sed 's/^-- //'))"
if [[ ${CONFIGURE_ONLY} -eq 1 ]]; then
  printf '%s\n' "- dependencies: $(IFS=';'; echo "${DEPS_USED[*]}")" "- configure: ${WORK}/configure.log" >"${TABLE}"
  exit 0
fi
"${CMAKE}" --build "${BUILD}" --target "${TARGETS[@]}" -j "${JOBS}" >"${WORK}/build.log" 2>&1 \
  || { grep -E 'error' -A3 "${WORK}/build.log" | head -40 >&2; die "build failed (${WORK}/build.log)"; }
BUILD_SECONDS=$((SECONDS - BUILD_START))
say "built ${TARGETS[*]} in ${BUILD_SECONDS}s"

# --- run --------------------------------------------------------------------------------
RUN_START=${SECONDS}
CHECK_ARGS=(--fixtures "${BUILD}/fixtures" --table "${WORK}/checks.md")
[[ ${REHEARSE} -eq 1 ]] && CHECK_ARGS+=(--rehearse-on-cpu)
# Bounded: a hung kernel must not eat the GPU host's minutes (a full pass takes about one).
set +e
timeout 300 "${BUILD}/bin/kh_gpu_check" "${CHECK_ARGS[@]}" 2>"${WORK}/checks.log"
CHECK_RC=$?
set -e
if [[ ${CHECK_RC} -eq 124 ]]; then  # it writes its table at the end: only its log is left
  printf '%s\n' "| section | check | result | detail |" "| --- | --- | --- | --- |" \
    "| host | kh_gpu_check | **FAIL** | killed after 300 s; its progress log follows |" \
    "" '```' "$(tail -40 "${WORK}/checks.log")" '```' >"${WORK}/checks.md"
  CHECK_RC=1
fi
[[ -f ${WORK}/checks.md ]] || { tail -20 "${WORK}/checks.log" >&2; die "kh_gpu_check wrote no table (exit ${CHECK_RC})"; }
: >"${WORK}/torch.md"
if [[ ${REHEARSE} -eq 0 && ${CHECK_RC} -ne 2 ]]; then
  timeout 120 "${PYTHON}" "${ROOT}/tests/gpu/torch_reference.py" --table "${WORK}/torch.md" \
    || echo "| timing | torch Python SDPA | **FAIL** | tests/gpu/torch_reference.py failed |" >"${WORK}/torch.md"
fi
RUN_SECONDS=$((SECONDS - RUN_START))

# --- the table --------------------------------------------------------------------------
{
  echo "# kernelhub GPU check, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git -C "${ROOT}" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- GPU: ${GPU:-none}$([[ ${REHEARSE} -eq 1 ]] && echo ' (CPU rehearsal)')"
  echo "- built against: torch ${TORCH_VERSION} (CUDA ${TORCH_CUDA}) at ${TORCH_DIR}; nvcc ${NVCC_VERSION}; $("${CMAKE}" --version | sed -n 1p); $("${CXX_BIN}" --version | sed -n 1p)"
  echo "- fixture variants: $(find "${BUILD}/fixtures/src/relu-v1/build" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null)"
  echo "- dependencies: $(IFS=';'; echo "${DEPS_USED[*]}")"
  echo "- build ${BUILD_SECONDS}s, checks ${RUN_SECONDS}s, total $((SECONDS - START))s"
  echo
  cat "${WORK}/checks.md"
  if [[ -s ${WORK}/torch.md ]]; then
    echo
    echo "torch's own kernels from Python at the timing shape (the anchor of the timing rows):"
    echo
    cat "${WORK}/torch.md"
  fi
} >"${TABLE}"
say "table written to ${TABLE} (kh_gpu_check exit ${CHECK_RC})"
exit "${CHECK_RC}"
