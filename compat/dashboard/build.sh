#!/usr/bin/env bash
# Prepare the dashboard browser suite: the official RocketMQ Dashboard 2.1.0's runtime classpath
# (its pom in the shared tools folder pins the release's jars from Maven Central) written to
# target/classpath.txt, and puppeteer-core (npm, package-lock.json) in node_modules. Debian's
# chromium must be installed (tools/test installs it). Idempotent and quick on a second run.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DASH="${PYRMQ_DASHBOARD_DIR:-$ROOT/../shared/tools/rocketmq-dashboard}"
[ -d "$DASH" ] || DASH=/work/shared/tools/rocketmq-dashboard
if [ ! -f "$DASH/pom.xml" ] || [ ! -f "$DASH/rocketmq-dashboard-2.1.0-classes.jar" ]; then
  echo "compat/dashboard/build.sh: FATAL: the dashboard 2.1.0 folder is missing (set PYRMQ_DASHBOARD_DIR)" >&2
  exit 3
fi
for tool in java mvn node npm; do
  command -v "$tool" >/dev/null || { echo "compat/dashboard/build.sh: FATAL: $tool not found" >&2; exit 3; }
done
command -v chromium >/dev/null || { echo "compat/dashboard/build.sh: FATAL: chromium not found (apt-get install chromium)" >&2; exit 3; }
mkdir -p "$HERE/target"
echo "$DASH" > "$HERE/target/dashboard-dir.txt"
if [ ! -s "$HERE/target/classpath.txt" ] || [ "$DASH/pom.xml" -nt "$HERE/target/classpath.txt" ]; then
  echo "compat/dashboard/build.sh: resolving the dashboard's jars (Maven Central)" >&2
  (cd "$DASH" && mvn -q -B dependency:build-classpath -Dmdep.outputFile="$HERE/target/classpath.txt" >&2)
fi
if [ ! -d "$HERE/node_modules/puppeteer-core" ] || [ "$HERE/package-lock.json" -nt "$HERE/node_modules/.package-lock.json" ]; then
  echo "compat/dashboard/build.sh: npm ci (puppeteer-core)" >&2
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
