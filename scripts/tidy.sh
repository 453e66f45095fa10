#!/usr/bin/env bash
# clang-tidy (.clang-tidy in the repo) over the project's C++ files changed since BASE (a
# commit; the working tree's uncommitted changes count too), with the main build's
# compile_commands.json. A finding on a changed line fails (KERNELHUB_TIDY_WHOLE_FILES=1:
# a finding anywhere in a changed file). A changed header is checked through the translation
# unit next to it or two that include it (HeaderFilterRegex reports it there).
# Usage: scripts/tidy.sh [BASE]   (default: the commit in .ci/tidy-base, see there)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KERNELHUB_BUILD_DIR:-${ROOT}/build}"
JOBS="${KERNELHUB_JOBS:-$(nproc)}"
TIDY="${CLANG_TIDY:-clang-tidy-14}"
BASE="${1:-$(sed -n 's/^\([0-9a-f]\{7,40\}\).*/\1/p' "${ROOT}/.ci/tidy-base" | head -n 1)}"
cd "${ROOT}"

if ! command -v "${TIDY}" >/dev/null; then
  printf 'tidy: FAILED: %s not found (apt-get install clang-tidy-14)\n' "${TIDY}" >&2
  exit 1
fi
if [[ ! -f "${BUILD}/compile_commands.json" ]]; then
  printf 'tidy: FAILED: no %s/compile_commands.json: run scripts/build.sh first\n' "${BUILD}" >&2
  exit 1
fi
# A shallow clone may lack the base: then the last commit's changes are what can be checked.
if ! git rev-parse --verify --quiet "${BASE}^{commit}" >/dev/null; then
  printf 'tidy: base %s is not in this clone; checking the changes of the last commit\n' "${BASE:-(none)}"
  BASE="HEAD~1"
  if ! git rev-parse --verify --quiet "${BASE}^{commit}" >/dev/null; then
    printf 'tidy: FAILED: no parent commit to compare with (clone with more history)\n' >&2
    exit 1
  fi
fi

mapfile -t changed < <(git diff --name-only --diff-filter=d "${BASE}" -- \
  '*.cpp' '*.hpp' '*.h' '*.cc' | sort -u)
# Translation units clang-tidy can be run on: the build's, plus the fuzz harnesses of
# build-asan (clang only, so not in a gcc build), merged into one database.
db="$(mktemp -d)"
trap 'rm -rf "${db}"' EXIT
mapfile -t known < <(python3 - "${db}" "${ROOT}" "${BUILD}/compile_commands.json" \
  "${ROOT}/build-asan/compile_commands.json" <<'PY'
import json, os, sys
out, root, dbs = sys.argv[1], sys.argv[2], sys.argv[3:]
merged, seen = [], set()
for db in dbs:
    if not os.path.exists(db):
        continue
    for entry in json.load(open(db)):
        path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        if path.startswith(root + "/") and path not in seen:
            seen.add(path)
            # The fixture kernels' gcc-only flag, an unknown argument to clang.
            if "command" in entry:
                entry["command"] = entry["command"].replace(" -fno-gnu-unique", "")
            merged.append(entry)
            print(os.path.relpath(path, root))
json.dump(merged, open(os.path.join(out, "compile_commands.json"), "w"))
PY
)
declare -A in_db=()
for f in "${known[@]}"; do in_db["${f}"]=1; done

# The diff is rename-aware and not limited to the new names (a path list would hide a moved
# file's old name and turn the move into a whole new file): a moved file's changed lines are
# only those that differ from where it came from.
diff_since_base() { git diff -U0 -M --diff-filter=d "${BASE}" -- '*.cpp' '*.hpp' '*.h' '*.cc'; }
# Files whose every changed line is a project #include (a moved file, a moved header named
# anew): no enabled check reports on such a line, so parsing the unit would find nothing.
declare -A include_only=()
while IFS= read -r f; do [[ -z "${f}" ]] || include_only["${f}"]=1; done < <(diff_since_base | python3 -c '
import re, sys
added, name = {}, None
for line in sys.stdin:
    if line.startswith("+++ "):
        name = line[4:].strip()
        name = None if name == "/dev/null" else name[2:]
        if name: added.setdefault(name, True)
    elif name and line.startswith("+") and not line.startswith("+++"):
        text = line[1:].strip()
        if text and not re.match(r"#\s*include\s+\"", text):
            added[name] = False
print("\n".join(n for n, only in added.items() if only))
')

declare -A units=()
skipped=()
for f in "${changed[@]}"; do
  if [[ -n "${include_only[${f}]:-}" ]]; then
    continue
  fi
  if [[ -n "${in_db[${f}]:-}" ]]; then
    units["${f}"]=1
    continue
  fi
  if [[ "${f}" == *.hpp || "${f}" == *.h ]]; then
    # Its own .cpp, else the first two units that include it (a widely included header
    # would otherwise pull in the whole build).
    # A public header <module>/include/kernelhub/<...>/name.hpp is included as
    # "kernelhub/<...>/name.hpp" by anyone and its .cpp is <module>/name.cpp; a private one as
    # "name.hpp" by the sources beside it; a test helper as "<folder>/name.hpp" (tests/ is on
    # the test targets' path).
    base="${f##*/}"
    own="${f%.*}.cpp"
    candidates=("${known[@]}")
    if [[ "${f}" == */include/kernelhub/* ]]; then
      spelled="kernelhub/${f#*/include/kernelhub/}"
      own="${f%%/include/kernelhub/*}/${base%.*}.cpp"
    elif [[ "${f}" == tests/* ]]; then
      spelled="${f#tests/}"
    else
      spelled="${base}"
      candidates=()
      for tu in "${known[@]}"; do [[ "${tu%/*}" == "${f%/*}" ]] && candidates+=("${tu}"); done
    fi
    if [[ -n "${in_db[${own}]:-}" ]]; then
      units["${own}"]=1
      continue
    fi
    mapfile -t includers < <(grep -lF "#include \"${spelled}\"" "${candidates[@]}" /dev/null 2>/dev/null | head -n 2)
    if [[ ${#includers[@]} -gt 0 ]]; then
      for tu in "${includers[@]}"; do units["${tu}"]=1; done
      continue
    fi
  fi
  skipped+=("${f}")
done
for f in "${skipped[@]}"; do
  printf 'tidy: %s is in no translation unit of %s: not checked\n' "${f}" "${BUILD}"
done
if [[ ${#units[@]} -eq 0 ]]; then
  printf 'tidy: no C++ changes since %s to check\n' "$(git rev-parse --short "${BASE}")"
  exit 0
fi

printf 'tidy: %d translation unit(s) for %d changed file(s) since %s (%d with only #include lines changed)\n' \
  "${#units[@]}" "${#changed[@]}" "$(git rev-parse --short "${BASE}")" "${#include_only[@]}"
# --line-filter: only the changed lines of the changed files (git diff -U0 hunks).
filter_args=()
if [[ "${KERNELHUB_TIDY_WHOLE_FILES:-0}" != 1 ]]; then
  filter_args=(--line-filter="$(diff_since_base | python3 -c '
import json, re, sys
ranges, name = {}, None
for line in sys.stdin:
    if line.startswith("+++ "):
        name = line[4:].strip()
        name = None if name == "/dev/null" else "/" + name[2:]  # "b/x" -> "/x": a path suffix
    elif line.startswith("@@") and name:
        start, _, count = re.match(r"@@ -\S+ \+(\d+)(,(\d+))? @@", line).groups()
        start, count = int(start), int(count if count is not None else 1)
        if count:
            ranges.setdefault(name, []).append([start, start + count - 1])
# No added line at all: an impossible range (an empty filter would report everything).
print(json.dumps([{"name": n, "lines": r} for n, r in ranges.items()] or [{"name": "/", "lines": [[0, 0]]}]))
')")
fi
start=${SECONDS}
out="${db}/tidy.log"
rc=0
# -Wno-unknown-warning-option: the build may be gcc's; its flags are clang's to ignore.
printf '%s\n' "${!units[@]}" | sort | xargs -r -P "${JOBS}" -n 1 "${TIDY}" -p "${db}" --quiet \
  --warnings-as-errors='*' --extra-arg=-Wno-unknown-warning-option "${filter_args[@]}" \
  >"${out}" 2>&1 || rc=$?
grep -vE '^[0-9]+ (warning|error)s? (and [0-9]+ (warning|error)s? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Error while processing' \
  "${out}" || true
findings=$(grep -cE ': (warning|error): ' "${out}" || true)
if [[ ${rc} -ne 0 ]]; then
  printf 'tidy: FAILED: %s finding(s) in %d translation unit(s) (%ss)\n' "${findings}" \
    "${#units[@]}" "$((SECONDS - start))"
  exit 1
fi
printf 'tidy: clean, %d translation unit(s) (%ss)\n' "${#units[@]}" "$((SECONDS - start))"
