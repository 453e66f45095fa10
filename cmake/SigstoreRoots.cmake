# The Sigstore trusted roots kernelhub pins (production and staging), taken from the
# `sigstore` wheel that scripts/setup.sh installs into .venv and compiled into kh_sigstore:
# verification never fetches trust material, and no file another user can write decides it.
# An admin who refreshes the root out-of-band points `[signatures] trusted_root` at a file.
file(GLOB kh_sigstore_store_dirs
     "${PROJECT_SOURCE_DIR}/.venv/lib/python3*/site-packages/sigstore/_store")
list(GET kh_sigstore_store_dirs 0 kh_sigstore_store_default)
set(KERNELHUB_SIGSTORE_STORE "${kh_sigstore_store_default}" CACHE PATH
    "sigstore-python's _store folder (holds the production and staging trusted_root.json)")
set(kh_root_production "${KERNELHUB_SIGSTORE_STORE}/https%3A%2F%2Ftuf-repo-cdn.sigstore.dev/trusted_root.json")
set(kh_root_staging "${KERNELHUB_SIGSTORE_STORE}/https%3A%2F%2Ftuf-repo-cdn.sigstage.dev/trusted_root.json")
foreach(root IN ITEMS "${kh_root_production}" "${kh_root_staging}")
  if(NOT EXISTS "${root}")
    message(FATAL_ERROR "No Sigstore trusted root at ${root}; run scripts/setup.sh (it installs "
                        "the pinned sigstore wheel) or set -DKERNELHUB_SIGSTORE_STORE=")
  endif()
endforeach()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${kh_root_production}" "${kh_root_staging}")
file(READ "${kh_root_production}" KH_SIGSTORE_ROOT_PRODUCTION)
file(READ "${kh_root_staging}" KH_SIGSTORE_ROOT_STAGING)
configure_file("${PROJECT_SOURCE_DIR}/trust/sigstore/pinned_roots.cpp.in"
               "${PROJECT_BINARY_DIR}/generated/pinned_roots.cpp" @ONLY)
