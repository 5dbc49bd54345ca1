#!/usr/bin/env bash
# Make a Docker engine usable for pyrmq's container tests, offline-friendly and idempotent:
#   1. engine: use the running one; else install Debian's docker.io (apt) and start dockerd here;
#   2. base image: when PYRMQ_BASE_IMAGE (default python:3.11-slim) is not in the engine and cannot
#      be pulled, build pyrmq-base:bookworm with debootstrap (Debian python3 3.11) + docker import;
#   3. print the base image to use on stdout (last line), for `--build-arg BASE_IMAGE=...`.
# Everything goes through host networking, so no registry and no bridge is needed.
# Env: PYRMQ_BASE_IMAGE (wanted base), PYRMQ_DOCKERD_LOG, PYRMQ_DEBIAN_MIRROR.
set -euo pipefail

log() { echo "[docker-up] $*" >&2; }
LOCAL_BASE="pyrmq-base:bookworm"
WANT_BASE="${PYRMQ_BASE_IMAGE:-python:3.11-slim}"
DOCKERD_LOG="${PYRMQ_DOCKERD_LOG:-/var/log/pyrmq-dockerd.log}"
MIRROR="${PYRMQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
t0=$(date +%s)

engine_up() { timeout 10 docker info >/dev/null 2>&1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
}

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if ! as_root apt-get install -y -q --no-install-recommends "$@" >&2; then
    as_root apt-get update -q >&2
    as_root apt-get install -y -q --no-install-recommends "$@" >&2
  fi
}

wait_engine() {
  for _ in $(seq 1 "$1"); do
    engine_up && return 0
    sleep 1
  done
  return 1
}

start_engine() {
  if ! command -v dockerd >/dev/null; then
    log "installing Debian docker.io (dockerd, containerd, runc)"
    apt_install docker.io
  fi
  command -v docker >/dev/null || apt_install docker.io
  log "starting dockerd (log: $DOCKERD_LOG)"
  # setsid: the daemon outlives this script and the test run, so the next run reuses it.
  as_root setsid dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
  local pid=$!
  if wait_engine 60; then return 0; fi
  # Kernels without netfilter/bridge support: the bridge is not needed (host networking only).
  log "dockerd did not come up with defaults; retrying with --iptables=false --bridge=none"
  as_root kill "$pid" 2>/dev/null || true  # the daemon started just above, by its pid
  sleep 2
  as_root setsid dockerd --iptables=false --ip6tables=false --bridge=none >>"$DOCKERD_LOG" 2>&1 </dev/null &
  wait_engine 60 || { log "FATAL: dockerd did not start; see $DOCKERD_LOG"; tail -30 "$DOCKERD_LOG" >&2; exit 4; }
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

build_local_base() {
  command -v debootstrap >/dev/null || { log "installing debootstrap"; apt_install debootstrap; }
  local root
  root="$(mktemp -d /var/tmp/pyrmq-base.XXXXXX)"
  log "debootstrap --variant=minbase bookworm into $root (python3, python3-venv)"
  as_root debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" "$MIRROR" >&2
  # Smaller image: no apt lists, caches or docs.
  as_root rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* || true
  log "docker import -> $LOCAL_BASE"
  as_root tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' - "$LOCAL_BASE" >&2
  as_root rm -rf "$root"
}

if engine_up; then
  log "engine already running"
else
  start_engine
fi
# Compose for docker/compose.yaml: the v2 plugin if present, else Debian's docker-compose (1.29).
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
  log "installing Debian docker-compose"
  apt_install docker-compose
fi
t1=$(date +%s)

if have_image "$WANT_BASE"; then
  base="$WANT_BASE"
elif [ -z "${PYRMQ_BASE_IMAGE:-}" ] && have_image "$LOCAL_BASE"; then
  base="$LOCAL_BASE"
elif timeout 30 docker pull -q "$WANT_BASE" >/dev/null 2>&1; then
  base="$WANT_BASE"
elif [ -n "${PYRMQ_BASE_IMAGE:-}" ]; then
  log "FATAL: base image $WANT_BASE is neither local nor pullable"; exit 5
else
  log "$WANT_BASE not pullable (no registry): building $LOCAL_BASE"
  build_local_base
  base="$LOCAL_BASE"
fi
t2=$(date +%s)
log "engine ready in $((t1 - t0))s, base image $base ready in $((t2 - t1))s"
echo "$base"
