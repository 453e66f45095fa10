#!/usr/bin/env bash
# Configures (CMakePresets.json's `dev`: Ninja, ccache, the venv's torch) and builds everything into build/; binaries
# land in build/bin, the fixture kernels and their local Hub store in build/fixtures.
# Extra arguments go to cmake at configure time, e.g. -DCMAKE_BUILD_TYPE=Debug.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KERNELHUB_BUILD_DIR:-${ROOT}/build}"
JOBS="${KERNELHUB_JOBS:-$(nproc)}"

# One compiler cache for every checkout and build dir of this machine: paths are hashed
# relative to the checkout, so a fresh clone in another folder (CI) reuses earlier objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-${ROOT}}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
mkdir -p "${BUILD}"
printf 'build: configuring %s\n' "${BUILD}"
# The `dev` preset of CMakePresets.json (Ninja, ccache, the venv's Python); -B keeps
# KERNELHUB_BUILD_DIR working.
(cd "${ROOT}" && cmake --preset dev -B "${BUILD}" "$@") >"${BUILD}/configure.log" 2>&1 \
  || { cat "${BUILD}/configure.log" >&2; exit 1; }
printf 'build: building with %s jobs\n' "${JOBS}"
cmake --build "${BUILD}" -j "${JOBS}"
printf 'build: done (binaries in %s/bin)\n' "${BUILD}"
