#!/usr/bin/env bash
# Runs a kernelhub site cache: Debian's nginx, in the foreground, in front of a Hugging Face
# Hub-compatible server, with deploy/nginx/site-cache.conf.in rendered for this site.
# What it caches and why that is safe: deploy/nginx/README.md.
#
# Everything it writes lives under --cache-dir (objects/, tmp/, logs/, run/ with the rendered
# nginx.conf, the pid file and the follower's socket); nothing goes to /etc, /var/log or
# /var/lib. The script execs nginx, so signals sent to it reach the nginx master (SIGTERM/
# SIGINT: fast stop, SIGQUIT: graceful stop, SIGHUP: reload the rendered config, SIGUSR1:
# reopen the logs).
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true  # bash 5.2: '&' in ${x//a/b} means the match

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TEMPLATE="${HERE}/site-cache.conf.in"

usage() {
  cat <<'EOF'
usage: run-site-cache.sh --listen HOST:PORT --upstream URL --cache-dir DIR [options]

Runs nginx (in the foreground) as a site cache of the Hub at URL; point every node's
HF_ENDPOINT (kernelhubd, kernelhub, huggingface_hub, kernels) at http://HOST:PORT.

required:
  --listen HOST:PORT   address to serve on (e.g. 0.0.0.0:8080, [::]:8080, 10.0.0.5:80)
  --upstream URL       the Hub: http(s)://host[:port], no path (e.g. https://huggingface.co)
  --cache-dir DIR      cache, temp files, logs and run state (created if missing)

options:
  --max-size SIZE      most disk the cached objects may use, nginx units (default 50g)
  --ref-ttl SECONDS    how long answers about refs/branches are kept (default 5)
  --user USER          user of the nginx workers when run as root (default www-data)
  --ca-file FILE       CA bundle that upstream https certificates must chain to
                       (default /etc/ssl/certs/ca-certificates.crt)
  --resolver ADDR      DNS server for the object/CDN host names of redirects (repeatable;
                       default: the nameservers of /etc/resolv.conf)
  --nginx PATH         nginx binary (default: nginx on PATH, else /usr/sbin/nginx)
  --check              render the configuration, run `nginx -t` on it and exit
  -h, --help           this text
EOF
}

die() {
  printf 'run-site-cache: %s\n' "$*" >&2
  exit 2
}

listen="" upstream="" cache_dir="" max_size="50g" ref_ttl="5" user="" ca_file=""
nginx_bin="" check=0
resolvers=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --check) check=1; shift; continue ;;
    --listen | --upstream | --cache-dir | --max-size | --ref-ttl | --user | --ca-file | --resolver | \
      --nginx)
      (($# >= 2)) || die "$1 needs a value (see --help)" ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  case "$1" in
    --listen) listen="$2" ;;
    --upstream) upstream="$2" ;;
    --cache-dir) cache_dir="$2" ;;
    --max-size) max_size="$2" ;;
    --ref-ttl) ref_ttl="$2" ;;
    --user) user="$2" ;;
    --ca-file) ca_file="$2" ;;
    --resolver) resolvers+=("$2") ;;
    --nginx) nginx_bin="$2" ;;
  esac
  shift 2
done

[[ -n "${listen}" && -n "${upstream}" && -n "${cache_dir}" ]] ||
  { usage >&2; die "--listen, --upstream and --cache-dir are required"; }

# Every value ends up inside nginx.conf: each is checked against a strict shape so that none
# can carry a ';', '{', quote, space or '$' into the configuration.
host_re='([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])'
valid_port() { [[ "$1" =~ ^[0-9]{1,5}$ ]] && (("$1" >= 1 && "$1" <= 65535)); }

if ! [[ "${listen}" =~ ^(${host_re}|\*):([0-9]+)$ ]] || ! valid_port "${BASH_REMATCH[-1]}"; then
  die "--listen must be HOST:PORT (port 1-65535), got '${listen}'"
fi

upstream="${upstream%/}"
[[ "${upstream}" =~ ^https?://${host_re}(:([0-9]+))?$ ]] ||
  die "--upstream must be http(s)://host[:port] without a path, got '${upstream}'"
[[ -z "${BASH_REMATCH[-1]}" ]] || valid_port "${BASH_REMATCH[-1]}" ||
  die "--upstream has a bad port: '${upstream}'"

[[ "${max_size}" =~ ^[1-9][0-9]*[kKmMgG]?$ ]] ||
  die "--max-size must be a size like 500m or 50g, got '${max_size}'"
if ! [[ "${ref_ttl}" =~ ^[0-9]+$ ]] || ((ref_ttl < 1 || ref_ttl > 3600)); then
  die "--ref-ttl must be 1-3600 seconds, got '${ref_ttl}'"
fi

safe_path() { [[ "$1" =~ ^/[A-Za-z0-9._/+@-]*$ && ! "$1" =~ (^|/)\.\.?(/|$) ]]; }
[[ "${cache_dir}" =~ ^[A-Za-z0-9._/+@-]+$ ]] ||
  die "--cache-dir must be a path of letters, digits and ._/+@- only, got '${cache_dir}'"
mkdir -p -- "${cache_dir}"
cache_dir="$(cd -- "${cache_dir}" && pwd -P)"
safe_path "${cache_dir}" || die "--cache-dir resolves to '${cache_dir}', which nginx.conf cannot hold"

ca_file="${ca_file:-/etc/ssl/certs/ca-certificates.crt}"
[[ -r "${ca_file}" ]] || die "CA bundle '${ca_file}' is not readable (--ca-file)"
ca_file="$(cd -- "$(dirname -- "${ca_file}")" && pwd -P)/$(basename -- "${ca_file}")"
safe_path "${ca_file}" || die "--ca-file path has characters nginx.conf cannot hold: '${ca_file}'"

if ((${#resolvers[@]} == 0)) && [[ -r /etc/resolv.conf ]]; then
  while read -r key value _; do
    [[ "${key}" == nameserver && -n "${value}" ]] || continue
    [[ "${value}" == *:* ]] && value="[${value%%%*}]"  # IPv6 (zone id dropped)
    resolvers+=("${value}")
  done </etc/resolv.conf
fi
for r in "${resolvers[@]}"; do
  [[ "${r}" =~ ^([0-9.]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$ ]] ||
    die "--resolver must be an IP address[:port], got '${r}'"
done
if ((${#resolvers[@]})); then
  resolver_line="resolver ${resolvers[*]} valid=60s; resolver_timeout 10s;"
else
  resolver_line="# no resolver: the object URLs the Hub redirects to must name IP addresses"
fi

if [[ -z "${nginx_bin}" ]]; then
  nginx_bin="$(command -v nginx || true)"
  [[ -n "${nginx_bin}" ]] || nginx_bin=/usr/sbin/nginx
fi
[[ -x "${nginx_bin}" ]] || die "no nginx at '${nginx_bin}' (Debian: apt-get install nginx)"
[[ -r "${TEMPLATE}" ]] || die "template ${TEMPLATE} is missing"

objects="${cache_dir}/objects" tmp="${cache_dir}/tmp" logs="${cache_dir}/logs" run="${cache_dir}/run"
# sun_path holds 107 bytes.
((${#run} + 12 <= 107)) || die "--cache-dir is too long for the follower's unix socket path"
mkdir -p -- "${objects}" "${tmp}" "${logs}" "${run}"

# One nginx per cache dir: the lock is held on fd 9, which nginx inherits through exec. Taken
# before anything is changed, so a second start cannot rewrite a running site's nginx.conf.
conf_file="${run}/nginx.conf"
if ((check)); then
  conf_file="${run}/nginx-check.conf"  # --check never touches what a running nginx reloads
else
  exec 9>"${run}/lock"
  flock -n 9 || die "another site cache is running on ${cache_dir}"
fi

# As root, nginx's master binds and opens the logs, and the workers (who read and write the
# cache) run as --user; as anyone else everything runs as that user.
user_line="# workers run as $(id -un) (not started as root)"
if ((EUID == 0)); then
  user="${user:-www-data}"
  if ! [[ "${user}" =~ ^[a-z_][a-z0-9_-]*$ ]] || ! id -u -- "${user}" >/dev/null 2>&1; then
    die "--user '${user}' is not a user on this host"
  fi
  group="$(id -gn -- "${user}")"
  user_line="user ${user} ${group};"
  # A cache written under another user is taken over; a fresh one costs two chowns.
  for dir in "${objects}" "${tmp}"; do
    if [[ "$(stat -c %U -- "${dir}")" != "${user}" ]]; then
      chown -R -- "${user}:${group}" "${dir}"
    fi
    chmod 0700 -- "${dir}"
  done
  chown -- "root:${group}" "${run}"
  chmod 0750 -- "${run}"
  # The workers reach objects/, tmp/ and run/ through every folder above them.
  runuser -u "${user}" -- test -w "${objects}" -a -w "${tmp}" -a -x "${run}" ||
    die "user ${user} cannot reach ${cache_dir} (a parent folder is closed to it?);" \
      "use --user or another --cache-dir"
elif [[ -n "${user}" ]]; then
  die "--user needs root (nginx cannot switch users otherwise)"
fi

# The upstream's origin as a regex, for rewriting pagination links.
upstream_re="${upstream//./\\.}"
upstream_re="${upstream_re//[/\\[}"
upstream_re="${upstream_re//]/\\]}"

conf="$(<"${TEMPLATE}")"
render() { conf="${conf//"{{$1}}"/"$2"}"; }
render USER_LINE "${user_line}"
render RESOLVER_LINE "${resolver_line}"
render LISTEN "${listen}"
render UPSTREAM_RE "${upstream_re}"
render UPSTREAM "${upstream}"
render CACHE_DIR "${cache_dir}"
render RUN_DIR "${run}"
render LOG_DIR "${logs}"
render MAX_SIZE "${max_size}"
render REF_TTL "${ref_ttl}s"
render CA_FILE "${ca_file}"
if [[ "${conf}" == *"{{"* ]]; then
  die "template placeholder left unrendered: $(grep -o '{{[A-Z_]*}}' <<<"${conf}" | head -1)"
fi
umask 027
printf '%s\n' "${conf}" >"${conf_file}.new"
mv -f -- "${conf_file}.new" "${conf_file}"

nginx_args=(-e "${logs}/error.log" -p "${run}" -c "${conf_file}")
if ((check)); then
  exec "${nginx_bin}" "${nginx_args[@]}" -t
fi

# Objects are written as objects/<l1>/<l2>/<md5>.<n> and renamed to <md5> when complete. A
# transfer cut by a crash or a fast stop leaves its temp file, which nginx's cache loader does
# not remove; with the lock held nothing writes here, so every such file is a leftover.
find "${objects}" -mindepth 3 -maxdepth 3 -type f -name '*.*' -delete
printf 'run-site-cache: serving http://%s for %s, cache %s (max %s)\n' \
  "${listen}" "${upstream}" "${cache_dir}" "${max_size}" >&2
exec "${nginx_bin}" "${nginx_args[@]}" -g 'daemon off;'
