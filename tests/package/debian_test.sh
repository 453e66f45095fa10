#!/usr/bin/env bash
# debian_test.sh BUILD_DIR SOURCE_DIR TORCH_LIB_DIR: builds the Debian packages with cpack
# (cmake/DebianPackages.cmake) and checks them: exactly the expected files, the conffile,
# lintian without errors (and no stale override), the binaries run from the unpacked
# packages, the unpacked units pass systemd-analyze verify, and dpkg installs, reinstalls
# and purges kernelhub into an empty root with its maintainer scripts (DPKG_ROOT: the host is
# never touched). A missing tool fails the test.
set -euo pipefail
BUILD="$1"
SOURCE="$2"
TORCH_LIB="$3"
WORK="$(mktemp -d)"
cleanup() {
  rm -rf "${WORK}"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/systemd/daemon_answers.sh
source "$(dirname "${BASH_SOURCE[0]}")/../systemd/daemon_answers.sh"

for tool in cpack dpkg dpkg-deb dpkg-shlibdeps file lintian systemd-analyze readelf ldd; do
  command -v "${tool}" >/dev/null || fail "${tool} not found (scripts/setup.sh installs it)"
done
# The maintainer scripts chown the cache dir to the kernelhub user (in the test root).
[[ "$(id -u)" -eq 0 ]] || fail "run as root: dpkg installs kernelhub into a test root and chowns there"

# --- build -------------------------------------------------------------------------------
OUT="${WORK}/out"
cpack -G DEB --config "${BUILD}/CPackConfig.cmake" -B "${OUT}" >"${WORK}/cpack.log" 2>&1 ||
  { cat "${WORK}/cpack.log" >&2; fail "cpack -G DEB"; }
version="$("${BUILD}/bin/kernelhub" --version | awk '{print $2}')"
arch="$(dpkg --print-architecture)"
DEB="${OUT}/kernelhub_${version}_${arch}.deb"
DEV="${OUT}/libkernelhub-dev_${version}_${arch}.deb"
[[ -f "${DEB}" && -f "${DEV}" ]] || { ls -l "${OUT}" >&2; fail "cpack made no kernelhub_${version}_${arch}.deb and libkernelhub-dev_${version}_${arch}.deb"; }
[[ "$(find "${OUT}" -maxdepth 1 -name '*.deb' | wc -l)" -eq 2 ]] || { ls -l "${OUT}" >&2; fail "cpack made other packages"; }

# --- contents ----------------------------------------------------------------------------
# Each package holds exactly these files and symlinks (directories aside): nothing from
# tests, fixtures or /usr/local, no file in the wrong package.
contents() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort; }
cat >"${WORK}/kernelhub.expected" <<EOF
/etc/kernelhub/policy.toml
/usr/bin/kernelhub
/usr/lib/systemd/system/kernelhubd.service
/usr/lib/systemd/system/kernelhubd.socket
/usr/lib/sysusers.d/kernelhub.conf
/usr/lib/tmpfiles.d/kernelhub.conf
/usr/sbin/kernelhubd
/usr/share/doc/kernelhub/README.md
/usr/share/doc/kernelhub/changelog.gz
/usr/share/doc/kernelhub/copyright
/usr/share/doc/kernelhub/examples/policy.toml
/usr/share/doc/kernelhub/local-store.md
/usr/share/doc/kernelhub/protocol.md
/usr/share/kernelhub/nginx/README.md
/usr/share/kernelhub/nginx/run-site-cache.sh
/usr/share/kernelhub/nginx/site-cache.conf.in
EOF
# The public headers are the app API (cmake/KernelhubPackage.cmake): attention/include/kernelhub's
# top level, python_kernel.hpp, layers.hpp, kernelize.hpp (with trust/layer_mode.hpp) and
# context_parallel.hpp.
{
  for h in "${SOURCE}"/attention/include/kernelhub/*.hpp "${SOURCE}/python/include/kernelhub/python_kernel.hpp" \
           "${SOURCE}"/layers/include/kernelhub/*.hpp \
           "${SOURCE}/parallel/include/kernelhub/context_parallel.hpp"; do
    echo "/usr/include/kernelhub/$(basename "${h}")"
  done
  echo /usr/include/kernelhub/trust/layer_mode.hpp
  so="${version%.*}"  # SOVERSION is major.minor
  printf '%s\n' /usr/lib/libkernelhub.so "/usr/lib/libkernelhub.so.${so}" "/usr/lib/libkernelhub.so.${version}" \
    /usr/lib/libkernelhub_pyshim.so /usr/lib/libkernelhub_python_bridge.so \
    /usr/lib/cmake/kernelhub/kernelhubConfig.cmake /usr/lib/cmake/kernelhub/kernelhubConfigVersion.cmake \
    /usr/share/doc/libkernelhub-dev/changelog.gz /usr/share/doc/libkernelhub-dev/copyright \
    /usr/share/lintian/overrides/libkernelhub-dev
} | sort >"${WORK}/dev.expected"
sort -o "${WORK}/kernelhub.expected" "${WORK}/kernelhub.expected"
for pkg in kernelhub dev; do
  deb="${DEB}"; [[ "${pkg}" == dev ]] && deb="${DEV}"
  contents "${deb}" >"${WORK}/${pkg}.actual"
  diff -u "${WORK}/${pkg}.expected" "${WORK}/${pkg}.actual" >"${WORK}/${pkg}.diff" ||
    { cat "${WORK}/${pkg}.diff" >&2; fail "$(basename "${deb}") does not hold the expected files (- missing, + unexpected)"; }
done
if cat "${WORK}/kernelhub.actual" "${WORK}/dev.actual" | grep -E '^/usr/local/|/tests?/|fixture' >&2; then
  fail "a package carries /usr/local, test or fixture paths"
fi

# Control: the admin policy is the one conffile (every file under /etc must be one), the
# maintainer scripts parse, dpkg-shlibdeps computed the dependencies, libkernelhub-dev has a
# shlibs file and the ldconfig trigger.
dpkg-deb -e "${DEB}" "${WORK}/ctl"
dpkg-deb -e "${DEV}" "${WORK}/devctl"
[[ "$(cat "${WORK}/ctl/conffiles")" == "/etc/kernelhub/policy.toml" ]] ||
  fail "conffiles is not exactly /etc/kernelhub/policy.toml: $(cat "${WORK}/ctl/conffiles")"
[[ "$(grep -c '^/etc/' "${WORK}/kernelhub.actual")" -eq 1 ]] || fail "a file under /etc that is not the conffile"
cmp -s <(dpkg-deb --fsys-tarfile "${DEB}" | tar -xO ./etc/kernelhub/policy.toml) "${SOURCE}/systemd/policy.toml" ||
  fail "the packaged /etc/kernelhub/policy.toml is not systemd/policy.toml"
for script in postinst prerm postrm; do
  [[ -x "${WORK}/ctl/${script}" ]] || fail "kernelhub has no executable ${script}"
  sh -n "${WORK}/ctl/${script}" || fail "kernelhub ${script} does not parse"
done
depends="$(dpkg-deb -f "${DEB}" Depends)"
for dep in 'libc6 (>=' libcurl4 libsystemd0 'systemd | systemd-standalone-sysusers'; do
  grep -qF "${dep}" <<<"${depends}" || fail "kernelhub Depends lacks ${dep}: ${depends}"
done
dev_depends="$(dpkg-deb -f "${DEV}" Depends)"
grep -qF 'libc6 (>=' <<<"${dev_depends}" || fail "libkernelhub-dev Depends lacks libc6 (dpkg-shlibdeps): ${dev_depends}"
if grep -qi torch <<<"${dev_depends}"; then fail "libkernelhub-dev depends on a torch package: ${dev_depends}"; fi
grep -q "^libkernelhub ${version%.*} libkernelhub-dev " "${WORK}/devctl/shlibs" || fail "libkernelhub-dev shlibs: $(cat "${WORK}/devctl/shlibs")"
grep -qx 'activate-noawait ldconfig' "${WORK}/devctl/triggers" || fail "libkernelhub-dev has no ldconfig trigger"

# --- lintian -----------------------------------------------------------------------------
# No error; warnings are printed. An override that no longer matches fails too, so the
# overrides shipped in cmake/debian/ stay exactly what is needed.
lintian --display-info --show-overrides "${DEB}" "${DEV}" >"${WORK}/lintian.log" 2>&1 || true
grep -E '^[EW]: ' "${WORK}/lintian.log" || true
if grep -E '^E: |unused-override|mismatched-override' "${WORK}/lintian.log" >&2; then
  cat "${WORK}/lintian.log" >&2
  fail "lintian reports errors (or an override that matches nothing)"
fi
grep -q '^O: ' "${WORK}/lintian.log" || { cat "${WORK}/lintian.log" >&2; fail "lintian read no override (did it run?)"; }

# --- run what was packaged ---------------------------------------------------------------
ROOT="${WORK}/root"
dpkg-deb -x "${DEB}" "${ROOT}"
dpkg-deb -x "${DEV}" "${ROOT}"
[[ "$("${ROOT}/usr/bin/kernelhub" --version)" == "kernelhub ${version}" ]] || fail "kernelhub --version"
[[ "$("${ROOT}/usr/sbin/kernelhubd" --version)" == "kernelhubd ${version}" ]] || fail "kernelhubd --version"
help="$("${ROOT}/usr/bin/kernelhub" --help)"
for cmd in download status lock verify; do
  grep -qE "^ +${cmd}( |$)" <<<"${help}" || { echo "${help}" >&2; fail "kernelhub --help lists no ${cmd}"; }
done
# The daemon's flag check refuses an out-of-range value, naming the flag.
if "${ROOT}/usr/sbin/kernelhubd" --max-downloads 0 >"${WORK}/flag.log" 2>&1; then fail "kernelhubd accepted --max-downloads 0"; fi
grep -q -- '--max-downloads' "${WORK}/flag.log" || { cat "${WORK}/flag.log" >&2; fail "kernelhubd's refusal names no flag"; }
# The packaged daemon on the packaged policy answers the packaged CLI on its socket.
mkdir -p "${WORK}/answers"
daemon_answers "${ROOT}/usr/sbin/kernelhubd" "${ROOT}/usr/bin/kernelhub" \
  "${ROOT}/etc/kernelhub/policy.toml" "${WORK}/answers" "the packaged daemon on the packaged policy"
# libkernelhub: every library it needs but torch's (the app's) resolves on this host.
missing="$(LD_LIBRARY_PATH="${TORCH_LIB}" ldd "${ROOT}/usr/lib/libkernelhub.so" | grep 'not found' || true)"
[[ -z "${missing}" ]] || fail "libkernelhub.so needs libraries not found: ${missing}"
readelf -d "${ROOT}/usr/lib/libkernelhub.so" | grep -q 'NEEDED.*\[libtorch_cpu.so\]' || fail "libkernelhub.so does not link libtorch_cpu"

# --- the units, as unpacked --------------------------------------------------------------
# systemd-analyze verify --root reads the units and the ExecStart binary from the unpacked
# package; the targets they order against and kill (ExecReload=) come from the host's systemd
# and procps, beside (not over) the package's files. Any output is a failure (it only warns).
VROOT="${WORK}/verify-root"
dpkg-deb -x "${DEB}" "${VROOT}"
mkdir -p "${VROOT}/lib/systemd/system"
cp /usr/lib/systemd/system/*.target "${VROOT}/lib/systemd/system/" || fail "no systemd targets on this host"
cp "$(type -P kill)" "${VROOT}/usr/bin/kill" || fail "no kill binary (procps) on this host"
UNITS="${VROOT}/usr/lib/systemd/system"
# shellcheck disable=SC2016  # the unit's own $KERNELHUBD_OPTIONS, literally
grep -qx 'ExecStart=/usr/sbin/kernelhubd --cache-dir /var/cache/kernelhub --policy /etc/kernelhub/policy.toml $KERNELHUBD_OPTIONS' \
  "${UNITS}/kernelhubd.service" || fail "ExecStart: $(grep ExecStart= "${UNITS}/kernelhubd.service")"
grep -qx 'EnvironmentFile=-/etc/kernelhub/kernelhubd.env' "${UNITS}/kernelhubd.service" || fail "EnvironmentFile"
if ! systemd-analyze verify --man=no --root="${VROOT}" kernelhubd.socket kernelhubd.service >"${WORK}/verify.log" 2>&1; then
  cat "${WORK}/verify.log" >&2; fail "systemd-analyze verify failed on the unpacked units"
fi
[[ ! -s "${WORK}/verify.log" ]] || { cat "${WORK}/verify.log" >&2; fail "systemd-analyze verify warned on the unpacked units"; }
systemd-analyze security --offline=true --threshold=20 "${UNITS}/kernelhubd.service" >"${WORK}/security.log" 2>&1 ||
  { cat "${WORK}/security.log" >&2; fail "the packaged service's exposure is above 2.0"; }

# --- dpkg into an empty root -------------------------------------------------------------
# dpkg --root with chrootless maintainer scripts (they get DPKG_ROOT, as in an image build
# without systemd running): the user, the cache dir, the enabled socket; an admin's edit of
# the conffile survives a reinstall; purge removes it all.
DROOT="${WORK}/dpkg-root"
[[ -n "${DROOT}" && "${DROOT}" != / ]] || fail "empty dpkg root"
mkdir -p "${DROOT}/var/lib/dpkg/info" "${DROOT}/var/lib/dpkg/updates"
touch "${DROOT}/var/lib/dpkg/status" "${DROOT}/var/lib/dpkg/available"
kdpkg() { dpkg --root="${DROOT}" --force-script-chrootless --force-depends --log=/dev/null "$@" >>"${WORK}/dpkg.log" 2>&1 ||
  { cat "${WORK}/dpkg.log" >&2; fail "dpkg $*"; }; }
kdpkg -i "${DEB}"
grep -q '^kernelhub:' "${DROOT}/etc/passwd" || fail "postinst made no kernelhub user"
uid="$(awk -F: '$1 == "kernelhub" {print $3}' "${DROOT}/etc/passwd")"
[[ "$(stat -c '%a %u' "${DROOT}/var/cache/kernelhub")" == "755 ${uid}" ]] || fail "postinst: cache dir mode/owner"
[[ -L "${DROOT}/etc/systemd/system/sockets.target.wants/kernelhubd.socket" ]] || fail "postinst did not enable kernelhubd.socket"
dpkg --root="${DROOT}" -s kernelhub | grep -q '^ /etc/kernelhub/policy.toml [0-9a-f]\{32\}$' || fail "dpkg registered no conffile"
echo '# edited by the admin' >>"${DROOT}/etc/kernelhub/policy.toml"
kdpkg -i "${DEB}"
grep -qx '# edited by the admin' "${DROOT}/etc/kernelhub/policy.toml" || fail "a reinstall replaced the admin's policy"
kdpkg --purge kernelhub
for gone in etc/kernelhub usr/sbin/kernelhubd var/cache/kernelhub etc/systemd/system/sockets.target.wants/kernelhubd.socket; do
  [[ ! -e "${DROOT}/${gone}" && ! -L "${DROOT}/${gone}" ]] || fail "purge left ${gone}"
done
# DPKG_ROOT kept every maintainer script inside the test root (unless the host has kernelhub).
if [[ ! -e /usr/sbin/kernelhubd ]]; then
  for host in /etc/systemd/system/sockets.target.wants/kernelhubd.socket \
              /var/lib/systemd/deb-systemd-helper-enabled/kernelhubd.socket.dsh-also /var/cache/kernelhub; do
    [[ ! -e "${host}" && ! -L "${host}" ]] || fail "the maintainer scripts wrote ${host} on the host"
  done
fi

echo "debian packages: $(basename "${DEB}") $(basename "${DEV}") checked"
