#!/usr/bin/env bash
# Regenerate tests/golden/acl/signatures-<client>.tsv: requests signed by the official
# AclClientRPCHook of client 5.5.0 (module client5) and 4.9.8 (client4). Builds first if needed.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
"$HERE/build.sh"
mkdir -p "$ROOT/tests/golden/acl"
for m in client5 client4; do
  CP="$HERE/$m/target/test-classes:$(cat "$HERE/$m/target/classpath.txt")"
  java -Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$CP" io.pyrmq.compat.scenarios.AclGolden \
    >"$ROOT/tests/golden/acl/signatures-$m.tsv"
done
