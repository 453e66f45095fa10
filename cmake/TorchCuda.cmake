# The CUDA half of the venv torch wheel and the nvcc that builds the CUDA fixture variants.
#
# Toolkit/wheel mismatch: the wheel is cu132 and ships the CUDA runtime (nvidia/cu13/lib) and
# headers, but no nvcc; the machines have nvcc 13.0. A variant is named after the nvcc that
# compiled it (cu130) and `kernels`' rule decides where it may run: the same CUDA major as
# torch's, a minor no newer (research/kernels-library.md §2.1). So nvcc 13.0 with torch cu132
# gives torch215-cxx11-cu130-x86_64-linux, accepted by cu132 hosts; an nvcc of another major,
# or a newer minor than torch's, would build variants no host with this torch accepts, so the
# CUDA fixtures are skipped (or the configure fails when they were asked for).
# The .cu files include no torch header: nvcc 13.0 then never parses headers that torch
# compiled against 13.2. The bindings (.cpp, g++) use c10/cuda against the wheel's 13.2
# headers and link its libc10_cuda, libtorch_cuda and libcudart.so.13, as Hub builds do.
#
# Input:  KERNELHUB_CUDA_FIXTURES  AUTO (default: build when everything is found), ON, OFF
# Provides (after include(TorchCpu.cmake)):
#   KH_TORCH_CUDA_FOUND    TRUE when the CUDA fixtures are built
#   KH_TORCH_CUDA_VARIANT  e.g. torch215-cxx11-cu130-x86_64-linux
#   KH_TORCH_CUDA_ARCHS    capabilities for metadata.json, e.g. 8.0;9.0
#   KH_TORCH_CUDA_WHY      why they are not built, when they are not
#   kh::torch_cuda         INTERFACE target: kh::torch_cpu + libtorch_cuda, libc10_cuda, cudart
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/TorchCpu.cmake)

set(KERNELHUB_CUDA_FIXTURES AUTO CACHE STRING
    "Build the CUDA fixture variants with nvcc: AUTO (when nvcc and the wheel's CUDA parts are found), ON, OFF")
set_property(CACHE KERNELHUB_CUDA_FIXTURES PROPERTY STRINGS AUTO ON OFF)

set(KH_TORCH_CUDA_FOUND FALSE)
set(KH_TORCH_CUDA_WHY "")
set(KH_TORCH_CUDA_ARCHS 8.0 9.0)
set(_kh_nvidia "${KH_TORCH_DIR}/../nvidia")
cmake_path(NORMAL_PATH _kh_nvidia)

if(KERNELHUB_CUDA_FIXTURES STREQUAL "OFF")
  set(KH_TORCH_CUDA_WHY "KERNELHUB_CUDA_FIXTURES=OFF")
else()
  file(STRINGS "${KH_TORCH_DIR}/version.py" _kh_cuda_line REGEX "^cuda[^=]*=")
  find_program(KH_NVCC nvcc HINTS "$ENV{CUDA_HOME}/bin" /usr/local/cuda/bin)
  if(NOT _kh_cuda_line MATCHES "'([0-9]+)\\.([0-9]+)")
    set(KH_TORCH_CUDA_WHY "the venv torch has no CUDA")
  else()
    set(_kh_torch_cuda_major ${CMAKE_MATCH_1})
    set(_kh_torch_cuda_minor ${CMAKE_MATCH_2})
    # The wheel's CUDA runtime and headers (nvidia-cuda-runtime for cu13: nvidia/cu13).
    set(_kh_cuda_lib_dir "${_kh_nvidia}/cu${_kh_torch_cuda_major}/lib")
    set(_kh_cuda_include_dir "${_kh_nvidia}/cu${_kh_torch_cuda_major}/include")
    if(NOT KH_NVCC)
      set(KH_TORCH_CUDA_WHY "no nvcc (install CUDA ${_kh_torch_cuda_major}.x or set CUDA_HOME)")
    endif()
  endif()
  if(NOT KH_TORCH_CUDA_WHY)
    execute_process(COMMAND "${KH_NVCC}" --version OUTPUT_VARIABLE _kh_nvcc_out)
    if(NOT _kh_nvcc_out MATCHES "release ([0-9]+)\\.([0-9]+)")
      set(KH_TORCH_CUDA_WHY "cannot read the version of ${KH_NVCC}")
    elseif(NOT CMAKE_MATCH_1 EQUAL _kh_torch_cuda_major OR CMAKE_MATCH_2 GREATER _kh_torch_cuda_minor)
      set(KH_TORCH_CUDA_WHY "nvcc ${CMAKE_MATCH_1}.${CMAKE_MATCH_2} cannot build for torch's CUDA "
          "${_kh_torch_cuda_major}.${_kh_torch_cuda_minor} (needs the same major, a minor no newer)")
    else()
      set(_kh_cuda_token "cu${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
    endif()
  endif()
  # A wheel without the runtime's headers or library (other packagings than the nvidia/cu<N>
  # wheels): the toolkit of that nvcc, which has the same major version, provides them.
  if(NOT KH_TORCH_CUDA_WHY)
    cmake_path(GET KH_NVCC PARENT_PATH _kh_toolkit_bin)
    cmake_path(GET _kh_toolkit_bin PARENT_PATH _kh_toolkit)
    if(NOT EXISTS "${_kh_cuda_include_dir}/cuda_runtime_api.h"
       AND EXISTS "${_kh_toolkit}/include/cuda_runtime_api.h")
      set(_kh_cuda_include_dir "${_kh_toolkit}/include")
    endif()
    if(NOT EXISTS "${_kh_cuda_lib_dir}/libcudart.so.${_kh_torch_cuda_major}")
      foreach(_kh_dir "${_kh_toolkit}/lib64" "${_kh_toolkit}/lib" "${_kh_toolkit}/targets/x86_64-linux/lib")
        if(EXISTS "${_kh_dir}/libcudart.so.${_kh_torch_cuda_major}")
          set(_kh_cuda_lib_dir "${_kh_dir}")
          break()
        endif()
      endforeach()
    endif()
  endif()
  if(NOT KH_TORCH_CUDA_WHY)
    foreach(_kh_file "${KH_TORCH_LIB_DIR}/libtorch_cuda.so" "${KH_TORCH_LIB_DIR}/libc10_cuda.so"
                     "${_kh_cuda_lib_dir}/libcudart.so.${_kh_torch_cuda_major}"
                     "${_kh_cuda_include_dir}/cuda_runtime_api.h")
      if(NOT EXISTS "${_kh_file}")
        set(KH_TORCH_CUDA_WHY "${_kh_file} is missing from the venv")
        break()
      endif()
    endforeach()
  endif()
  if(NOT KH_TORCH_CUDA_WHY)
    set(KH_TORCH_CUDA_FOUND TRUE)
    string(REPLACE "-cpu-" "-${_kh_cuda_token}-" KH_TORCH_CUDA_VARIANT "${KH_TORCH_CPU_VARIANT}")
  elseif(KERNELHUB_CUDA_FIXTURES STREQUAL "ON")
    message(FATAL_ERROR "KERNELHUB_CUDA_FIXTURES=ON, but ${KH_TORCH_CUDA_WHY}")
  endif()
endif()

if(KH_TORCH_CUDA_FOUND AND NOT TARGET kh::torch_cuda)
  add_library(kh_torch_cuda INTERFACE)
  add_library(kh::torch_cuda ALIAS kh_torch_cuda)
  target_include_directories(kh_torch_cuda SYSTEM INTERFACE
    "${_kh_cuda_include_dir}" "${_kh_cuda_include_dir}/cccl")
  target_link_libraries(kh_torch_cuda INTERFACE kh::torch_cpu
    "${KH_TORCH_LIB_DIR}/libtorch_cuda.so"
    "${KH_TORCH_LIB_DIR}/libc10_cuda.so"
    "${_kh_cuda_lib_dir}/libcudart.so.${_kh_torch_cuda_major}")
  # libtorch_cuda's own libraries live in the nvidia wheels (its RPATH finds them at run
  # time); the linker needs to be told where, to check them.
  file(GLOB _kh_nvidia_libs LIST_DIRECTORIES true "${_kh_nvidia}/*/lib")
  foreach(_kh_dir IN LISTS _kh_nvidia_libs)
    target_link_options(kh_torch_cuda INTERFACE "LINKER:-rpath-link,${_kh_dir}")
  endforeach()
endif()

get_property(_kh_reported GLOBAL PROPERTY KH_TORCH_CUDA_REPORTED)
if(NOT _kh_reported)
  set_property(GLOBAL PROPERTY KH_TORCH_CUDA_REPORTED TRUE)
  if(KH_TORCH_CUDA_FOUND)
    message(STATUS "CUDA fixtures: ${KH_NVCC} -> ${KH_TORCH_CUDA_VARIANT} (sm80, sm90)")
  else()
    message(STATUS "CUDA fixtures skipped: ${KH_TORCH_CUDA_WHY}")
  endif()
endif()
