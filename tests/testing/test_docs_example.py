"""docs/testing.md's example runs as written: its code block is extracted from the page, executed as a
test module would be (``examples/`` on the path, as the page's import assumes), and its test function
is called with the plugin's real ``kubeloop_grade`` fixture. A docs edit that breaks the example, or a
grader change that breaks what it shows, fails here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kubeloop.testing import Report, Scenario

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs" / "testing.md"
SECTION = "## Example: the sample controller"


def docs_example() -> str:
    """The first ```python block of the example section of docs/testing.md."""
    text = DOCS.read_text()
    assert SECTION in text, f"{DOCS} lost its section {SECTION!r}"
    after = text.split(SECTION, 1)[1]
    found = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert found is not None, f"no python block under {SECTION!r}"
    return found.group(1)


@pytest.fixture
def examples_on_path() -> Any:
    where = str(ROOT / "examples")
    sys.path.insert(0, where)
    yield
    sys.path.remove(where)


async def test_the_docs_example_grades_the_sample_controller_and_passes(
    examples_on_path: None, kubeloop_grade: Callable[..., Awaitable[Report]]
) -> None:
    namespace: dict[str, Any] = {"__name__": "docs_testing_example"}
    exec(compile(docs_example(), str(DOCS), "exec"), namespace)
    assert isinstance(namespace["scenario"], Scenario)
    graded: list[Report] = []

    async def recording(*args: Any, **kwargs: Any) -> Report:
        report = await kubeloop_grade(*args, **kwargs)
        graded.append(report)
        return report

    await namespace["test_configmap_mirror_is_conformant"](recording)
    assert len(graded) == 1, "the example must grade once"
    report = graded[0]
    assert report.controller == "configmap-mirror"
    assert [r.outcome for r in report.results] == ["passed"] * 5, report.render()

