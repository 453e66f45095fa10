#!/usr/bin/env bash
# scripts/gpu-check.sh on a host without the -dev packages of nlohmann/json, toml++, OpenSSL
# and Python (a GPU host): `pack` on this machine, then, in a mount namespace where those
# headers, their CMake/pkg-config files and the libcrypto.so link are hidden, the offline
# build (KERNELHUB_WITH_HUB=OFF) configures with the brought headers and the runtime
# libcrypto.so.3, and builds kh_trust (the one library that parses with them). With `full`
# it runs the whole script instead (--rehearse-on-cpu: every build step, then the checks on
# CPU; long on 2 cores, so CI runs the short form).
#   offline_build_test.sh <work dir> [full]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="$1"
MODE="${2:-short}"
# A failure shows where: the line, and the logs of the step that failed.
on_error() {
  local status=$?
  echo "offline_build_test: failed (exit ${status}) at line ${BASH_LINENO[0]}" >&2
  tail -n 20 "${WORK}"/build/gpu-check/*.log "${WORK}"/*.log >&2 2>/dev/null || true
}
trap on_error ERR
rm -rf "${WORK}"
mkdir -p "${WORK}"
"${ROOT}/scripts/gpu-check.sh" pack "${WORK}/deps"
ARCH="$(gcc -dumpmachine)"
export KERNELHUB_PYTHON="${KERNELHUB_PYTHON:-${ROOT}/.venv/bin/python}"
PY_INCLUDE="$("${KERNELHUB_PYTHON}" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
# What a GPU host lacks. Each must exist here, or hiding it would prove nothing.
HIDDEN_DIRS=(/usr/include/nlohmann /usr/include/toml++ /usr/include/openssl
             "/usr/include/${ARCH}/openssl" "${PY_INCLUDE}" /usr/share/cmake/nlohmann_json)
LIB="/usr/lib/${ARCH}"
HIDDEN_LIB_ENTRIES=(libcrypto.so libcrypto.a cmake/tomlplusplus pkgconfig/tomlplusplus.pc
                    pkgconfig/libcrypto.pc pkgconfig/openssl.pc)
for path in "${HIDDEN_DIRS[@]}" "${HIDDEN_LIB_ENTRIES[@]/#/${LIB}/}"; do
  [[ -e ${path} ]] || { echo "offline_build_test: ${path} is not installed here" >&2; exit 1; }
done
# The library folder is overlaid with whiteouts (a 0/0 character device hides the entry
# below it): libcrypto.so.3 stays, its link-time names go, as on a host without libssl-dev.
mkdir -p "${WORK}/lib-upper/cmake" "${WORK}/lib-upper/pkgconfig" "${WORK}/lib-work"
for entry in "${HIDDEN_LIB_ENTRIES[@]}"; do mknod "${WORK}/lib-upper/${entry}" c 0 0; done
export ROOT WORK LIB MODE HIDDEN_DIRS_LIST="${HIDDEN_DIRS[*]}"
# shellcheck disable=SC2016  # expanded by the inner bash, from the exported variables
unshare --mount --propagation private bash -euo pipefail -c '
  for dir in ${HIDDEN_DIRS_LIST}; do mount -t tmpfs -o size=1m kh-hidden "${dir}"; done
  mount -t overlay kh-hidden-libs \
    -o "lowerdir=${LIB},upperdir=${WORK}/lib-upper,workdir=${WORK}/lib-work" "${LIB}"
  # The fault is in place: the headers are gone for the compiler.
  if echo "#include <nlohmann/json.hpp>" | c++ -std=c++20 -fsyntax-only -x c++ - 2>/dev/null; then
    echo "offline_build_test: nlohmann/json.hpp is still visible" >&2; exit 1
  fi
  if echo "int main() {}" | c++ -x c++ - -lcrypto -o "${WORK}/probe" 2>/dev/null; then
    echo "offline_build_test: -lcrypto still links" >&2; exit 1
  fi
  if [[ ${MODE} == full ]]; then
    "${ROOT}/scripts/gpu-check.sh" --rehearse-on-cpu --deps "${WORK}/deps" \
      --build-dir "${WORK}/build" "${WORK}/configure.md"
  else
    "${ROOT}/scripts/gpu-check.sh" --rehearse-on-cpu --configure-only --deps "${WORK}/deps" \
      --build-dir "${WORK}/build" "${WORK}/configure.md"
    cmake --build "${WORK}/build" --target kh_trust -j 2 >"${WORK}/trust-build.log" 2>&1 \
      || { tail -30 "${WORK}/trust-build.log" >&2; exit 1; }
  fi
'
cat "${WORK}/configure.md"
for used in "nlohmann: brought" "toml++: brought" "OpenSSL headers: brought" "libcrypto: /" \
            "Python.h: brought"; do
  grep -qF "${used}" "${WORK}/configure.md" \
    || { echo "offline_build_test: expected '${used}' in the dependency line" >&2; exit 1; }
done
# Nothing of the Hub stack was looked for.
if grep -qiE 'curl|libarchive|spdlog|CLI11|httplib|systemd' "${WORK}/build/CMakeCache.txt"; then
  echo "offline_build_test: the offline configure looked for a Hub library:" >&2
  grep -iE 'curl|libarchive|spdlog|CLI11|httplib|systemd' "${WORK}/build/CMakeCache.txt" | head >&2
  exit 1
fi
echo "offline_build_test: ${MODE}: built with the brought headers"
