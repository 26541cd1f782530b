"""Fixtures for the examples' end-to-end tests: the real API server in-process (tests/client/_realapi.py)
and the example controllers importable from examples/."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
# pytest runs with --import-mode=importlib: make the support module and the examples importable.
sys.path.insert(0, str(ROOT / "tests" / "client"))
sys.path.insert(0, str(ROOT / "examples"))
