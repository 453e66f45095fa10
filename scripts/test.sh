#!/usr/bin/env bash
# THE test command: installs what is missing, builds everything, runs a bounded fuzz pass
# of the protocol decoder, then every test (Catch2 suites, shell integration tests and the
# Python conformance tests) through ctest. Extra arguments go to ctest,
# e.g. scripts/test.sh -R conformance.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KERNELHUB_BUILD_DIR:-${ROOT}/build}"
"${ROOT}/scripts/setup.sh"
"${ROOT}/scripts/build.sh"
# Fuzz first, so that ctest's summary is the last thing printed.
"${ROOT}/scripts/fuzz.sh" "${KERNELHUB_FUZZ_SECONDS:-20}"
printf 'test: running ctest\n'
exec ctest --test-dir "${BUILD}" --output-on-failure -j2 "$@"
