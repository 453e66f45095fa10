# Sourced by scripts/fuzz.sh and scripts/sanitize.sh: the clang builds, configured in one place.
#   build-asan  ASan + UBSan, every object also instrumented for libFuzzer: the fuzz harnesses
#               and the ASan suites come from this one build, so the product code is compiled
#               once for both (KERNELHUB_FUZZ_COVERAGE).
#   build-tsan  TSan, for the concurrency suites.
# Both: clang at -O1, LibTorch and the torch fixtures off (the suites borrow the main build's
# fixture store), ccache with the same rules as scripts/build.sh.
# Callers set ROOT (the checkout) and MAIN_BUILD (the main build, for its fixtures).

# configure_clang_build <build dir> <address|thread>: CMakePresets.json's `asan` or `tsan`
# preset (clang, -O1, no LibTorch parts, ccache), in <build dir>.
configure_clang_build() {
  local build="$1" sanitize="$2" preset extra=()
  case "${sanitize}" in
    address) preset=asan ;;
    thread) preset=tsan ;;
    *)
      printf 'configure_clang_build: %s is not address or thread\n' "${sanitize}" >&2
      return 1
      ;;
  esac
  # The fixture-backed suites borrow the main build's store; without one they are left out.
  if [[ -f "${MAIN_BUILD}/fixtures/variant.txt" ]]; then
    extra+=(-DKERNELHUB_FIXTURE_DIR="${MAIN_BUILD}/fixtures")
  else
    extra+=(-DKERNELHUB_FIXTURE_DIR=)
  fi
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-${ROOT}}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
  mkdir -p "${build}"
  (cd "${ROOT}" && cmake --preset "${preset}" -B "${build}" "${extra[@]}") \
    >"${build}/configure.log" 2>&1 || { cat "${build}/configure.log" >&2; return 1; }
}
