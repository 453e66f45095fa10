# attention_hub_tests: the hub and library backends against the fixture Hub store (served by
# `kernelhub serve`, fetched in-process or through kernelhubd) and the local library builds
# in <build>/fixtures/local. Every TEST_CASE runs in its own process under ctest, which the
# tests rely on: a kernel namespace loads once per process and trust is read at activation.
file(GLOB KH_ATTENTION_HUB_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_SOURCE_DIR}/hub_*.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/library_*_test.cpp)
kh_add_test(attention_hub_tests SOURCES ${KH_ATTENTION_HUB_SOURCES}
            LIBS kh_attention kh_test_support)
target_compile_definitions(attention_hub_tests PRIVATE KH_BUILD_DIR="${PROJECT_BINARY_DIR}")
foreach(dependency kernelhub kernelhubd kh_fixture_hub
                   kh_fixture_local_flash_attn_variant kh_fixture_local_flash_attn_old_variant
                   kh_fixture_local_flash_attn3_variant kh_fixture_local_sageattention_variant
                   kh_fixture_local_xformers_variant)
  if(TARGET ${dependency})
    add_dependencies(attention_hub_tests ${dependency})
  endif()
endforeach()
