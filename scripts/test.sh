#!/usr/bin/env bash
# THE test command: installs what is missing, builds everything, runs every test (Catch2
# suites and the Python conformance tests) through ctest. Extra arguments go to ctest,
# e.g. scripts/test.sh -R conformance.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"${ROOT}/scripts/setup.sh"
"${ROOT}/scripts/build.sh"
printf 'test: running ctest\n'
ctest --test-dir "${ROOT}/build" --output-on-failure -j2 "$@" && "${ROOT}/scripts/fuzz.sh" 20
