# kh_variant: build-variant naming, ranking and platform detection (no network, no cache),
# kept apart from kh_hub so the CLI and tests can use it on its own. Nothing of the build
# tree is compiled in: torch is found at run time from the user's environment.
add_library(kh_variant
  ${CMAKE_CURRENT_LIST_DIR}/variant.cpp
  ${CMAKE_CURRENT_LIST_DIR}/variant_name.cpp
  ${CMAKE_CURRENT_LIST_DIR}/platform.cpp
  ${CMAKE_CURRENT_LIST_DIR}/python_probe.cpp
)
target_include_directories(kh_variant PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(kh_variant PUBLIC kh_trust)
