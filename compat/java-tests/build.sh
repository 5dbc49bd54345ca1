#!/usr/bin/env bash
# Build the Java compat harness (Maven, official artifacts from Maven Central only)
# and write <module>/target/classpath.txt for every module, so pytest can start
# `java -cp ...` without Maven. Idempotent: a second run with no change in the
# poms or sources returns in well under a second. Works from an empty ~/.m2.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"
MODULES=(golden servers tools5 tools4 client5 client4 container grpcclient proxy)

for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "compat/java-tests/build.sh: FATAL: '$tool' not found on PATH; the Java compat suite needs a JDK (17) and Maven (3.8+)" >&2
    exit 3
  fi
done

mkdir -p target
STAMP=target/build.stamp
stamp() {
  {
    java -version 2>&1
    find . -path '*/target' -prune -o -type f \( -name '*.xml' -o -name '*.java' -o -name '*.properties' \) -print \
      | LC_ALL=C sort | xargs sha256sum
  } | sha256sum | cut -d' ' -f1
}

# Every classpath file exists and every jar it names is still in the local repository.
classpaths_ok() {
  local m f
  for m in "${MODULES[@]}"; do
    f="$m/target/classpath.txt"
    [[ -s "$f" ]] || return 1
    [[ "$m" != golden || -s golden/target/golden-0.1.0.jar ]] || return 1
    tr ':' '\n' <"$f" | while read -r jar; do [[ -e "$jar" ]] || exit 1; done || return 1
  done
}

want="$(stamp)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] && classpaths_ok; then
  exit 0
fi

# Debian's Maven 3.8.7 prints stray colour resets even with -B; strip them.
mvn_q() { mvn -B -q -DskipTests "$@" 2>&1 | sed -u 's/\x1b\[0m//g'; }
# Offline is only safe once a previous online build filled the local repository
# for these same poms; otherwise (fresh ~/.m2, changed dependencies) go online.
POMS="$(cat pom.xml */pom.xml | sha256sum | cut -d' ' -f1)"
if [[ -f target/deps.stamp && "$(cat target/deps.stamp)" == "$POMS" ]]; then
  if ! mvn_q -o package | tee target/mvn-offline.log; then
    # Only a dependency the offline repository lacks is worth a second, online try.
    if grep -qiE "offline|could not be resolved|cannot access" target/mvn-offline.log; then
      echo "compat/java-tests/build.sh: offline build could not resolve dependencies, retrying online" >&2
      mvn_q package
    else
      echo "compat/java-tests/build.sh: FATAL: Maven build failed (output above)" >&2
      exit 1
    fi
  fi
else
  echo "compat/java-tests/build.sh: resolving Maven dependencies (first run can take a few minutes)" >&2
  mvn_q package || { echo "compat/java-tests/build.sh: FATAL: Maven build failed (output above)" >&2; exit 1; }
  echo "$POMS" >target/deps.stamp
fi

classpaths_ok || { echo "compat/java-tests/build.sh: FATAL: classpath files missing after the build" >&2; exit 1; }
echo "$want" >"$STAMP"
