#!/usr/bin/env bash
# Installs everything kernelhub needs on a fresh Debian 12, as root, without questions:
# the Debian packages for the C++ build, and the project venv (.venv) with the pinned Python
# packages of scripts/requirements.txt. Safe to rerun: it skips apt when every package is
# present and pip when requirements.txt has not changed since the last install.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ROOT}/.venv"
REQUIREMENTS="${ROOT}/scripts/requirements.txt"
STAMP="${VENV}/.kernelhub-requirements.sha256"

say() { printf 'setup: %s\n' "$*"; }

DEB_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git binutils curl ca-certificates
  libcurl4-openssl-dev nlohmann-json3-dev libssl-dev libarchive-dev libspdlog-dev
  libcli11-dev catch2 libcpp-httplib-dev libtomlplusplus-dev libsystemd-dev systemd strace
  python3 python3-venv python3-dev clang libclang-rt-14-dev clang-tidy-14 clang-format-14 util-linux
  openssl nginx iproute2 libgloo-dev dpkg-dev file lintian procps
)
# openssl: the CLI the offline Sigstore test signer mints RFC 3161 timestamps with. The
# Sigstore trusted roots kernelhub pins come from the venv's `sigstore` wheel (requirements.txt;
# compiled in by cmake/SigstoreRoots.cmake).
# nginx, iproute2: the site cache (deploy/nginx) and its test (tests/site: network namespaces).
# Debian 12's `nginx` is the smallest package with proxy_cache and TLS to upstreams
# (nginx-light is it plus the echo module). Its own service is never used: see below.
# libgloo-dev: gloo's headers, which torch's ProcessGroupGloo.hpp includes and the wheel does
# not ship (parallel/: context parallelism; torch's own gloo is what runs).
# clang-tidy-14, clang-format-14: scripts/tidy.sh and scripts/format.sh --check (the test command).
# dpkg-dev, file, lintian: the Debian packages (cpack -G DEB runs dpkg-shlibdeps and file) and
# their test, which runs lintian; procps: the kill that test's unit check needs.

missing=()
for pkg in "${DEB_PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "${pkg}" 2>/dev/null || true)"
  [[ "${status}" == "installed" ]] || missing+=("${pkg}")
done
if ((${#missing[@]} == 0)); then
  say "Debian packages: all ${#DEB_PACKAGES[@]} present"
else
  if [[ "$(id -u)" -ne 0 ]]; then
    say "missing Debian packages (run as root to install): ${missing[*]}" >&2
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Packages must not start their services here (nginx's would take port 80, and where it
  # cannot start, its postinst fails the install; a container has no init to start it anyway):
  # Debian's policy-rc.d hook says no to every invoke-rc.d for the duration of the install.
  # An existing hook (Docker images ship one) is the admin's and stays; ours goes afterwards.
  policy=/usr/sbin/policy-rc.d
  if [[ ! -e "${policy}" ]]; then
    trap 'rm -f "${policy}"' EXIT
    printf '#!/bin/sh\n# scripts/setup.sh: no service starts while it installs packages\nexit 101\n' >"${policy}"
    chmod 0755 "${policy}"
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The venv uses the python3 found on PATH (the pinned wheels are cp311).
if [[ ! -x "${VENV}/bin/python" ]]; then
  say "creating ${VENV} with $(command -v python3) ($(python3 -V 2>&1))"
  python3 -m venv "${VENV}"
fi

want="$(sha256sum "${REQUIREMENTS}" | cut -d' ' -f1)"
have="$(cat "${STAMP}" 2>/dev/null || true)"
if [[ "${want}" == "${have}" ]]; then
  say "Python packages: up to date"
else
  say "installing Python packages from scripts/requirements.txt (torch is large; first run takes a while)"
  "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check -r "${REQUIREMENTS}"
  printf '%s' "${want}" >"${STAMP}"
fi
say "ready"
