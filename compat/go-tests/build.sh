#!/usr/bin/env bash
# Build the Go compat test binary bin/compat.test (official
# rocketmq-client-go v2.1.2, pinned by go.mod/go.sum). Quick no-op when the
# binary is newer than every source file; fails clearly without Go.
# Also builds bin/grpcsdk from grpcsdk/ (its own module: the official 5.x gRPC
# SDK rocketmq-clients golang/v5, pinned by grpcsdk/go.mod/go.sum).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v go >/dev/null 2>&1; then
  echo "[go-tests] FATAL: 'go' not found on PATH; the Go compat suite needs Go >= 1.22" >&2
  exit 3
fi

bin=bin/compat.test
if [[ -x $bin && -x bin/grpcsdk && -z "$(find . -path ./bin -prune -o \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$bin" -print)" ]]; then
  echo "[go-tests] $bin is up to date" >&2
  exit 0
fi

export GOTOOLCHAIN=local
echo "[go-tests] $(go version): downloading modules" >&2
go mod download
echo "[go-tests] compiling $bin" >&2
mkdir -p bin
go test -mod=readonly -c -o "$bin.tmp" .
mv -f "$bin.tmp" "$bin"
echo "[go-tests] built $bin" >&2
echo "[go-tests] compiling bin/grpcsdk (rocketmq-clients golang/v5)" >&2
(cd grpcsdk && go mod download && go build -mod=readonly -o ../bin/grpcsdk.tmp .)
mv -f bin/grpcsdk.tmp bin/grpcsdk
echo "[go-tests] built bin/grpcsdk" >&2
