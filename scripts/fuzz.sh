#!/usr/bin/env bash
# Bounded libFuzzer run of the protocol frame decoder: builds build-fuzz with clang and runs
# for FUZZ_SECONDS (default 30), seeded with the golden frames. Skips cleanly without clang.
# Usage: scripts/fuzz.sh [seconds]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_BUDGET="${1:-${FUZZ_SECONDS:-30}}"
BUILD="${ROOT}/build-fuzz"

if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  printf 'fuzz: clang not found, skipping the fuzz run\n'
  exit 0
fi

CC=clang CXX=clang++ cmake -S "${ROOT}" -B "${BUILD}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKERNELHUB_BUILD_FIXTURES=OFF -DKERNELHUB_BUILD_TESTS=OFF -DKERNELHUB_BUILD_FUZZ=ON >/dev/null
cmake --build "${BUILD}" --target frame_decoder_fuzz

# Seeds: every golden message as a frame (first byte = chunking choice), plus the whole set
# back to back. The corpus dir keeps what earlier runs found.
CORPUS="${BUILD}/corpus/frame_decoder"
mkdir -p "${CORPUS}"
python3 - "${ROOT}/tests/proto/golden" "${CORPUS}" <<'PY'
import json, pathlib, struct, sys
golden, corpus = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
frames = []
for path in sorted(golden.glob("*.json")):
    payload = json.dumps(json.loads(path.read_text()), separators=(",", ":")).encode()
    frame = struct.pack(">I", len(payload)) + payload
    frames.append(frame)
    (corpus / f"seed-{path.stem}").write_bytes(b"\x3f" + frame)
(corpus / "seed-exchange").write_bytes(b"\x06" + b"".join(frames))
PY

printf 'fuzz: frame_decoder_fuzz for %ss\n' "${SECONDS_BUDGET}"
cd "${BUILD}"
"${BUILD}/bin/frame_decoder_fuzz" -max_total_time="${SECONDS_BUDGET}" -max_len=8192 -timeout=10 \
  -print_final_stats=1 "${CORPUS}" 2>&1 | tail -n 15
exit "${PIPESTATUS[0]}"
