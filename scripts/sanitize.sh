#!/usr/bin/env bash
# The non-torch suites under sanitizers (clang, -O1, every target instrumented, kernelhubd,
# kernelhub and kh_daemon_probe included, so the processes the tests start are checked too):
#   asan  ASan + UBSan in build-asan: every suite of that build (trust, proto, cache, hub,
#         server, cli, e2e, client, daemon, daemon_integration), through ctest. The same build
#         holds scripts/fuzz.sh's harnesses (scripts/clang_build.sh).
#   tsan  TSan in build-tsan: the concurrency suites (the in-process daemon, single-flight
#         across processes, hostile frames from many threads, the transport's writer thread).
# Any report fails the run: reports are fatal (-fno-sanitize-recover=all, halt_on_error) and
# every process writes them to <build>/sanitizer-logs/, which must be empty afterwards (a
# report from a child the test did not check, e.g. the daemon, fails here).
# The fixture-backed suites use the main build's fixtures: run scripts/build.sh first.
# Usage: scripts/sanitize.sh [asan|tsan|all] [extra ctest arguments for asan, e.g. -R daemon]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MAIN_BUILD="${KERNELHUB_BUILD_DIR:-${ROOT}/build}"
JOBS="${KERNELHUB_JOBS:-$(nproc)}"
MODE="${1:-all}"
shift || true
case "${MODE}" in asan | tsan | all) ;; *)
  printf 'usage: %s [asan|tsan|all] [ctest arguments]\n' "$0" >&2
  exit 2
  ;;
esac

if ! command -v clang++ >/dev/null; then
  printf 'sanitize: FAILED: clang++ not found (scripts/setup.sh installs it)\n' >&2
  exit 1
fi
if [[ ! -f "${MAIN_BUILD}/fixtures/variant.txt" || ! -d "${MAIN_BUILD}/fixtures/hub" ]]; then
  printf 'sanitize: FAILED: no fixture store in %s/fixtures: run scripts/build.sh first\n' "${MAIN_BUILD}" >&2
  exit 1
fi
# shellcheck source=scripts/clang_build.sh
source "${ROOT}/scripts/clang_build.sh"

# build <build dir> <targets...>
build() {
  local build="$1" start=${SECONDS}
  shift
  cmake --build "${build}" -j "${JOBS}" --target "$@"
  printf 'sanitize: %s build done in %ss\n' "$(basename "${build}")" "$((SECONDS - start))"
}

# A fresh, world-writable report folder: the isolation tests run clients as another uid.
fresh_log_dir() {
  rm -rf "$1"
  mkdir -p "$1"
  chmod 1777 "$1"
}

# Fails (and prints them) when any process wrote a report.
check_logs() {
  local name="$1" dir="$2"
  local reports=("${dir}"/*)
  if [[ -e "${reports[0]}" ]]; then
    for report in "${reports[@]}"; do
      printf '=== %s\n' "${report}"
      cat "${report}"
    done
    printf 'sanitize: %s FAILED: %d report(s) in %s\n' "${name}" "${#reports[@]}" "${dir}"
    return 1
  fi
}

# verdict NAME LOGS RC START WHAT: fails on a failed suite or any report in LOGS, and says
# how long the suites took.
verdict() {
  local name="$1" logs="$2" rc="$3" start="$4" what="$5"
  check_logs "${name}" "${logs}" || rc=1
  if [[ ${rc} -ne 0 ]]; then
    printf 'sanitize: %s FAILED (suites %ss)\n' "${name}" "$((SECONDS - start))"
    return 1
  fi
  printf 'sanitize: %s passed: %s, 0 reports (suites %ss)\n' "${name}" "${what}" \
    "$((SECONDS - start))"
}

run_asan() {
  local build="${ROOT}/build-asan" logs="${ROOT}/build-asan/sanitizer-logs"
  # The build scripts/fuzz.sh made its harnesses in: its product code is already compiled.
  configure_clang_build "${build}" address
  build "${build}" all  # without torch and fixtures: the suites, their binaries, the harnesses
  fresh_log_dir "${logs}"
  local start=${SECONDS} rc=0
  # detect_leaks=0 for the strace suites only (LeakSanitizer cannot run under ptrace: "does not
  # work under ptrace" in a report means a new strace test belongs in this pattern); ASan
  # itself still checks them. Everything else leak-checks.
  local strace_tests='^crash injected|[Ii]nject'
  local common="halt_on_error=1:abort_on_error=0:strict_init_order=1"
  local ubsan="halt_on_error=1:print_stacktrace=1:log_path=${logs}/ubsan"
  # The systemd test only installs and verifies unit files: no project code runs.
  ASAN_OPTIONS="${common}:detect_leaks=1:log_path=${logs}/asan" UBSAN_OPTIONS="${ubsan}" \
    ctest --test-dir "${build}" --output-on-failure -j "${JOBS}" \
    -E "^systemd\\.|${strace_tests}" "$@" || rc=$?
  ASAN_OPTIONS="${common}:detect_leaks=0:log_path=${logs}/asan" UBSAN_OPTIONS="${ubsan}" \
    ctest --test-dir "${build}" --output-on-failure -j "${JOBS}" \
    -R "${strace_tests}" "$@" || rc=$?
  verdict asan "${logs}" "${rc}" "${start}" "every suite of build-asan"
}

run_tsan() {
  local build="${ROOT}/build-tsan" logs="${ROOT}/build-tsan/sanitizer-logs"
  configure_clang_build "${build}" thread
  # binary:Catch2 test spec (empty: all of it): the suites whose threads run against each
  # other: every in-process daemon suite (tests/daemon), and of the daemon binary's suites
  # single-flight, hostile frames from many threads and the connection limits.
  local suites=(
    "kh_daemon_integration_tests:[single-flight],[frames],[limits]"
    "proto_tests:[transport]"
  )
  local bin
  for bin in $(ninja -C "${build}" -t targets all | sed -n 's/^\(daemon_[a-z_]*tests\): .*/\1/p'); do
    suites=("${bin}:" "${suites[@]}")
  done
  build "${build}" $(printf '%s\n' "${suites[@]%%:*}" | sort -u)
  fresh_log_dir "${logs}"
  # clang 14's TSan needs the address layout of <= 28 random mmap bits; newer kernels may
  # use more, and then only a run without ASLR works.
  local launcher=()
  if [[ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ]]; then
    launcher=(setarch "$(uname -m)" -R)
  fi
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=${logs}/tsan"
  local start=${SECONDS} rc=0 suite
  for suite in "${suites[@]}"; do
    local bin="${suite%%:*}" spec="${suite#*:}" suite_start=${SECONDS} suite_rc=0
    timeout 900 "${launcher[@]}" "${build}/bin/${bin}" --warn NoAssertions ${spec:+"${spec}"} ||
      suite_rc=$?
    printf 'sanitize: tsan %s %s: %s (%ss)\n' "${bin}" "${spec:-(all)}" \
      "$([[ ${suite_rc} -eq 0 ]] && echo passed || echo "FAILED rc=${suite_rc}")" \
      "$((SECONDS - suite_start))"
    [[ ${suite_rc} -eq 0 ]] || rc=1
  done
  verdict tsan "${logs}" "${rc}" "${start}" "the concurrency suites"
}

rc=0
if [[ "${MODE}" == asan || "${MODE}" == all ]]; then run_asan "$@" || rc=1; fi
if [[ "${MODE}" == tsan || "${MODE}" == all ]]; then run_tsan || rc=1; fi
exit "${rc}"
