#!/usr/bin/env bash
# Bounded libFuzzer run of every harness in fuzz/: builds the harnesses in build-asan with
# clang (scripts/clang_build.sh: ASan + UBSan, every object also instrumented for libFuzzer, so
# the libraries they link carry coverage and sanitizer checks too; the ASan suites of
# scripts/sanitize.sh run from the same build), then runs each harness for SECONDS on its
# committed seeds (fuzz/corpus/<harness>/) plus a working corpus (build-asan/corpus/<harness>/,
# gitignored) where new inputs accumulate from run to run, two harnesses at a time (one per
# core, KERNELHUB_FUZZ_JOBS). Prints per harness the executions and coverage; exits non-zero on
# any crash, leak, timeout or sanitizer report (the input is kept in build-asan/artifacts/).
# Skips cleanly without clang.
# Usage: scripts/fuzz.sh [seconds-per-harness] [harness...]
#   seconds: $1, else FUZZ_SECONDS, else 20 (16 harnesses, two at a time: about 3 minutes)
#   KERNELHUB_FUZZ_BUILD: the build directory (default build-asan)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MAIN_BUILD="${KERNELHUB_BUILD_DIR:-${ROOT}/build}"
SECONDS_BUDGET="${1:-${FUZZ_SECONDS:-20}}"
shift || true
BUILD="${KERNELHUB_FUZZ_BUILD:-${ROOT}/build-asan}"
FUZZ_JOBS="${KERNELHUB_FUZZ_JOBS:-2}"
ALL=(frame_decoder_fuzz hub_json_fuzz http_error_fuzz http_headers_fuzz metadata_fuzz
  kernel_status_fuzz policy_fuzz elf_symbols_fuzz serve_fuzz lockfile_fuzz bundle_import_fuzz
  sigstore_bundle_fuzz local_hub_fuzz http_head_fuzz printable_fuzz pins_fuzz layer_mapping_fuzz)
HARNESSES=("${@:-${ALL[@]}}")

if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  printf 'fuzz: clang not found, skipping the fuzz run\n'
  exit 0
fi

# shellcheck source=scripts/clang_build.sh
source "${ROOT}/scripts/clang_build.sh"
configure_clang_build "${BUILD}" address
cmake --build "${BUILD}" -j"${KERNELHUB_JOBS:-$(nproc)}" --target "${HARNESSES[@]}"

# Per harness: the longest input it is given (deep-nesting and big-list cases need room).
max_len() {
  case "$1" in
    hub_json_fuzz | http_error_fuzz | metadata_fuzz | kernel_status_fuzz | policy_fuzz | lockfile_fuzz | pins_fuzz | layer_mapping_fuzz) echo 65536 ;;
    elf_symbols_fuzz) echo 16384 ;;
    bundle_import_fuzz) echo 262144 ;;
    sigstore_bundle_fuzz | http_head_fuzz) echo 32768 ;;
    frame_decoder_fuzz | serve_fuzz | local_hub_fuzz | http_headers_fuzz) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

mkdir -p "${BUILD}/artifacts" "${BUILD}/fuzz-logs"
# run_one NAME: fuzzes one harness; writes its table row to fuzz-logs/NAME.row.
run_one() {
  local name="$1" seeds="${ROOT}/fuzz/corpus/$1" work="${BUILD}/corpus/$1"
  local log="${BUILD}/fuzz-logs/$1.log" row="${BUILD}/fuzz-logs/$1.row" rc=0
  mkdir -p "${work}"
  if [[ ! -d "${seeds}" ]]; then
    printf '%-20s %12s %8s %8s %8s  %s\n' "${name}" - - - - "FAILED (no seed corpus ${seeds})" >"${row}"
    return
  fi
  (cd "${BUILD}" && "${BUILD}/bin/${name}" -max_total_time="${SECONDS_BUDGET}" \
    -max_len="$(max_len "${name}")" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="${BUILD}/artifacts/${name}-" "${work}" "${seeds}") >"${log}" 2>&1 || rc=$?
  local execs cov ft corpus result=ok
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${log}" | tail -n 1)"
  cov="$(grep -Eo 'cov: [0-9]+' "${log}" | tail -n 1 | cut -d' ' -f2)"
  ft="$(grep -Eo 'ft: [0-9]+' "${log}" | tail -n 1 | cut -d' ' -f2)"
  corpus="$(find "${work}" -type f | wc -l)"
  if [[ ${rc} -ne 0 ]] || grep -Eq 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|==[0-9]+== ?ERROR' "${log}"; then
    result="FAILED (rc ${rc}, log ${log})"
  fi
  printf '%-20s %12s %8s %8s %8s  %s\n' "${name}" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corpus}" "${result}" >"${row}"
}

# FUZZ_JOBS harnesses at a time, each on its own core.
running=0
for name in "${HARNESSES[@]}"; do
  rm -f "${BUILD}/fuzz-logs/${name}.row"
  run_one "${name}" &
  running=$((running + 1))
  if ((running >= FUZZ_JOBS)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
failed=()
printf '%-20s %12s %8s %8s %8s  %s\n' harness executions cov ft corpus result
for name in "${HARNESSES[@]}"; do
  row="${BUILD}/fuzz-logs/${name}.row"
  if [[ -f "${row}" ]]; then cat "${row}"; else printf '%-20s  FAILED (no result)\n' "${name}"; fi
  grep -q ' ok$' "${row}" 2>/dev/null || failed+=("${name}")
done

if [[ ${#failed[@]} -gt 0 ]]; then
  for name in "${failed[@]}"; do
    printf '\n--- %s ---\n' "${name}"
    tail -n 40 "${BUILD}/fuzz-logs/${name}.log" 2>/dev/null || true
  done
  printf '\nfuzz: %d harness(es) failed: %s\n' "${#failed[@]}" "${failed[*]}"
  exit 1
fi
printf 'fuzz: %d harnesses, %ss each, no crash, leak, timeout or sanitizer report\n' \
  "${#HARNESSES[@]}" "${SECONDS_BUDGET}"
