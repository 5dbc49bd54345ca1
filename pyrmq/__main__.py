"""`python -m pyrmq ...` runs the `pyrmq` console script (pyrmq/cli.py)."""

import sys

from pyrmq.cli import main

sys.exit(main())
