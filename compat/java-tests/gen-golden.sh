#!/usr/bin/env bash
# Regenerate tests/golden/remoting/*.hex and their MANIFEST.json entries with the
# official rocketmq-remoting 5.5.0 encoder (module golden). Builds first if needed.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
"$HERE/build.sh"
CP="$HERE/golden/target/golden-0.1.0.jar:$(cat "$HERE/golden/target/classpath.txt")"
exec java -Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -cp "$CP" io.pyrmq.compat.golden.GenGolden "$ROOT/tests/golden"
