"""The simulated kubelet: phases, container states, conditions, fault profiles and graceful deletion,
all on the fake clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.api import parse_time
from kubeloop.controllers import SimulationOptions

from ._sim_world import NODES, PODS, World, condition, open_world, pod

FAULT = "kubeloop.dev/fault"
AFTER = "kubeloop.dev/fault-after-seconds"


async def _status(world: World, name: str, check: Any, *, step: float = 0.0) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        obj = await world.maybe(PODS, name)
        return obj if obj is not None and check(obj) else None

    result: dict[str, Any] = await world.eventually(probe, step=step)
    return result


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["status"]["containerStatuses"][0])


def _ready(obj: dict[str, Any]) -> bool:
    return condition(obj, "Ready").get("status") == "True"


async def test_pod_goes_creating_then_running_then_ready_after_the_configured_delays(tmp_path: Path) -> None:
    options = SimulationOptions(nodes=1, container_start_delay=2, readiness_delay=3)
    async with open_world(tmp_path, options) as world:
        await world.create(PODS, pod("web"))
        creating = await _status(world, "web", lambda p: p["status"].get("containerStatuses"))
        assert creating["status"]["phase"] == "Pending"
        assert _container(creating)["state"] == {"waiting": {"reason": "ContainerCreating"}}
        assert creating["status"]["hostIP"] and creating["status"]["podIP"].startswith("10.1.")
        assert condition(creating, "PodScheduled")["status"] == "True"
        assert condition(creating, "Ready") == {**condition(creating, "Ready"), "status": "False",
                                                "reason": "ContainersNotReady"}
        start = parse_time(creating["status"]["startTime"])
        await world.advance(2)
        running = await _status(world, "web", lambda p: p["status"]["phase"] == "Running")
        assert _container(running)["state"]["running"]["startedAt"]
        assert not _ready(running)
        await world.advance(3)
        ready = await _status(world, "web", _ready)
        assert condition(ready, "ContainersReady")["status"] == "True"
        assert condition(ready, "Initialized")["status"] == "True"
        assert parse_time(condition(ready, "Ready")["lastTransitionTime"]) == start + 5
        # lastTransitionTime of conditions that did not change stays put.
        assert condition(ready, "Initialized")["lastTransitionTime"] == condition(creating, "Initialized")[
            "lastTransitionTime"]


async def test_steady_state_makes_no_writes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        for i in range(3):
            await world.create(PODS, pod(f"p{i}"))
        for i in range(3):
            await _status(world, f"p{i}", _ready)
        assert await world.quiet_writes() == 0


async def test_crash_loop_restarts_with_doubling_backoff_and_never_becomes_ready(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("crash", annotations={FAULT: "crash-loop", "kubeloop.dev/exit-code": "2"}))
        first = await _status(world, "crash", lambda p: p["status"].get("containerStatuses"))
        c = _container(first)
        assert c["restartCount"] == 1 and c["ready"] is False
        assert c["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert c["state"]["waiting"]["message"].startswith("back-off 10s restarting failed container=app pod=crash_ns(")
        assert c["lastState"]["terminated"]["exitCode"] == 2
        assert first["status"]["phase"] == "Running" and not _ready(first)
        seen = []
        for _ in range(6):
            count = c["restartCount"]
            later = await _status(world, "crash", lambda p, n=count: _container(p)["restartCount"] > n, step=5)
            c = _container(later)
            seen.append(c["state"]["waiting"]["message"].split()[1])
            assert not _ready(later)
        assert seen == ["20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"]


async def test_never_ready_pod_runs_but_stays_unready(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("lazy", annotations={FAULT: "never-ready"}))
        running = await _status(world, "lazy", lambda p: p["status"]["phase"] == "Running")
        await world.advance(3600)
        running = await world.get(PODS, "lazy")
        assert _container(running)["state"].get("running") and not _ready(running)
        assert condition(running, "ContainersReady")["message"] == "containers with unready status: [app]"


async def test_slow_start_stays_container_creating_for_its_delay(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("slow", annotations={FAULT: "slow-start", AFTER: "60"}))
        await _status(world, "slow", lambda p: p["status"].get("containerStatuses"))
        await world.advance(59)
        assert (await world.get(PODS, "slow"))["status"]["phase"] == "Pending"
        await world.advance(1)
        await _status(world, "slow", _ready)


async def test_fail_after_with_restart_never_ends_failed(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("job", restart="Never", annotations={FAULT: "fail-after", AFTER: "30"}))
        await _status(world, "job", _ready)
        await world.advance(30)
        failed = await _status(world, "job", lambda p: p["status"]["phase"] == "Failed")
        terminated = _container(failed)["state"]["terminated"]
        assert terminated["exitCode"] == 1 and terminated["reason"] == "Error"
        assert condition(failed, "Ready")["reason"] == "PodCompleted"
        assert await world.quiet_writes() == 0


async def test_succeed_after_with_restart_on_failure_ends_succeeded(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("task", restart="OnFailure", annotations={FAULT: "succeed-after", AFTER: "5"}))
        await _status(world, "task", lambda p: p["status"]["phase"] == "Running")
        await world.advance(5)
        done = await _status(world, "task", lambda p: p["status"]["phase"] == "Succeeded")
        assert _container(done)["state"]["terminated"]["reason"] == "Completed"


async def test_graceful_delete_stops_the_pod_then_removes_it_after_the_grace_period(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("web", terminationGracePeriodSeconds=20))
        await _status(world, "web", _ready)
        await world.client.delete(PODS, "web", namespace="ns")
        stopped = await _status(world, "web", lambda p: not _ready(p))
        assert stopped["metadata"]["deletionTimestamp"]
        assert _container(stopped)["state"].get("terminated")
        await world.advance(19)
        assert await world.maybe(PODS, "web") is not None
        await world.advance(1)

        async def gone() -> bool:
            return await world.maybe(PODS, "web") is None

        await world.eventually(gone)
        assert world.ctl.count(verb="delete", resource="pods") == 1


async def test_not_ready_node_makes_its_pods_unready_and_evicts_them_after_the_timeout(tmp_path: Path) -> None:
    # Two nodes: with every node of the cluster not ready, upstream's node lifecycle controller taints none
    # NoExecute (its all-zones-fully-disrupted mode), so a one-node cluster would evict nothing.
    on_node_1 = {"kubernetes.io/hostname": "kubeloop-node-1"}
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", terminationGracePeriodSeconds=0, nodeSelector=on_node_1))
        await world.create(PODS, pod("stays", nodeSelector=on_node_1, tolerations=[
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]))
        await _status(world, "web", _ready)
        await _status(world, "stays", _ready)
        await world.client.patch(NODES, "kubeloop-node-1", {"metadata": {"annotations": {FAULT: "not-ready"}}})

        async def node_not_ready() -> dict[str, Any] | None:
            node = await world.get(NODES, "kubeloop-node-1", None)
            return node if condition(node, "Ready").get("status") == "False" and node["spec"].get("taints") else None

        node = await world.eventually(node_not_ready)
        assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} == {
            ("node.kubernetes.io/not-ready", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute")}
        await _status(world, "web", lambda p: not _ready(p))
        # The countdown starts when the taint-eviction controller sees the taint (upstream's
        # processPodOnNode uses now): let it see it before the clock moves.
        await world.settle()
        await world.advance(299)
        assert await world.maybe(PODS, "web") is not None
        await world.advance(1)

        async def evicted() -> bool:
            return await world.maybe(PODS, "web") is None

        await world.eventually(evicted)
        assert await world.maybe(PODS, "stays") is not None
        await world.client.patch(NODES, "kubeloop-node-1", {"metadata": {"annotations": {FAULT: None}}})
        await _status(world, "stays", _ready)


async def test_node_heartbeats_renew_the_lease_on_the_clock(tmp_path: Path) -> None:
    from kubeloop.controllers._scheduler_resources import LEASES

    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        lease = await world.eventually(lambda: world.maybe(LEASES, "kubeloop-node-1", "kube-node-lease"))
        first = parse_time(lease["spec"]["renewTime"])
        assert lease["spec"]["holderIdentity"] == "kubeloop-node-1"
        await world.advance(10)

        async def renewed() -> bool:
            current = await world.get(LEASES, "kubeloop-node-1", "kube-node-lease")
            return parse_time(current["spec"]["renewTime"]) >= first + 10

        await world.eventually(renewed)
