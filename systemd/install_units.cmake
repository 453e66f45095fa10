# Runs at `cmake --install` time, so the units name the binary under the prefix actually
# installed to (--prefix overrides the configure-time prefix). DESTDIR is honoured by
# file(INSTALL).
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(KH_SYSCONFDIR "/etc")  # as GNUInstallDirs does for /usr
else()
  set(KH_SYSCONFDIR "${prefix}/etc")
endif()
# kernelhubd is installed before this runs (daemon/ comes first); name wherever it went.
set(KH_DAEMON_PATH "${prefix}/${KH_BINDIR}/kernelhubd")
if(EXISTS "$ENV{DESTDIR}${prefix}/${KH_SBINDIR}/kernelhubd")
  set(KH_DAEMON_PATH "${prefix}/${KH_SBINDIR}/kernelhubd")
endif()
set(KH_DOCDIR "${prefix}/${KH_DOCDIR_REL}")
foreach(unit kernelhubd.socket kernelhubd.service)
  configure_file("${KH_UNIT_SRC}/${unit}.in" "${KH_UNIT_STAGE}/${unit}" @ONLY)
  file(INSTALL DESTINATION "${prefix}/${KH_UNITDIR}" TYPE FILE FILES "${KH_UNIT_STAGE}/${unit}")
endforeach()
# The policy lives in <sysconfdir>/kernelhub; never overwrite one the admin already has.
# cpack installs into a fresh DESTDIR, so the Debian package always carries it, as a conffile
# (cmake/DebianPackages.cmake): there dpkg, not this check, keeps the admin's edits.
if(NOT EXISTS "$ENV{DESTDIR}${KH_SYSCONFDIR}/kernelhub/policy.toml")
  file(INSTALL DESTINATION "${KH_SYSCONFDIR}/kernelhub" TYPE FILE FILES "${KH_UNIT_SRC}/policy.toml")
endif()
