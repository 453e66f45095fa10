# All third-party libraries come from Debian packages (scripts/setup.sh installs them).
#
# KERNELHUB_WITH_HUB=OFF (the offline build: trust, loader, dispatcher, fixtures) needs only
# OpenSSL's libcrypto and two header-only libraries. A host without their -dev packages (a
# GPU host, scripts/gpu-check.sh) can point at headers it brought along: nlohmann/json.hpp
# and toml++/toml.h are then found on CMAKE_INCLUDE_PATH, and OpenSSL by
# OPENSSL_INCLUDE_DIR / OPENSSL_CRYPTO_LIBRARY (FindOpenSSL's own hints).
find_package(Threads REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(PkgConfig QUIET)

find_package(nlohmann_json 3.10 QUIET)
if(NOT nlohmann_json_FOUND)
  find_path(KH_NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp REQUIRED)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE
    "${KH_NLOHMANN_JSON_INCLUDE_DIR}")
endif()

# kh::toml: toml++ as Debian builds it (a shared library), else header-only.
if(PKG_CONFIG_FOUND)
  pkg_check_modules(TOMLPP QUIET IMPORTED_TARGET tomlplusplus)
endif()
add_library(kh_toml INTERFACE)
add_library(kh::toml ALIAS kh_toml)
if(TOMLPP_FOUND)
  target_link_libraries(kh_toml INTERFACE PkgConfig::TOMLPP)
else()
  find_path(KH_TOMLPP_INCLUDE_DIR toml++/toml.h REQUIRED)
  target_include_directories(kh_toml SYSTEM INTERFACE "${KH_TOMLPP_INCLUDE_DIR}")
  target_compile_definitions(kh_toml INTERFACE TOML_HEADER_ONLY=1)
endif()

if(KERNELHUB_WITH_HUB)
  find_package(PkgConfig REQUIRED)
  find_package(CURL REQUIRED)
  find_package(spdlog REQUIRED)
  find_package(CLI11 REQUIRED)
  find_package(LibArchive REQUIRED)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
  pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
  pkg_check_modules(LIBARCHIVE REQUIRED IMPORTED_TARGET libarchive)
  if(NOT TOMLPP_FOUND)
    message(FATAL_ERROR "tomlplusplus not found by pkg-config: run scripts/setup.sh")
  endif()
endif()
