#!/usr/bin/env bash
# Debian's prometheus for tests/compat/test_metrics_compat.py (a real Prometheus scraping pyrmq
# and the Java broker): nothing when it is on PATH, else apt-get install (update once on failure).
set -euo pipefail
command -v prometheus >/dev/null && exit 0
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
export DEBIAN_FRONTEND=noninteractive
if ! as_root apt-get install -y -q --no-install-recommends prometheus >&2; then
  as_root apt-get update -q >&2
  as_root apt-get install -y -q --no-install-recommends prometheus >&2
fi
command -v prometheus >/dev/null || { echo "[prometheus-up] FATAL: prometheus not installed" >&2; exit 3; }
