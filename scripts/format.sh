#!/usr/bin/env bash
# clang-format (version 14, the repository's .clang-format) over every C++ file git tracks.
# Usage: scripts/format.sh [--check]
#   --check: change nothing; list the files clang-format would change and fail if any
#            (scripts/test.sh runs this). Without it, the files are formatted in place.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FORMAT="${CLANG_FORMAT:-clang-format-14}"
if ! command -v "${FORMAT}" >/dev/null; then
  printf 'format: FAILED: %s not found (scripts/setup.sh installs it)\n' "${FORMAT}" >&2
  exit 1
fi
cd "${ROOT}"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu')
if [[ "${1:-}" != "--check" ]]; then
  printf '%s\0' "${files[@]}" | xargs -0 "${FORMAT}" -i
  printf 'format: %d files formatted\n' "${#files[@]}"
  exit 0
fi
mapfile -t unformatted < <(printf '%s\0' "${files[@]}" | xargs -0 "${FORMAT}" --dry-run 2>&1 \
  | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: .*/\1/p' | sort -u)
if ((${#unformatted[@]} > 0)); then
  printf 'format: FAILED: clang-format would change %d file(s) (scripts/format.sh formats them):\n' \
    "${#unformatted[@]}"
  printf '  %s\n' "${unformatted[@]}"
  exit 1
fi
printf 'format: %d files as clang-format writes them\n' "${#files[@]}"
