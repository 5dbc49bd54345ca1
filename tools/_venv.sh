# Sourced by tools/pyrmq and tools/test: make .venv with pyrmq installed (editable).
# Re-installs only when pyproject.toml changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYRMQ_PYTHON:-$(command -v python3.11 || command -v python3)}"
VENV="$ROOT/.venv"
EXTRAS="${PYRMQ_EXTRAS:-dev,fast,spark,container,grpc}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "[pyrmq] creating $VENV with $PY" >&2
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.pyrmq-installed-$EXTRAS"
# (or when the compiled extension's source changed: pip rebuilds pyrmq/_speedups/_native.pyx)
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] || [ "$ROOT/pyrmq/_speedups/_native.pyx" -nt "$stamp" ]; then
  echo "[pyrmq] installing pyrmq[$EXTRAS] into $VENV" >&2
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q -e "$ROOT[$EXTRAS]" >&2
  touch "$stamp"
fi
