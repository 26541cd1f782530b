"""How the grader waits: until the running controller's ``Manager.idle(until=...)`` holds on the fake
clock, never for a fixed time; and a controller that is stopped (or whose manager stopped) is never
taken for a quiet, converged one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.client import Client
from kubeloop.runtime import Manager
from kubeloop.testing import ControllerUnderTest, Scenario, grade, resource
from kubeloop.testing._world import World

CONFIGMAPS = resource("", "ConfigMap")


async def _anything(client: Client, primary: dict[str, Any]) -> None:
    return None


SCENARIO = Scenario(CONFIGMAPS, [{"metadata": {"name": "a"}}], _anything, namespace="shop")


def _no_controllers(manager: Manager) -> None:
    manager.informer(CONFIGMAPS)  # informers only: "every controller idle" holds vacuously


async def test_a_stopped_controller_is_never_idle_even_without_controllers(tmp_path: Path) -> None:
    subject = ControllerUnderTest.manager(_no_controllers, name="informers-only")
    async with World(tmp_path, subject, SCENARIO, seed=1, builtins=()) as world:
        world.start_controller()
        took = await world.until_idle(5.0, step=0.1)
        assert took is not None and took < 5.0, "the running manager, synced, is idle"
        await world.stop_controller()
        assert await world.until_idle(1.0, step=0.1) is None, "a stopped manager is not idle"
        assert world.running_manager() is None
        world.start_controller()  # a restart: the new instance's manager, not the stopped one
        assert await world.until_idle(5.0, step=0.1) is not None
        assert world.running_manager() is subject.managers[-1] and len(subject.managers) == 2


async def test_a_well_behaved_grade_waits_for_idle_not_for_fixed_times(tmp_path: Path) -> None:
    report = await grade(ControllerUnderTest.manager(_no_controllers, name="quiet"), SCENARIO,
                         checks=["idempotency"], data_dir=tmp_path)  # fmt: skip
    restarted = report["idempotency"].evidence[1]
    assert restarted.startswith("restarted: 0 reconcile(s), idle after "), report.render()
    assert float(restarted.rsplit("idle after ", 1)[1].rstrip("s")) < 30.0, report.render()
