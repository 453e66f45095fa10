# kh_variant: build-variant naming, ranking and platform detection (no network, no cache),
# kept apart from kh_hub so the CLI and tests can use it on its own.
add_library(kh_variant
  ${CMAKE_CURRENT_LIST_DIR}/variant.cpp
  ${CMAKE_CURRENT_LIST_DIR}/variant_name.cpp
  ${CMAKE_CURRENT_LIST_DIR}/platform.cpp
)
target_include_directories(kh_variant PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(kh_variant PUBLIC kh_trust)
# Where detect_platform looks for torch when no virtualenv is active.
target_compile_definitions(kh_variant PRIVATE KERNELHUB_DEFAULT_VENV="${PROJECT_SOURCE_DIR}/.venv")
