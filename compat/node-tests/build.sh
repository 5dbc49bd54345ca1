#!/usr/bin/env bash
# Prepare the Node.js SDK scenarios: the official rocketmq-client-nodejs (npm, the exact version in
# package.json, the rest pinned by package-lock.json) in node_modules. Idempotent and quick on a
# second run.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "compat/node-tests/build.sh: FATAL: $tool not found" >&2; exit 3; }
done
if [ ! -d "$HERE/node_modules/rocketmq-client-nodejs" ] || [ "$HERE/package-lock.json" -nt "$HERE/node_modules/.package-lock.json" ]; then
  echo "compat/node-tests/build.sh: npm ci (rocketmq-client-nodejs)" >&2
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
