#!/usr/bin/env bash
# The main job end to end on a local demo Hub, no internet needed:
#   serve the fixture kernel store -> start kernelhubd (temp socket, its own cache) ->
#   `kernelhub download` through the daemon -> `kernelhub ls` and `kernelhub status`
#   -> a pin and a dry run of `kernelhub gc` with a bound (nothing is removed)
#   -> the trust rule (SageAttention refused, then accepted with DIFFUSERS_TRUST_REMOTE_KERNELS)
#   -> the official Python `kernels` library loads the daemon's kernel offline and runs its op
#   -> a C++ app built against the installed kernelhub package sets `flash_hub` on a tiny
#      model: kernels-community/flash-attn2 comes through kernelhubd, is verified and
#      dlopen'ed without Python, and the app prints its largest difference from `native`.
#   -> layers: `kernelhub prefetch` and `pin` take a layer mapping file, and
#      examples/layers_app (against the installed package) kernelizes an MLP block with it:
#      RMSNorm and SiluAndMul bound to kernels-community/rmsnorm and activation, no Python.
#   -> signatures: `kernelhub verify-blob` checks a Sigstore bundle offline, and an unsigned
#      kernel is refused under the admin policy's [signatures] enforce.
#   -> `kernelhub lock` pins a project's kernels; `kernelhub bundle create` writes them to one
#      .tar.zst; with the Hub and the daemon gone, `kernelhub bundle import` fills a second,
#      air-gapped cache, and Python `kernels` loads the locked kernel from it offline.
# Exits non-zero if any step fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"${ROOT}/scripts/setup.sh"
"${ROOT}/scripts/build.sh"
BUILD="${KERNELHUB_BUILD_DIR:-${ROOT}/build}"

KERNELHUB="${BUILD}/bin/kernelhub"
KERNELHUBD="${BUILD}/bin/kernelhubd"
PYTHON="${ROOT}/.venv/bin/python"
KERNEL=relu
DEMO="${BUILD}/demo"
CACHE="${DEMO}/cache"
WORK="$(mktemp -d)"
SERVER_PID=""
DAEMON_PID=""

stop() {  # stop PID: SIGTERM and reap, if it still runs
  if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
    kill "$1" && wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop "${DAEMON_PID}"
  stop "${SERVER_PID}"
  rm -rf "${WORK}"
}
trap cleanup EXIT

step() { printf '\n==> %s\n' "$*"; }

# Start from a clean slate and keep the demo away from the user's own Hub settings.
rm -rf "${DEMO}" && mkdir -p "${CACHE}"
unset HF_TOKEN HF_HUB_OFFLINE KERNELS_CACHE LOCAL_KERNELS KERNELHUB_SOCKET KERNELHUB_POLICY \
  DIFFUSERS_TRUST_REMOTE_KERNELS DIFFUSERS_DISABLE_REMOTE_CODE
export HF_HOME="${DEMO}/hf-home" HF_HUB_CACHE="${CACHE}" HF_HUB_DISABLE_TELEMETRY=1
# With telemetry off, kernels 0.17.2 + huggingface_hub 2.4.0 would send a User-Agent ending in
# "; ", which httpx rejects; an origin suffix keeps it valid.
export HF_HUB_USER_AGENT_ORIGIN=kernelhub-demo
# The client selects the build variant for the torch it runs against, found at run time: here
# the project venv's, as a user's activated virtualenv would be.
export KERNELHUB_PYTHON="${PYTHON}"

step "serving the local demo Hub (build/fixtures/hub) on loopback"
"${KERNELHUB}" serve --root "${BUILD}/fixtures/hub" --port 0 --port-file "${WORK}/port" \
  >"${WORK}/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 300); do
  [[ -s "${WORK}/port" ]] && break
  kill -0 "${SERVER_PID}" 2>/dev/null || { cat "${WORK}/serve.log" >&2; exit 1; }
  sleep 0.1
done
[[ -s "${WORK}/port" ]] || { echo "demo: server wrote no port file" >&2; exit 1; }
export HF_ENDPOINT="http://127.0.0.1:$(cat "${WORK}/port")"
echo "HF_ENDPOINT=${HF_ENDPOINT}"

step "starting kernelhubd on ${WORK}/kernelhub.sock (cache: ${CACHE})"
"${KERNELHUBD}" --socket "${WORK}/kernelhub.sock" --cache-dir "${CACHE}" >"${WORK}/kernelhubd.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 300); do
  [[ -S "${WORK}/kernelhub.sock" ]] && break
  kill -0 "${DAEMON_PID}" 2>/dev/null || { cat "${WORK}/kernelhubd.log" >&2; exit 1; }
  sleep 0.1
done
[[ -S "${WORK}/kernelhub.sock" ]] || { echo "demo: kernelhubd did not listen" >&2; exit 1; }
# Every kernelhub command below talks to this daemon, and must: no silent embedded fallback.
export KERNELHUB_SOCKET="${WORK}/kernelhub.sock" KERNELHUB_REQUIRE_DAEMON=1

step "kernelhub download kernels-community/${KERNEL} --version 1 --json (through kernelhubd)"
"${KERNELHUB}" download "kernels-community/${KERNEL}" --version 1 --json | tee "${WORK}/download.json"
"${PYTHON}" - "${WORK}/download.json" <<'EOF'
import json
import sys

out = json.load(open(sys.argv[1]))
assert out["via_daemon"] is True, "the download did not go through kernelhubd"
print(f"via_daemon={out['via_daemon']}: {len(out['files'])} verified files, snapshot {out['snapshot']}")
EOF

step "kernelhub ls"
"${KERNELHUB}" ls

step "SageAttention/${KERNEL} without DIFFUSERS_TRUST_REMOTE_KERNELS: must be refused"
if "${KERNELHUB}" download "SageAttention/${KERNEL}" --version 1; then
  echo "demo: FAILED: an untrusted publisher was accepted" >&2
  exit 1
fi
echo "(refused, as it should be)"

step "SageAttention/${KERNEL} with DIFFUSERS_TRUST_REMOTE_KERNELS=1: accepted"
DIFFUSERS_TRUST_REMOTE_KERNELS=1 "${KERNELHUB}" download "SageAttention/${KERNEL}" --version 1

step "installing the kernelhub package and building examples/attention_app against it"
PREFIX="${DEMO}/prefix"
cmake --install "${BUILD}" --prefix "${PREFIX}" >"${WORK}/install.log"
cmake -S "${ROOT}/examples/attention_app" -B "${DEMO}/attention_app" -G Ninja \
  -DCMAKE_PREFIX_PATH="${PREFIX}" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >"${WORK}/app-configure.log" 2>&1 \
  || { cat "${WORK}/app-configure.log" >&2; exit 1; }
cmake --build "${DEMO}/attention_app" >"${WORK}/app-build.log" 2>&1 || { cat "${WORK}/app-build.log" >&2; exit 1; }

step "attention_app: native, then flash_hub on every layer (kernel fetched through kernelhubd)"
"${DEMO}/attention_app/attention_app" flash_hub
listing="$("${KERNELHUB}" ls)"  # captured: `| grep -q` under pipefail can fail on SIGPIPE
grep -q flash-attn2 <<<"${listing}" || { echo "demo: flash-attn2 is not in the daemon's cache" >&2; exit 1; }
echo "(kernels-community/flash-attn2 is in the daemon's cache: ${CACHE})"

step "layers: prefetch and pin what a mapping names, then kernelize examples/layers_app with it"
cat >"${DEMO}/layers.toml" <<EOF
[[layers]]
name = "RMSNorm"
device = "cpu"
repo = "kernels-community/rmsnorm"
layer = "RMSNorm"
version = 1

[[layers]]
name = "SiluAndMul"
device = "cpu"
repo = "kernels-community/activation"
layer = "SiluAndMul"
version = 1
EOF
"${KERNELHUB}" prefetch --mapping "${DEMO}/layers.toml"
"${KERNELHUB}" pin --mapping "${DEMO}/layers.toml"
cmake -S "${ROOT}/examples/layers_app" -B "${DEMO}/layers_app" -G Ninja \
  -DCMAKE_PREFIX_PATH="${PREFIX}" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >"${WORK}/layers-configure.log" 2>&1 \
  || { cat "${WORK}/layers-configure.log" >&2; exit 1; }
cmake --build "${DEMO}/layers_app" >"${WORK}/layers-build.log" 2>&1 || { cat "${WORK}/layers-build.log" >&2; exit 1; }
"${DEMO}/layers_app/layers_app" "${DEMO}/layers.toml"

step "the cache's bounds: pin relu v1, then see what a 1-byte bound would evict (a dry run)"
"${KERNELHUB}" pin "kernels-community/${KERNEL}" --version 1
"${KERNELHUB}" pin --list
"${KERNELHUB}" gc --max-size 1 --dry-run
"${KERNELHUB}" ls

step "kernelhub status (the daemon's counters)"
"${KERNELHUB}" status

step "signatures: a throw-away Sigstore instance signs relu's metadata.json; kernelhub verifies it offline"
SIGNER="${ROOT}/tests/trust/sigstore/test_signer.py"
"${PYTHON}" "${SIGNER}" init "${WORK}/sigstore" >/dev/null
METADATA="$(ls "${CACHE}"/kernels--kernels-community--${KERNEL}/snapshots/*/build/*/metadata.json | head -n 1)"
"${PYTHON}" "${SIGNER}" sign "${WORK}/sigstore" "${METADATA}" "${WORK}/metadata.json.sigstore"
KC_WORKFLOW="https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/main"
"${KERNELHUB}" verify-blob "${METADATA}" --bundle "${WORK}/metadata.json.sigstore" \
  --trusted-root "${WORK}/sigstore/trusted_root.json" --certificate-identity "${KC_WORKFLOW}" \
  --certificate-oidc-issuer https://token.actions.githubusercontent.com
# The demo store's kernels are unsigned: under [signatures] enforce they are refused (exit 3).
printf '[signatures]\nmode = "enforce"\n' >"${WORK}/enforce.toml"
if KERNELHUB_REQUIRE_DAEMON= "${KERNELHUB}" download "kernels-community/${KERNEL}" --version 1 \
  --cache-dir "${WORK}/enforce-cache" --policy "${WORK}/enforce.toml"; then
  echo "demo: FAILED: an unsigned kernel passed [signatures] enforce" >&2
  exit 1
fi
echo "(refused under enforce, as it should be; docs/security.md, \"Signed kernels\", says how to turn it on)"

step "kernelhub lock: pin the project's kernels (pyproject.toml [tool.kernels.dependencies])"
PROJECT="${DEMO}/project"
mkdir -p "${PROJECT}"
cat >"${PROJECT}/pyproject.toml" <<EOF
[project]
name = "demo-app"
version = "0.1.0"

[tool.kernels.dependencies]
"kernels-community/${KERNEL}" = 1
"kernels-community/flash-attn2" = 3
EOF
"${KERNELHUB}" lock "${PROJECT}"
cat "${PROJECT}/kernels.lock"
echo

step "kernelhub bundle create: the locked kernels into one file (through kernelhubd)"
"${KERNELHUB}" bundle create "${DEMO}/kernels.tar.zst" --lockfile "${PROJECT}/kernels.lock" --json

step "stopping kernelhubd and the server; Python 'kernels' loads the kernel from the daemon's cache, offline"
stop "${DAEMON_PID}"
DAEMON_PID=""
stop "${SERVER_PID}"
SERVER_PID=""
HF_HUB_OFFLINE=1 KERNELS_CACHE="${CACHE}" "${PYTHON}" - "${KERNEL}" <<'EOF'
import sys

import torch
from kernels import get_kernel

name = sys.argv[1]
kernel = get_kernel(f"kernels-community/{name}", version=1, backend="cpu")
x = torch.tensor([[-2.0, -0.5, 0.0, 0.5, 2.0]])
out = torch.empty_like(x)
kernel.relu(out, x)
print(f"loaded {kernel.__name__} from {kernel.__file__}")
print(f"relu({x.tolist()}) = {out.tolist()}")
assert torch.equal(out, torch.relu(x)), "the kernel computed a wrong result"
EOF

step "air-gapped: kernelhub bundle import into a second cache, no Hub, no daemon"
unset KERNELHUB_SOCKET KERNELHUB_REQUIRE_DAEMON
AIRGAP="${DEMO}/airgap-cache"
"${KERNELHUB}" bundle import "${DEMO}/kernels.tar.zst" --cache-dir "${AIRGAP}"
HF_HUB_OFFLINE=1 "${KERNELHUB}" download --lockfile "${PROJECT}/kernels.lock" --cache-dir "${AIRGAP}"

step "Python 'kernels' loads the locked kernel from the imported cache, offline"
HF_HUB_OFFLINE=1 KERNELS_CACHE="${AIRGAP}" HF_HUB_CACHE="${AIRGAP}" "${PYTHON}" - "${KERNEL}" \
  "${PROJECT}/kernels.lock" <<'EOF'
import sys
from pathlib import Path

import torch
from kernels import load_kernel

name, lockfile = sys.argv[1], Path(sys.argv[2])
kernel = load_kernel(f"kernels-community/{name}", lockfile=lockfile, backend="cpu")
x = torch.tensor([[-1.0, 3.0]])
out = torch.empty_like(x)
kernel.relu(out, x)
print(f"load_kernel(lockfile=...) -> {kernel.__file__}")
assert torch.equal(out, torch.relu(x)), "the kernel computed a wrong result"
EOF

step "demo finished: cache left in ${CACHE}"
