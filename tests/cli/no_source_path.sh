#!/bin/sh
# Installed binaries must not depend on the source tree: no path of it may be compiled in
# (a user's machine has its own Python and torch). Debug info is stripped first (it names
# sources by design); the build tree, which may lie inside the source tree, is allowed
# (build-tree RPATHs). Usage: no_source_path.sh SOURCE_DIR BINARY_DIR BINARY...
set -eu
src=$1 bin=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The scan must see a path where there is one: a file naming the source tree is found.
printf 'x\0%s/.venv\0' "$src" > "$tmp/control"
strings -a "$tmp/control" | grep -qF "$src" || { echo "scanner cannot see $src"; exit 1; }
status=0
for binary in "$@"; do
  objcopy --strip-debug "$binary" "$tmp/stripped"
  found=$(strings -a "$tmp/stripped" | grep -F "$src" | grep -vF "$bin" || true)
  if [ -n "$found" ]; then
    echo "$binary names the source tree:"
    echo "$found"
    status=1
  else
    echo "$binary: no source-tree path"
  fi
done
exit $status
