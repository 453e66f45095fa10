#!/usr/bin/env bash
# package_test.sh BUILD_DIR SOURCE_DIR: install, build the example against the prefix, run it
# on the native backend (no Hub needed), and check what was installed.
set -euo pipefail
BUILD="$1"
SOURCE="$2"
WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

cmake --install "${BUILD}" --prefix "${WORK}/prefix" >/dev/null
for f in lib/libkernelhub.so lib/libkernelhub_pyshim.so lib/libkernelhub_python_bridge.so \
         include/kernelhub/attention.hpp include/kernelhub/python_kernel.hpp \
         include/kernelhub/attention_dispatch.hpp include/kernelhub/context_parallel.hpp \
         include/kernelhub/layers.hpp include/kernelhub/kernelize.hpp \
         include/kernelhub/trust/layer_mode.hpp \
         lib/cmake/kernelhub/kernelhubConfig.cmake \
         lib/cmake/kernelhub/kernelhubConfigVersion.cmake; do
  [[ -e "${WORK}/prefix/${f}" ]] || { echo "package: ${f} was not installed" >&2; exit 1; }
done

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "${SOURCE}/examples/attention_app" -B "${WORK}/app" -G Ninja \
  -DCMAKE_PREFIX_PATH="${WORK}/prefix" "${launcher[@]}" >"${WORK}/configure.log" 2>&1 \
  || { cat "${WORK}/configure.log" >&2; exit 1; }
cmake --build "${WORK}/app" >"${WORK}/build.log" 2>&1 || { cat "${WORK}/build.log" >&2; exit 1; }

# The app links the installed libkernelhub, not the build tree's. (ldd's output is captured
# first: `ldd | grep -q` under pipefail fails whenever grep exits before ldd has written all.)
libs="$(ldd "${WORK}/app/attention_app")"
grep -q "${WORK}/prefix/lib/libkernelhub.so" <<<"${libs}" \
  || { echo "package: attention_app does not use the installed libkernelhub" >&2; echo "${libs}" >&2; exit 1; }
out="$(env -u DIFFUSERS_ATTN_BACKEND "${WORK}/app/attention_app" _native_math)"
echo "${out}"
grep -q "_native_math: ran 2 layers" <<<"${out}"

# examples/context_parallel: the same package, 2 processes (the app forks its ranks) with
# ring attention, then Ulysses, each checked against one process by the app itself.
cmake -S "${SOURCE}/examples/context_parallel" -B "${WORK}/cp" -G Ninja \
  -DCMAKE_PREFIX_PATH="${WORK}/prefix" "${launcher[@]}" >"${WORK}/cp-configure.log" 2>&1 \
  || { cat "${WORK}/cp-configure.log" >&2; exit 1; }
cmake --build "${WORK}/cp" >"${WORK}/cp-build.log" 2>&1 || { cat "${WORK}/cp-build.log" >&2; exit 1; }
for mode in ring ulysses; do
  out="$(timeout 120 "${WORK}/cp/context_parallel_app" "${mode}" 2)"
  echo "${out}"
  grep -q "context parallel (${mode}, 2 processes, causal): max |difference| vs one process" <<<"${out}"
done

# examples/python_kernel: a Python-only kernel (the py-ops fixture's local build) called from
# the installed package; the bridge is found beside the installed libkernelhub.
cmake -S "${SOURCE}/examples/python_kernel" -B "${WORK}/pyk" -G Ninja \
  -DCMAKE_PREFIX_PATH="${WORK}/prefix" "${launcher[@]}" >"${WORK}/pyk-configure.log" 2>&1 \
  || { cat "${WORK}/pyk-configure.log" >&2; exit 1; }
cmake --build "${WORK}/pyk" >"${WORK}/pyk-build.log" 2>&1 || { cat "${WORK}/pyk-build.log" >&2; exit 1; }
out="$(env -u KERNELHUB_PYTHON_BRIDGE "${WORK}/pyk/python_kernel_app" "${BUILD}/fixtures/src/py-ops-v1" add_)"
echo "${out}"
grep -q "(torch-cpu, module _py_ops_cpu_[0-9a-f]*).add_ -> tensor sum 18, x itself" <<<"${out}"

# examples/layers_app: kernelize from the installed package, with a mapping file naming the
# fixture layer kernels' local builds (rmsnorm's RMSNorm, activation's SiluAndMul).
cmake -S "${SOURCE}/examples/layers_app" -B "${WORK}/layers" -G Ninja \
  -DCMAKE_PREFIX_PATH="${WORK}/prefix" "${launcher[@]}" >"${WORK}/layers-configure.log" 2>&1 \
  || { cat "${WORK}/layers-configure.log" >&2; exit 1; }
cmake --build "${WORK}/layers" >"${WORK}/layers-build.log" 2>&1 || { cat "${WORK}/layers-build.log" >&2; exit 1; }
cat >"${WORK}/layers.toml" <<EOF
[[layers]]
name = "RMSNorm"
device = "cpu"
path = "${BUILD}/fixtures/src/rmsnorm-v1"
layer = "RMSNorm"

[[layers]]
name = "SiluAndMul"
device = "cpu"
path = "${BUILD}/fixtures/src/activation-v1"
layer = "SiluAndMul"
EOF
out="$("${WORK}/layers/layers_app" "${WORK}/layers.toml")"
echo "${out}"
grep -q "^kernelized 2 of 2 layers; max |kernelized - ATen| = " <<<"${out}"
grep -q "^act   SiluAndMul  .*activation-v1 (.*) layers.SiluAndMul, native$" <<<"${out}"
