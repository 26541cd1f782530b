"""The pytest plugin, loaded the way pip-installed kubeloop loads it: through the ``pytest11`` entry point
that pyproject.toml declares. Each test runs pytest in a subprocess on a small suite, with a
distribution on its path that declares exactly that entry point (the shared environment's own
install is not touched).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]

SUITE = '''
import pytest
from kubeloop.api import NotFound
from kubeloop.testing import ControllerUnderTest, FakeClock, InProcessCluster, Scenario, resource

CONFIGMAPS = resource("", "ConfigMap")


@pytest.mark.asyncio
async def test_the_cluster_runs_on_the_fake_clock(kubeloop_cluster, kubeloop_clock):
    assert isinstance(kubeloop_cluster, InProcessCluster) and kubeloop_cluster.clock is kubeloop_clock
    await kubeloop_cluster.create(CONFIGMAPS, "a", data={"k": "v"})
    assert await kubeloop_cluster.exists(CONFIGMAPS, "a")
    assert kubeloop_cluster.http_faults.requests


@pytest.mark.asyncio
async def test_the_grader_grades(kubeloop_grade, tmp_path):
    async def quiet(client):  # a controller that does nothing: nothing to write, nothing to own
        await FakeClock().sleep(10**9)

    async def expect(client, obj):
        return True

    scenario = Scenario(CONFIGMAPS, [{"metadata": {"name": "x"}}], expect)
    report = await kubeloop_grade(quiet, scenario, checks=["idempotency", "ownership"])
    report.assert_passed()
    assert report["ownership"].outcome == "skipped"
    assert (tmp_path / "kubeloop-grade").is_dir()


def test_the_projects_own_fixtures_win(clock, cluster):
    assert (clock, cluster) == ("mine", "mine too")
'''

CONFTEST = '''
import pytest


@pytest.fixture
def clock():
    return "mine"


@pytest.fixture
def cluster():
    return "mine too"
'''


# Other installed plugins are still auto-loaded with kubeloop's; these slow ones are not needed here.
_UNRELATED = ("-p", "no:hypothesispytest", "-p", "no:benchmark")


def _entry_points() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return dict(project["entry-points"]["pytest11"])


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_suite.py").write_text(textwrap.dedent(SUITE))
    (suite / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    site = tmp_path / "site"
    dist = site / "kubeloop_plugin_probe-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kubeloop-plugin-probe\nVersion: 0.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in _entry_points().items())
    (dist / "entry_points.txt").write_text(f"[pytest11]\n{lines}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(site)]))
    env.pop("PYTEST_ADDOPTS", None)
    # A top-level run, also when this test runs in a pytest-xdist worker: with the worker's variables
    # (PYTEST_XDIST_WORKER...) pytest-benchmark, where installed, takes the nested run for a worker too.
    for name in [name for name in env if name.startswith("PYTEST_XDIST_")]:
        del env[name]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=strict",
         "--rootdir", str(suite), *_UNRELATED, *args, str(suite)],
        capture_output=True, text=True, cwd=suite, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_pyproject_declares_the_plugin_entry_point() -> None:
    assert _entry_points() == {"kubeloop": "kubeloop.testing.plugin"}


def test_the_entry_point_provides_the_fixtures_without_touching_the_projects_own(tmp_path: Path) -> None:
    run = _pytest(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout


def test_no_kubeloop_disables_the_plugin(tmp_path: Path) -> None:
    run = _pytest(tmp_path, "-p", "no:kubeloop")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "fixture 'kubeloop_cluster' not found" in run.stdout
    assert "1 passed, 2 errors" in run.stdout  # the project's own fixtures still work
