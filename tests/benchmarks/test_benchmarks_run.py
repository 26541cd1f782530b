"""The quick benchmarks still run to their result line at the smallest sizes.

No test times them (figures come from quiet runs, docs/performance.md); these catch the other way a
benchmark stops working: a change elsewhere it never hears of. ``write_path.py`` stopped at its first pod
for a session when the ServiceAccount admission plugin became a default (403 on a namespace without its
``default`` ServiceAccount), and nothing failed until someone measured. mypy checks their types
(``[tool.mypy] files``); these check what they do against a real server.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

CASES = [
    # (script and its smallest sizes, the line that says the run got to its figures)
    (["write_path.py", "--deployments", "1"], r"1 Deployments: [\d.]+ ms of CPU each \(\d+ writes, \d+ reads\)"),
    (["controllers.py", "--deployments", "1", "--replicas", "1"], r"all Available \(s\)\s+[\d.]+"),
    (["list_get.py", "--count", "10", "--gets", "10"], r"GET of 10 ConfigMaps .* body \d+ bytes"),
    (["delete.py", "--objects", "10", "--runs", "1"], r"namespace of 10 objects; goal"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "result"), CASES, ids=[c[0][0] for c in CASES])
def test_benchmark_runs_to_its_result(argv: list[str], result: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / argv[0]), *argv[1:]],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert re.search(result, output), output[-4000:]
