#!/usr/bin/env bash
# Bounded libFuzzer run of every harness in fuzz/: builds build-fuzz with clang, the whole
# tree under -fsanitize=fuzzer-no-link,address,undefined (fixtures, tests and LibTorch off),
# then runs each harness for SECONDS on its committed seeds (fuzz/corpus/<harness>/) plus a
# working corpus (build-fuzz/corpus/<harness>/, gitignored) where new inputs accumulate from
# run to run. Prints per harness the executions and coverage; exits non-zero on any crash,
# leak, timeout or sanitizer report (the input is kept in build-fuzz/artifacts/).
# Skips cleanly without clang.
# Usage: scripts/fuzz.sh [seconds-per-harness] [harness...]
#   seconds: $1, else FUZZ_SECONDS, else 20 (14 harnesses: about 5 minutes in all)
#   KERNELHUB_FUZZ_BUILD: the build directory (default build-fuzz)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_BUDGET="${1:-${FUZZ_SECONDS:-20}}"
shift || true
BUILD="${KERNELHUB_FUZZ_BUILD:-${ROOT}/build-fuzz}"
ALL=(frame_decoder_fuzz hub_json_fuzz http_error_fuzz http_headers_fuzz metadata_fuzz
  kernel_status_fuzz policy_fuzz elf_symbols_fuzz serve_fuzz lockfile_fuzz bundle_import_fuzz
  sigstore_bundle_fuzz local_hub_fuzz printable_fuzz)
HARNESSES=("${@:-${ALL[@]}}")

if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  printf 'fuzz: clang not found, skipping the fuzz run\n'
  exit 0
fi

FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
CC=clang CXX=clang++ cmake -S "${ROOT}" -B "${BUILD}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKERNELHUB_BUILD_FIXTURES=OFF -DKERNELHUB_BUILD_TESTS=OFF -DKERNELHUB_BUILD_FUZZ=ON \
  -DKERNELHUB_WITH_TORCH=OFF -DKERNELHUB_WERROR=OFF "${LAUNCHER[@]}" \
  -DCMAKE_C_FLAGS="${FLAGS}" -DCMAKE_CXX_FLAGS="${FLAGS}" >/dev/null
cmake --build "${BUILD}" -j"${KERNELHUB_JOBS:-2}" --target "${HARNESSES[@]}"

# Per harness: the longest input it is given (deep-nesting and big-list cases need room).
max_len() {
  case "$1" in
    hub_json_fuzz | http_error_fuzz | metadata_fuzz | kernel_status_fuzz | policy_fuzz | lockfile_fuzz) echo 65536 ;;
    elf_symbols_fuzz) echo 16384 ;;
    bundle_import_fuzz) echo 262144 ;;
    sigstore_bundle_fuzz) echo 32768 ;;
    frame_decoder_fuzz | serve_fuzz | local_hub_fuzz | http_headers_fuzz) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

mkdir -p "${BUILD}/artifacts" "${BUILD}/fuzz-logs"
failed=()
printf '%-20s %12s %8s %8s %8s  %s\n' harness executions cov ft corpus result
for name in "${HARNESSES[@]}"; do
  seeds="${ROOT}/fuzz/corpus/${name}"
  work="${BUILD}/corpus/${name}"
  log="${BUILD}/fuzz-logs/${name}.log"
  mkdir -p "${work}"
  [[ -d "${seeds}" ]] || { printf 'fuzz: no seed corpus %s\n' "${seeds}"; failed+=("${name}"); continue; }
  rc=0
  (cd "${BUILD}" && "${BUILD}/bin/${name}" -max_total_time="${SECONDS_BUDGET}" \
    -max_len="$(max_len "${name}")" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="${BUILD}/artifacts/${name}-" "${work}" "${seeds}") >"${log}" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${log}" | tail -n 1)"
  cov="$(grep -Eo 'cov: [0-9]+' "${log}" | tail -n 1 | cut -d' ' -f2)"
  ft="$(grep -Eo 'ft: [0-9]+' "${log}" | tail -n 1 | cut -d' ' -f2)"
  corpus="$(find "${work}" -type f | wc -l)"
  result=ok
  if [[ ${rc} -ne 0 ]] || grep -Eq 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|==[0-9]+== ?ERROR' "${log}"; then
    result="FAILED (rc ${rc}, log ${log})"
    failed+=("${name}")
  fi
  printf '%-20s %12s %8s %8s %8s  %s\n' "${name}" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corpus}" "${result}"
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
