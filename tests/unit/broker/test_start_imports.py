"""A broker without enableDLegerCommitLog does not load the DLedger stack (Raft, its protocol and
store): a part of every broker's start time (docs/benchmarks.md, Start and restart)."""

from __future__ import annotations

import subprocess
import sys


def test_controller_import_leaves_dledger_out() -> None:
    code = "import sys\nimport pyrmq.broker.controller\nprint(sorted(m for m in sys.modules if 'dledger' in m))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
