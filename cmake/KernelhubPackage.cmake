# libkernelhub: the installable library apps link (the loader, the attention dispatcher and
# the layer modules with kernelize, with the client, fetch pipeline and cache they use), and
# the CMake package that finds it:
#
#   find_package(kernelhub CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE kernelhub::kernelhub)   # #include <kernelhub/attention.hpp>
#
# The static kh_* libraries are folded into one shared library; kh_attention whole, so every
# public symbol is there whether or not the library itself uses it.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
include(${CMAKE_CURRENT_LIST_DIR}/TorchCpu.cmake)  # KH_TORCH_DIR / KH_TORCH_VERSION in this scope

add_library(kernelhub_shared SHARED ${PROJECT_SOURCE_DIR}/cmake/kernelhub_version.cpp)
set_target_properties(kernelhub_shared PROPERTIES
  OUTPUT_NAME kernelhub
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  # The pyshim is installed beside it; torch's libraries come from the app's link line.
  INSTALL_RPATH "$ORIGIN")
target_compile_definitions(kernelhub_shared PRIVATE KERNELHUB_VERSION="${PROJECT_VERSION}")
target_link_libraries(kernelhub_shared
  PUBLIC kh::torch_cpu
  PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,kh_attention>")
# Python-only kernels (<kernelhub/python_kernel.hpp>): all of kh_python, as its objects (the
# archive comes in through kh_attention and may be named once). The bridge is installed
# beside the library (its install() is in python/CMakeLists.txt) and found there at run time.
target_sources(kernelhub_shared PRIVATE $<TARGET_OBJECTS:kh_python>)
install(FILES ${PROJECT_SOURCE_DIR}/python/include/kernelhub/python_kernel.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kernelhub COMPONENT dev)
# Layer modules and kernelize (<kernelhub/layers.hpp>, <kernelhub/kernelize.hpp>): all of
# kh_layers, as its objects like kh_python's.
target_sources(kernelhub_shared PRIVATE $<TARGET_OBJECTS:kh_layers>)
install(FILES ${PROJECT_SOURCE_DIR}/layers/include/kernelhub/layers.hpp
              ${PROJECT_SOURCE_DIR}/layers/include/kernelhub/kernelize.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kernelhub COMPONENT dev)
# kernelize.hpp's modes and capability intervals, shared with the mapping file's parser.
install(FILES ${PROJECT_SOURCE_DIR}/trust/include/kernelhub/trust/layer_mode.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kernelhub/trust COMPONENT dev)
# Context parallelism (<kernelhub/context_parallel.hpp>, built wherever this package is): all
# of it too. Its c10d symbols are in libtorch_cpu, so apps link nothing more (NCCL:
# kh_parallel_nccl, not here). Its objects, not the archive: linking kh_parallel would name
# kh_attention a second time.
target_sources(kernelhub_shared PRIVATE $<TARGET_OBJECTS:kh_parallel>)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/parallel/include/kernelhub
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev FILES_MATCHING PATTERN "context_parallel.hpp")
# Nothing of the static libraries' dependencies may leak undefined into an app's link.
target_link_options(kernelhub_shared PRIVATE -Wl,--no-undefined)

# Every install() of the package names COMPONENT dev: the libkernelhub-dev Debian package
# (cmake/DebianPackages.cmake).
install(TARGETS kernelhub_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
# The app API only: include/kernelhub/attention/ holds the parts the tests check, not for apps.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/attention/include/kernelhub
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev FILES_MATCHING PATTERN "*.hpp"
        PATTERN "attention" EXCLUDE)

# The package config records where the torch of this build lives; an app may point
# KERNELHUB_TORCH_DIR at another install of the same torch version.
set(KERNELHUB_PACKAGE_TORCH_DIR "${KH_TORCH_DIR}")
set(KERNELHUB_PACKAGE_TORCH_VERSION "${KH_TORCH_VERSION}")
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/kernelhubConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/kernelhubConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kernelhub
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/package/kernelhubConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/kernelhubConfig.cmake
              ${PROJECT_BINARY_DIR}/package/kernelhubConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kernelhub COMPONENT dev)
