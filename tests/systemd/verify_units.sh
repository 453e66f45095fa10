#!/usr/bin/env bash
# Installs the build into a temporary prefix with `cmake --install` and checks what lands:
# the units pass `systemd-analyze verify` with no warning at all, their hardening scores as
# exposure <= 2.0, sysusers.d/tmpfiles.d entries apply to an empty root, and the installed
# kernelhubd starts on the installed example policy.
# Usage: verify_units.sh BUILD_DIR
set -euo pipefail

BUILD="$1"
TMP="$(mktemp -d)"
cleanup() {
  rm -rf "${TMP}"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/systemd/daemon_answers.sh
source "$(dirname "${BASH_SOURCE[0]}")/daemon_answers.sh"

PREFIX="${TMP}/prefix"
cmake --install "${BUILD}" --prefix "${PREFIX}" >"${TMP}/install.log" 2>&1 ||
  { cat "${TMP}/install.log" >&2; fail "cmake --install failed"; }

UNITS="${PREFIX}/lib/systemd/system"
for f in "${UNITS}/kernelhubd.socket" "${UNITS}/kernelhubd.service" \
  "${PREFIX}/lib/sysusers.d/kernelhub.conf" "${PREFIX}/lib/tmpfiles.d/kernelhub.conf" \
  "${PREFIX}/etc/kernelhub/policy.toml" "${PREFIX}/share/doc/kernelhub/protocol.md" \
  "${PREFIX}/share/doc/kernelhub/examples/policy.toml"; do
  [[ -f "${f}" ]] || fail "not installed: ${f#"${PREFIX}"/}"
done
[[ -x "${PREFIX}/bin/kernelhub" ]] || fail "not installed: bin/kernelhub"
DAEMON="${PREFIX}/sbin/kernelhubd"
[[ -x "${DAEMON}" ]] || DAEMON="${PREFIX}/bin/kernelhubd"
[[ -x "${DAEMON}" ]] || fail "not installed: kernelhubd (bin/ or sbin/)"

# The units must name the binary and policy under the prefix actually installed to.
grep -qx "ExecStart=${DAEMON} --cache-dir /var/cache/kernelhub --policy ${PREFIX}/etc/kernelhub/policy.toml \\\$KERNELHUBD_OPTIONS" \
  "${UNITS}/kernelhubd.service" || fail "ExecStart does not point into the install prefix: $(grep ExecStart= "${UNITS}/kernelhubd.service")"
grep -qx "ListenStream=/run/kernelhub/kernelhub.sock" "${UNITS}/kernelhubd.socket" || fail "socket path"

# verify exits 0 on unknown keys and bad values (it only warns), so any output is a failure.
# It does not look up User=, so the missing kernelhub user (made by sysusers.d) is no issue.
if ! systemd-analyze verify --man=no "${UNITS}/kernelhubd.socket" "${UNITS}/kernelhubd.service" \
  >"${TMP}/verify.log" 2>&1; then
  cat "${TMP}/verify.log" >&2; fail "systemd-analyze verify failed"
fi
[[ ! -s "${TMP}/verify.log" ]] || { cat "${TMP}/verify.log" >&2; fail "systemd-analyze verify warned"; }

# Exposure is reported x10 for --threshold: 20 means "2.0 OK" or better.
systemd-analyze security --offline=true --threshold=20 "${UNITS}/kernelhubd.service" >"${TMP}/security.log" 2>&1 ||
  { cat "${TMP}/security.log" >&2; fail "service hardening exposure above 2.0"; }
grep -E 'Overall exposure level' "${TMP}/security.log"

# sysusers.d makes the user in an empty root; tmpfiles.d then creates its directories.
ROOT="${TMP}/root"
mkdir -p "${ROOT}/etc"
systemd-sysusers --root="${ROOT}" "${PREFIX}/lib/sysusers.d/kernelhub.conf" >/dev/null 2>&1 || fail "sysusers.d entry"
grep -q '^kernelhub:' "${ROOT}/etc/passwd" || fail "sysusers.d made no kernelhub user"
systemd-tmpfiles --root="${ROOT}" --create "${PREFIX}/lib/tmpfiles.d/kernelhub.conf" || fail "tmpfiles.d entry"
uid="$(awk -F: '$1 == "kernelhub" {print $3}' "${ROOT}/etc/passwd")"
[[ "$(stat -c '%a %u' "${ROOT}/var/cache/kernelhub")" == "755 ${uid}" ]] || fail "cache dir mode/owner"
[[ "$(stat -c '%a' "${ROOT}/run/kernelhub")" == "755" ]] || fail "run dir mode"

# The installed daemon accepts the installed example policy and answers on its socket.
daemon_answers "${DAEMON}" "${PREFIX}/bin/kernelhub" "${PREFIX}/etc/kernelhub/policy.toml" "${TMP}" \
  "the installed daemon on the example policy"
echo "installed units verified"
