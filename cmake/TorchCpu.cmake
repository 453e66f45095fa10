# The CPU half of the pinned PyPI torch wheel in the project venv, as one imported target.
#
# Why not find_package(Torch): the wheel is CUDA-built (cu132) and its TorchConfig probes the
# CUDA toolkit, which on these machines is a different version (13.0) and is not needed for
# CPU code. We only need the headers, libtorch_cpu and libc10.
#
# Provides:
#   KERNELHUB_PYTHON        the venv interpreter (cache variable)
#   KH_TORCH_DIR            .../site-packages/torch
#   KH_TORCH_VERSION        e.g. 2.15.0 (local version label such as +cu132 stripped)
#   KH_TORCH_CPU_VARIANT    e.g. torch215-cxx11-cpu-x86_64-linux (the kernel-builder variant name)
#   KH_TORCH_LIB_DIR        .../torch/lib (for LD_LIBRARY_PATH of non-Python hosts)
#   kh::torch_cpu           INTERFACE target: include dirs, cxx11 ABI define, libtorch_cpu + libc10
include_guard(DIRECTORY)

set(KERNELHUB_PYTHON "${CMAKE_CURRENT_LIST_DIR}/../.venv/bin/python"
    CACHE FILEPATH "Python interpreter of the project venv (scripts/setup.sh creates it)")
if(NOT EXISTS "${KERNELHUB_PYTHON}")
  message(FATAL_ERROR "No venv python at ${KERNELHUB_PYTHON}; run scripts/setup.sh first "
                      "or configure with -DKERNELHUB_PYTHON=/path/to/python")
endif()

# find_spec locates the package without importing it (importing torch takes seconds).
execute_process(
  COMMAND "${KERNELHUB_PYTHON}" -c
          "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"
  OUTPUT_VARIABLE KH_TORCH_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _kh_rc)
if(NOT _kh_rc EQUAL 0 OR NOT EXISTS "${KH_TORCH_DIR}/version.py")
  message(FATAL_ERROR "torch is not installed in ${KERNELHUB_PYTHON}; run scripts/setup.sh")
endif()

file(STRINGS "${KH_TORCH_DIR}/version.py" _kh_version_line REGEX "^__version__ *=")
if(NOT _kh_version_line MATCHES "'([0-9]+)\\.([0-9]+)\\.([0-9]+)")
  message(FATAL_ERROR "Cannot read the torch version from ${KH_TORCH_DIR}/version.py")
endif()
set(KH_TORCH_VERSION "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}.${CMAKE_MATCH_3}")
set(_kh_torch_tag "torch${CMAKE_MATCH_1}${CMAKE_MATCH_2}")

# Same rule as kernel-builder's generate_build_name: torch<MAJ><MIN>-cxx11-<compute>-<arch>-<os>.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(_kh_arch x86_64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(_kh_arch aarch64)
else()
  message(FATAL_ERROR "Unsupported CPU architecture for kernel variants: ${CMAKE_SYSTEM_PROCESSOR}")
endif()
set(KH_TORCH_CPU_VARIANT "${_kh_torch_tag}-cxx11-cpu-${_kh_arch}-linux")
set(KH_TORCH_LIB_DIR "${KH_TORCH_DIR}/lib")

foreach(_kh_lib torch_cpu c10)
  if(NOT EXISTS "${KH_TORCH_LIB_DIR}/lib${_kh_lib}.so")
    message(FATAL_ERROR "lib${_kh_lib}.so missing from ${KH_TORCH_LIB_DIR}")
  endif()
endforeach()

if(NOT TARGET kh::torch_cpu)
  add_library(kh_torch_cpu INTERFACE)
  add_library(kh::torch_cpu ALIAS kh_torch_cpu)
  # SYSTEM: torch headers are not ours to warn about.
  target_include_directories(kh_torch_cpu SYSTEM INTERFACE
    "${KH_TORCH_DIR}/include"
    "${KH_TORCH_DIR}/include/torch/csrc/api/include")
  # The wheels are built with the C++11 ABI; a mismatch gives link errors on std::string.
  target_compile_definitions(kh_torch_cpu INTERFACE _GLIBCXX_USE_CXX11_ABI=1)
  target_compile_features(kh_torch_cpu INTERFACE cxx_std_20)
  target_link_libraries(kh_torch_cpu INTERFACE
    "${KH_TORCH_LIB_DIR}/libtorch_cpu.so"
    "${KH_TORCH_LIB_DIR}/libc10.so")
endif()

get_property(_kh_reported GLOBAL PROPERTY KH_TORCH_CPU_REPORTED)
if(NOT _kh_reported)
  set_property(GLOBAL PROPERTY KH_TORCH_CPU_REPORTED TRUE)
  message(STATUS "torch ${KH_TORCH_VERSION} (CPU) from ${KH_TORCH_DIR}; variant ${KH_TORCH_CPU_VARIANT}")
endif()
