# Sourced by the installed-unit and Debian package tests: `daemon_answers DAEMON CLI POLICY DIR
# WHAT` starts DAEMON on a socket and cache in DIR with the policy POLICY, checks that CLI's
# `kernelhub status --json` is answered by it, and stops it; `fail` (the caller's) says WHAT
# failed.
daemon_answers() {
  local daemon="$1" cli="$2" policy="$3" dir="$4" what="$5" pid
  "${daemon}" --socket "${dir}/kh.sock" --cache-dir "${dir}/cache" --policy "${policy}" \
    >"${dir}/daemon.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    [[ -S "${dir}/kh.sock" ]] && break
    kill -0 "${pid}" 2>/dev/null || { cat "${dir}/daemon.log" >&2; fail "${what}: kernelhubd exited on ${policy}"; }
    sleep 0.1
  done
  KERNELHUB_SOCKET="${dir}/kh.sock" "${cli}" status --json >"${dir}/status.json" ||
    { cat "${dir}/daemon.log" >&2; kill "${pid}"; fail "${what}: kernelhub status through the daemon"; }
  grep -q '"via_daemon": *true\|"mode": *"daemon"' "${dir}/status.json" ||
    { cat "${dir}/status.json" >&2; kill "${pid}"; fail "${what}: status not from the daemon"; }
  kill "${pid}"
  wait "${pid}" 2>/dev/null || true
}
