# The Debian packages, built by CPack's DEB generator from the install() rules, by component:
#
#   kernelhub         (COMPONENT kernelhub, the default): the CLI, kernelhubd, its systemd
#                     units, sysusers.d/tmpfiles.d entries, /etc/kernelhub/policy.toml (a
#                     conffile), the nginx site-cache files, the docs;
#   libkernelhub-dev  (COMPONENT dev): libkernelhub, the pyshim and the Python bridge, the
#                     public headers and the CMake package.
#
# From a build dir that has built them (scripts/build.sh, or at least the targets kernelhub,
# kernelhubd, kernelhub_shared, kernelhub_pyshim, kernelhub_python_bridge):
#
#   cpack -G DEB -B <out dir>      # <out dir>/kernelhub_<version>_<arch>.deb, ...
#
# tests/package/debian_test.sh checks what they hold, runs lintian on them and runs what
# they install. Maintainer scripts, conffiles and lintian overrides are in cmake/debian/.
include_guard(GLOBAL)
include(GNUInstallDirs)

set(KERNELHUB_DEB_MAINTAINER "kernelhub maintainers <kernelhub@example.org>"
    CACHE STRING "Maintainer field of the Debian packages")

set(kh_deb_src "${PROJECT_SOURCE_DIR}/cmake/debian")
set(kh_deb_out "${PROJECT_BINARY_DIR}/debian")
file(MAKE_DIRECTORY "${kh_deb_out}")

# The package version is project()'s; the changelog dpkg and lintian read must say the same.
file(STRINGS "${kh_deb_src}/changelog" kh_deb_changelog_head LIMIT_COUNT 1)
if(NOT kh_deb_changelog_head MATCHES "^kernelhub \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "cmake/debian/changelog starts with '${kh_deb_changelog_head}': add an "
                      "entry for ${PROJECT_VERSION} (project() in CMakeLists.txt) on top")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${kh_deb_src}/changelog")
# -n: no name or time stamp in the gzip header, so the same changelog gives the same bytes.
execute_process(COMMAND gzip -9nc "${kh_deb_src}/changelog"
                OUTPUT_FILE "${kh_deb_out}/changelog.gz" RESULT_VARIABLE kh_deb_gzip_rc)
if(NOT kh_deb_gzip_rc EQUAL 0)
  message(FATAL_ERROR "gzip of cmake/debian/changelog failed (${kh_deb_gzip_rc})")
endif()

# Files only the packages carry: EXCLUDE_FROM_ALL keeps them out of a plain `cmake --install`
# (which installs all components), while cpack installs each component by name and gets them.
function(kh_deb_package_files component package)
  install(FILES "${kh_deb_src}/copyright" "${kh_deb_out}/changelog.gz"
          DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/${package}"
          COMPONENT ${component} EXCLUDE_FROM_ALL)
  if(EXISTS "${kh_deb_src}/${package}/lintian-overrides")
    install(FILES "${kh_deb_src}/${package}/lintian-overrides"
            DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides" RENAME ${package}
            COMPONENT ${component} EXCLUDE_FROM_ALL)
  endif()
endfunction()

kh_deb_package_files(kernelhub kernelhub)
# The site cache (deploy/nginx/README.md): run-site-cache.sh finds its template beside itself.
install(FILES "${PROJECT_SOURCE_DIR}/deploy/nginx/README.md"
              "${PROJECT_SOURCE_DIR}/deploy/nginx/site-cache.conf.in"
        DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/kernelhub/nginx" COMPONENT kernelhub EXCLUDE_FROM_ALL)
install(PROGRAMS "${PROJECT_SOURCE_DIR}/deploy/nginx/run-site-cache.sh"
        DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/kernelhub/nginx" COMPONENT kernelhub EXCLUDE_FROM_ALL)
set(kh_deb_components kernelhub)
if(TARGET kernelhub_shared)
  kh_deb_package_files(dev libkernelhub-dev)
  list(APPEND kh_deb_components dev)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kernelhub)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "${KERNELHUB_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KERNELHUB_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SOURCE kernelhub)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${kh_deb_components})
# The packages install under /usr, and the units must name /usr/sbin/kernelhubd: with DESTDIR
# set, install_units.cmake sees prefix /usr (not cpack's staging folder) and writes that.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# RelWithDebInfo objects are mostly debug info; Debian ships stripped binaries.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# cpack packages what is built, as `cmake --install` does: by default its `preinstall` step
# would build `all` (every test and fixture) before a package of five targets.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_DEBIAN_KERNELHUB_PACKAGE_NAME kernelhub)
set(CPACK_DEBIAN_KERNELHUB_PACKAGE_SECTION utils)
# systemd-sysusers in the postinst, as debhelper's dh_installsysusers depends.
set(CPACK_DEBIAN_KERNELHUB_PACKAGE_DEPENDS "systemd | systemd-standalone-sysusers | systemd-sysusers")
set(CPACK_DEBIAN_KERNELHUB_PACKAGE_SUGGESTS nginx)
set(CPACK_DEBIAN_KERNELHUB_PACKAGE_CONTROL_EXTRA
    "${kh_deb_src}/kernelhub/conffiles" "${kh_deb_src}/kernelhub/postinst"
    "${kh_deb_src}/kernelhub/prerm" "${kh_deb_src}/kernelhub/postrm")
# Debian's description: a synopsis, then lines under 80 columns ('.' is an empty line).
set(CPACK_COMPONENT_KERNELHUB_DESCRIPTION
    "fetch, verify and share Hugging Face Hub compute kernels
kernelhub fetches compute kernels from the Hugging Face Hub, checks who
published them and that their bytes are what was published, and keeps them
in a cache shared with huggingface_hub.
.
This package holds the kernelhub command and kernelhubd, the daemon that owns
one cache for every user of the host and hands out read-only file
descriptors, started by its systemd socket (kernelhubd.socket), with the
admin policy in /etc/kernelhub/policy.toml and the nginx site-cache files in
/usr/share/kernelhub/nginx.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libkernelhub-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "kernelhub (= ${PROJECT_VERSION})")
# A shlibs file for libkernelhub.so.0.1 (one setting for both packages; kernelhub has no shared
# library), and ldconfig by dpkg's trigger. The postinst and postrm do nothing: without them
# cpack writes its own that run ldconfig, the host's even when dpkg installs into DPKG_ROOT.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_DEV_PACKAGE_CONTROL_EXTRA
    "${kh_deb_src}/libkernelhub-dev/triggers" "${kh_deb_src}/libkernelhub-dev/postinst"
    "${kh_deb_src}/libkernelhub-dev/postrm")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "kernelhub library for C++ apps: Hub kernels and attention dispatch
libkernelhub loads verified Hugging Face Hub kernels into a LibTorch app: the
kernel loader, the attention dispatcher, context parallelism and Python-only
kernels, with the daemon client and the in-process fallback.
.
This package holds the library, its Python shim and bridge, the public
headers and the CMake package (find_package(kernelhub)). LibTorch is not a
Debian package: apps link the torch they were built with, of the version the
CMake package names.")
# libkernelhub needs libtorch_cpu and libc10 (the bridge libtorch_python too), which come from
# the app's link line (cmake/KernelhubPackage.cmake), not from a Debian package: no Depends may
# name them. dpkg-shlibdeps searches them in this build's torch (-l): found there and owned by
# no package, they add nothing (cpack passes --ignore-missing-info), while every other library
# maps to its Debian package as usual. Not searched, they would be unfound, which fails
# dpkg-shlibdeps for a library with a versioned SONAME (torch's have none today: a warning).
if(TARGET kernelhub_shared)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${KH_TORCH_LIB_DIR}")
endif()

include(CPack)
