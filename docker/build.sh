#!/usr/bin/env bash
# Build the pyrmq image from this checkout, reusing it when nothing it contains changed.
#   docker/build.sh            -> prints the image reference (pyrmq:<content hash>, also tagged pyrmq:local)
# Base image: $PYRMQ_BASE_IMAGE, else what tools/docker-up.sh provides (python:3.11-slim when a registry
# is reachable, otherwise the local debootstrapped pyrmq-base:bookworm). Python dependencies are built as
# wheels on the host (docker/wheels/, with the host's pip settings and certificates) and installed
# in the image without an index, so the build needs no network; `docker build --network host` anyway.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
log() { echo "[docker/build] $*" >&2; }

BASE="${PYRMQ_BASE_IMAGE_RESOLVED:-$(tools/docker-up.sh | tail -1)}"
EXTRAS="${PYRMQ_EXTRAS_IMAGE:-fast}"
base_id="$(docker image inspect --format '{{.Id}}' "$BASE")"
hash="$(
  {
    echo "$base_id $EXTRAS"
    find pyproject.toml docker/Dockerfile docker/entrypoint.py docker/healthcheck.py .dockerignore pyrmq \
      -type f -name '*' ! -name '*.pyc' ! -path '*/__pycache__/*' -print | LC_ALL=C sort | xargs sha256sum
  } | sha256sum | cut -c1-12
)"
IMAGE="pyrmq:$hash"
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  docker tag "$IMAGE" pyrmq:local
  log "up to date: $IMAGE"
  echo "$IMAGE"
  exit 0
fi

# Host-built wheels for the runtime dependencies (same Python 3.11 / glibc as Debian bookworm).
PY="${PYRMQ_PYTHON:-$(command -v python3.11 || command -v python3)}"
reqs="$("$PY" - "$EXTRAS" <<'PY'
import sys, tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
deps = list(p["dependencies"])
for extra in filter(None, sys.argv[1].split(",")):
    deps += p["optional-dependencies"][extra]
print("\n".join(deps))
PY
)"
stamp="docker/wheels/.requirements"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$reqs" ]; then
  log "building wheels for: $(echo "$reqs" | tr '\n' ' ')"
  rm -rf docker/wheels && mkdir -p docker/wheels
  echo "$reqs" >docker/wheels/requirements.txt
  "$PY" -m pip wheel -q --disable-pip-version-check -w docker/wheels -r docker/wheels/requirements.txt >&2
  echo "$reqs" >"$stamp"
fi

log "docker build $IMAGE (base $BASE)"
t0=$(date +%s)
DOCKER_BUILDKIT=0 docker build -q --network host --build-arg BASE_IMAGE="$BASE" --build-arg PYRMQ_EXTRAS="$EXTRAS" \
  -f docker/Dockerfile -t "$IMAGE" -t pyrmq:local . >&2
log "built $IMAGE in $(($(date +%s) - t0))s"
echo "$IMAGE"
