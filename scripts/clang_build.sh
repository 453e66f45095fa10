# Sourced by scripts/fuzz.sh and scripts/sanitize.sh: the clang builds, configured in one place.
#   build-asan  ASan + UBSan, every object also instrumented for libFuzzer: the fuzz harnesses
#               and the ASan suites come from this one build, so the product code is compiled
#               once for both (KERNELHUB_FUZZ_COVERAGE).
#   build-tsan  TSan, for the concurrency suites.
# Both: clang at -O1, LibTorch and the torch fixtures off (the suites borrow the main build's
# fixture store), ccache with the same rules as scripts/build.sh.
# Callers set ROOT (the checkout) and MAIN_BUILD (the main build, for its fixtures).

# configure_clang_build <build dir> <address|thread>
configure_clang_build() {
  local build="$1" sanitize="$2" extra=()
  # The fixture-backed suites borrow the main build's store; without one they are left out.
  if [[ -f "${MAIN_BUILD}/fixtures/variant.txt" ]]; then
    extra+=(-DKERNELHUB_FIXTURE_DIR="${MAIN_BUILD}/fixtures")
  fi
  if [[ "${sanitize}" == address ]]; then
    extra+=(-DKERNELHUB_FUZZ_COVERAGE=ON -DKERNELHUB_BUILD_FUZZ=ON)
  else
    extra+=(-DKERNELHUB_BUILD_FUZZ=OFF)
  fi
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-${ROOT}}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
  mkdir -p "${build}"
  CC=clang CXX=clang++ cmake -S "${ROOT}" -B "${build}" -G Ninja \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
    -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" \
    "-DCMAKE_C_FLAGS_DEBUG=-O1 -gline-tables-only" \
    -DKERNELHUB_SANITIZE="${sanitize}" -DKERNELHUB_WITH_TORCH=OFF "${extra[@]}" \
    -DKERNELHUB_BUILD_FIXTURES=OFF \
    >"${build}/configure.log" 2>&1 || { cat "${build}/configure.log" >&2; return 1; }
}
