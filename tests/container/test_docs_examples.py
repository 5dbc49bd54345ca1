"""The `<!-- example: NAME -->` code blocks of docs/docker.md, executed as written.

`pytest` runs in a child pytest with each --broker-mode (the plugin is the installed entry point);
`process` and `container` run as scripts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.container]

DOC = Path(__file__).resolve().parents[2] / "docs" / "docker.md"


def examples() -> dict[str, str]:
    text = DOC.read_text()
    found = dict(re.findall(r"<!-- example: (\w+) -->\s*```python\n(.*?)```", text, re.S))
    assert set(found) == {"pytest", "process", "container"}, sorted(found)
    return found


def _run(argv, cwd, timeout=180):
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
    assert r.returncode == 0, f"{argv}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r


@pytest.mark.parametrize("mode", ["process", "inprocess", "container"])
def test_pytest_example(mode, pyrmq_image, tmp_path):
    (tmp_path / "test_orders.py").write_text(examples()["pytest"])
    r = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_orders.py",
            f"--broker-mode={mode}",
            f"--pyrmq-image={pyrmq_image}",
            "--rootdir",
            str(tmp_path),
        ],
        tmp_path,
    )
    assert "1 passed" in r.stdout


@pytest.mark.parametrize("name", ["process", "container"])
def test_script_example(name, pyrmq_image, tmp_path):
    script = tmp_path / f"{name}.py"
    script.write_text(examples()[name].replace('"pyrmq:local"', repr(pyrmq_image)))
    _run([sys.executable, str(script)], tmp_path)
