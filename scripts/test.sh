#!/usr/bin/env bash
# THE test command: installs what is missing, checks the formatting (scripts/format.sh
# --check), builds everything, runs a bounded pass of every fuzz harness, the non-torch suites
# under ASan+UBSan and the concurrency suites under TSan (scripts/sanitize.sh), clang-tidy over
# the changed files (scripts/tidy.sh), then every test (Catch2 suites, shell integration tests
# and the Python conformance tests) through ctest. Extra arguments go to ctest, e.g.
# scripts/test.sh -R conformance.
# KERNELHUB_SANITIZE_RUNS: asan, tsan or all (default); empty skips the sanitizer runs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KERNELHUB_BUILD_DIR:-${ROOT}/build}"
# timed NAME CMD...: runs CMD and remembers how long it took, for the line printed before ctest.
times=()
timed() {
  local name="$1" start=${SECONDS}
  shift
  "$@"
  times+=("${name} $((SECONDS - start))s")
}
timed setup "${ROOT}/scripts/setup.sh"
# Formatting first: it takes seconds and needs no build.
timed format "${ROOT}/scripts/format.sh" --check
timed build "${ROOT}/scripts/build.sh"
# Fuzz first, so that ctest's summary is the last thing printed. Its build (build-asan) is the
# one the ASan suites run from.
timed fuzz "${ROOT}/scripts/fuzz.sh" "${KERNELHUB_FUZZ_SECONDS:-20}"
# Before ctest too; a report or a finding stops the run here (ctest never prints success).
if [[ -n "${KERNELHUB_SANITIZE_RUNS-all}" ]]; then
  timed sanitize "${ROOT}/scripts/sanitize.sh" "${KERNELHUB_SANITIZE_RUNS-all}"
else
  printf 'test: sanitizer runs skipped (KERNELHUB_SANITIZE_RUNS is empty)\n'
fi
timed tidy "${ROOT}/scripts/tidy.sh"
printf 'test: %s; running ctest\n' "${times[*]}"
exec ctest --test-dir "${BUILD}" --output-on-failure -j2 "$@"
