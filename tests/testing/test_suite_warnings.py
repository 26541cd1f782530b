"""The suite's warning filters (pyproject ``[tool.pytest.ini_options] filterwarnings``): every warning is
an error, except the one the hypothesis plugin trips over while it reports a failing property test.

Hypothesis reports a falsifying example through ``hypothesis.extra._patching``, which imports libcst, whose
``metadata/type_inference_provider.py`` subclasses ``mypy_extensions.TypedDict`` (deprecated in
mypy_extensions 1.1, python/mypy_extensions#47). Raised as an error inside the plugin's
``pytest_runtest_makereport`` hook, that warning became an INTERNALERROR in place of the failure report.
Each test runs pytest in a subprocess (libcst is imported there for the first time, as in a real run) on a
small suite configured with this project's filters.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]

SUITE = '''
import warnings

from hypothesis import given, settings, strategies as st


@settings(database=None)
@given(st.integers())
def test_a_failing_property(x):
    assert x < 5


def test_another_deprecation_warning_is_still_an_error():
    warnings.warn("something else is deprecated", DeprecationWarning)


def test_mypy_extensions_typeddict_outside_libcst_is_still_an_error():
    from mypy_extensions import TypedDict

    class Point(TypedDict):
        x: int
'''


def _ini_options() -> dict[str, Any]:
    options: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    return options


def _filters() -> list[str]:
    return list(_ini_options()["filterwarnings"])


def _pytest(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    lines = "".join(f"    {entry}\n" for entry in _filters())
    # The project's pytest-asyncio settings too: without them the plugin warns at configure time, and
    # under these filters that warning is itself an INTERNALERROR (seen with a fresh CI install).
    options = _ini_options()
    asyncio = "".join(f"{key} = {options[key]}\n" for key in sorted(options) if key.startswith("asyncio_"))
    (tmp_path / "pytest.ini").write_text(f"[pytest]\n{asyncio}filterwarnings =\n{lines}")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("PYTEST_ADDOPTS", None)
    # A top-level run, also when this test runs in a pytest-xdist worker: with the worker's variables
    # (PYTEST_XDIST_WORKER...) pytest-benchmark, where installed, takes the nested run for a worker too.
    for name in [name for name in env if name.startswith("PYTEST_XDIST_")]:
        del env[name]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:kubeloop",
         "--rootdir", str(tmp_path), str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=env, check=False,
    )  # fmt: skip


def test_warnings_are_errors_but_one() -> None:
    assert _filters()[0] == "error"
    assert _filters()[1:] == [
        "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning:libcst.metadata.type_inference_provider"
    ]


def test_a_failing_hypothesis_test_is_reported_as_a_failure_not_an_internal_error(tmp_path: Path) -> None:
    run = _pytest(tmp_path)
    output = run.stdout + run.stderr
    assert "INTERNALERROR" not in output, output
    assert run.returncode == 1, output  # tests failed (an internal error exits with 3)
    # hypothesis' wording changed over its releases ("Failing test case" from 6.1xx on)
    assert any(f"{words}: test_a_failing_property(" in run.stdout for words in ("Falsifying example", "Failing test case")), output
    assert "FAILED test_suite.py::test_a_failing_property - assert 5 < 5" in run.stdout, output
    assert "FAILED test_suite.py::test_another_deprecation_warning_is_still_an_error" in run.stdout, output
    assert "FAILED test_suite.py::test_mypy_extensions_typeddict_outside_libcst_is_still_an_error" in run.stdout
    assert "3 failed" in run.stdout, output
