"""Pod Events from the simulated scheduler and kubelet, as ``kubectl describe pod`` shows them upstream.

Reasons and messages follow kube-scheduler (``Scheduled``, ``FailedScheduling``) and kubelet 1.32
(``pkg/kubelet/events``: ``Pulling``, ``Pulled``, ``Created``, ``Started``, ``BackOff``, ``Killing``,
``Unhealthy``); repeats are one Event whose ``count`` grows (client-go's correlator).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._kubelet_images import simulated_image_size
from kubeloop.controllers._kubelet_profiles import go_duration
from kubeloop.testing import resource

from ._sim_world import NODES, NS, PODS, World, condition, open_world, pod

NGINX_SIZE = simulated_image_size("nginx:1.25")

EVENTS = resource("", "Event")
FAULT = "kubeloop.dev/fault"


async def pod_events(world: World, name: str) -> list[dict[str, Any]]:
    items = (await world.client.list(EVENTS, namespace=NS)).get("items") or []
    return [e for e in items if e["involvedObject"]["kind"] == "Pod" and e["involvedObject"]["name"] == name]


def described(events: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(type, reason, source, message) in the order written, as the describe table lists them."""
    return [(e["type"], e["reason"], e["source"]["component"], e["message"]) for e in events]


async def wait_for(world: World, name: str, reason: str, *, step: float = 0.0, count: int = 1) -> list[dict[str, Any]]:
    async def seen() -> list[dict[str, Any]]:
        events = await pod_events(world, name)
        return events if any(e["reason"] == reason and e.get("count", 1) >= count for e in events) else []

    result: list[dict[str, Any]] = await world.eventually(seen, step=step)
    return result


async def test_a_scheduled_pod_records_scheduled_then_the_kubelet_start_sequence(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("web"))
        events = await wait_for(world, "web", "Started")
        node = (await world.get(PODS, "web"))["spec"]["nodeName"]
        assert described(events) == [
            ("Normal", "Scheduled", "default-scheduler", f"Successfully assigned {NS}/web to {node}"),
            ("Normal", "Pulling", "kubelet", 'Pulling image "nginx:1.25"'),
            ("Normal", "Pulled", "kubelet",
             f'Successfully pulled image "nginx:1.25" in 0s (0s including waiting). Image size: {NGINX_SIZE} bytes.'),
            ("Normal", "Created", "kubelet", "Created container: app"),
            ("Normal", "Started", "kubelet", "Started container app"),
        ]
        uid = (await world.get(PODS, "web"))["metadata"]["uid"]
        assert {e["involvedObject"]["uid"] for e in events} == {uid}
        # The size pulled is the one the node then reports for the image (status.images).
        await world.eventually(lambda: _reports_image(world, node, "nginx:1.25"))
        images = (await world.get(NODES, node, namespace=None))["status"]["images"]
        assert [i["sizeBytes"] for i in images if "nginx:1.25" in i["names"]] == [NGINX_SIZE]
        # Steady state: a running pod costs no writes, so no Event is recorded twice.
        assert await world.quiet_writes() == 0
        assert len(await pod_events(world, "web")) == 5


async def test_the_pull_takes_the_start_delay(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1, container_start_delay=90)) as world:
        await world.create(PODS, pod("slow"))
        await world.eventually(lambda: _status_written(world, "slow"))
        await world.advance(90)
        events = await wait_for(world, "slow", "Pulled")
        assert [e["message"] for e in events if e["reason"] == "Pulled"] == [
            f'Successfully pulled image "nginx:1.25" in 1m30s (1m30s including waiting). Image size: {NGINX_SIZE} bytes.']


async def test_an_unschedulable_pod_records_failed_scheduling_once_per_reason(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("huge", cpu="1000"))
        events = await wait_for(world, "huge", "FailedScheduling")
        message = condition(await world.get(PODS, "huge"), "PodScheduled")["message"]
        assert described(events) == [("Warning", "FailedScheduling", "default-scheduler", message)]
        assert message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
        assert await world.quiet_writes() == 0
        await world.advance(301)  # the periodic retry meets the same reason: nothing new to say
        assert [e.get("count", 1) for e in await pod_events(world, "huge")] == [1]


async def test_a_crash_loop_records_back_off_and_counts_repeats_on_the_same_events(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        created = await world.create(PODS, pod("crash", annotations={FAULT: "crash-loop"}))
        uid = created["metadata"]["uid"]
        events = await wait_for(world, "crash", "BackOff")
        backoff = next(e for e in events if e["reason"] == "BackOff")
        assert backoff["type"] == "Warning"
        assert backoff["message"] == f"Back-off restarting failed container app in pod crash_{NS}({uid})"
        await world.advance(10)  # the first back-off ends: the container runs (and fails) again
        events = await wait_for(world, "crash", "BackOff", count=2, step=1.0)
        by_reason = {(e["reason"], e["message"]): e for e in events}
        assert len(by_reason) == len(events), "a repeat is counted on the existing Event, never a new one"
        assert by_reason[("Started", "Started container app")]["count"] >= 2
        again = by_reason[("Pulled", 'Container image "nginx:1.25" already present on machine')]
        assert again["count"] >= 1
        counted = by_reason[("BackOff", backoff["message"])]
        assert counted["metadata"]["name"] == backoff["metadata"]["name"]
        assert counted["lastTimestamp"] > counted["firstTimestamp"]


async def test_deleting_a_running_pod_records_killing(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("web", terminationGracePeriodSeconds=5))
        await wait_for(world, "web", "Started")
        await world.client.delete(PODS, "web", namespace=NS)
        events = await wait_for(world, "web", "Killing")
        assert ("Normal", "Killing", "kubelet", "Stopping container app") in described(events)


async def test_a_never_ready_container_with_a_readiness_probe_records_unhealthy(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        web = pod("web", annotations={FAULT: "never-ready"})
        web["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080}}
        await world.create(PODS, web)
        events = await wait_for(world, "web", "Unhealthy")
        assert ("Warning", "Unhealthy", "kubelet", "Readiness probe failed: HTTP probe failed with statuscode: 503") in (
            described(events))
        assert await world.quiet_writes() == 0


def test_go_durations_read_as_go_prints_them() -> None:
    assert [go_duration(s) for s in (0, 0.25, 1.5, 59, 90, 120, 3661)] == [
        "0s", "250ms", "1.5s", "59s", "1m30s", "2m0s", "1h1m1s"]


async def _status_written(world: World, name: str) -> bool:
    return bool((await world.get(PODS, name)).get("status", {}).get("containerStatuses"))


async def _reports_image(world: World, node: str, image: str) -> bool:
    images = (await world.get(NODES, node, namespace=None)).get("status", {}).get("images") or []
    return any(image in entry.get("names", []) for entry in images)
