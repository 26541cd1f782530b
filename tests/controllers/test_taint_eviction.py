"""Taint-based eviction as upstream's taint-eviction controller does it, on the fake clock.

Upstream: ``pkg/controller/tainteviction/taint_eviction.go`` (``processPodOnNode``: untolerated ->
work due now, tolerated for ever -> cancel, otherwise work ``min(tolerationSeconds)`` after *now*,
kept once scheduled; ``handlePodUpdate`` on a pod no longer found -> ``cancelWorkWithEvent``;
``addConditionAndDeletePod`` -> ``UpdatePodCondition``, which keeps ``lastTransitionTime`` when the
status does not change and writes nothing when nothing changed) and its ``TimedWorkerQueue`` (work
that fired stays recorded so it does not run twice).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.api import format_time, parse_time
from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._kubelet import disruption_target
from kubeloop.controllers._scheduler_resources import LEASES
from kubeloop.testing import resource

from ._sim_world import NODES, NS, PODS, World, condition, open_world, pod
from .test_node_lifecycle import _pod_when, _ready, _taints

EVENTS = resource("", "Event")
FAULT = "kubeloop.dev/fault"
NODE = "kubeloop-node-1"
ON_NODE_1 = {"kubernetes.io/hostname": NODE}
UNREACHABLE = ("node.kubernetes.io/unreachable", "NoExecute")
CANCEL = ("Normal", "TaintManagerEviction", "taint-eviction-controller", "Cancelling deletion of Pod ns/web")
MARK = ("Normal", "TaintManagerEviction", "taint-eviction-controller", "Marking for deletion Pod ns/web")


async def _until_gone(world: World, name: str) -> None:
    async def gone() -> bool:
        return await world.maybe(PODS, name) is None

    await world.eventually(gone)


async def _events(world: World, name: str) -> list[tuple[str, str, str, str, int]]:
    await world.settle()
    items = (await world.client.list(EVENTS, namespace=NS)).get("items") or []
    return [(e["type"], e["reason"], e["source"]["component"], e["message"], e.get("count") or 1) for e in items
            if e["involvedObject"]["kind"] == "Pod" and e["involvedObject"]["name"] == name]


def _without_count(events: list[tuple[str, str, str, str, int]]) -> list[tuple[str, str, str, str]]:
    return [e[:4] for e in events]


async def _set_taints(world: World, extra: list[dict[str, Any]], node: str = NODE) -> None:
    """Add ``extra`` to the node's taints (the lifecycle controller's own are kept)."""
    current = (await world.get(NODES, node, None))["spec"].get("taints") or []
    await world.client.patch(NODES, node, {"spec": {"taints": [*current, *extra]}})
    await world.settle()


async def _unreachable(world: World) -> float:
    """Stop node-1's kubelet and move the clock to when it is declared Unknown and tainted unreachable
    (the lifecycle controller's 50 s grace period after the last Lease renewal); return that time."""
    await world.client.patch(NODES, NODE, {"metadata": {"annotations": {FAULT: "kubelet-stopped"}}})
    await world.settle()
    lease = await world.get(LEASES, NODE, "kube-node-lease")
    await world.advance(parse_time(lease["spec"]["renewTime"]) + 50 - world.clock.now())

    async def tainted() -> dict[str, Any] | None:
        node = await world.get(NODES, NODE, None)
        return node if UNREACHABLE in _taints(node) else None

    node = await world.eventually(tainted)
    tainted_at = parse_time(_taints(node)[UNREACHABLE] or "")
    assert tainted_at == world.clock.now()
    return tainted_at


async def test_deleting_a_pod_whose_eviction_is_pending_cancels_it_with_an_event(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1))
        await _pod_when(world, "web", _ready)
        tainted_at = await _unreachable(world)
        await world.advance(tainted_at + 100 - world.clock.now())
        await world.client.delete(PODS, "web", namespace=NS, grace_period_seconds=0)
        assert await world.maybe(PODS, "web") is None
        assert CANCEL in _without_count(await _events(world, "web"))
        # A new pod of that name on the same node gets its own 300 s, counted from when it is seen.
        again = pod("web", nodeName=NODE)
        await world.create(PODS, again)
        await world.settle()
        created_at = world.clock.now()
        await world.advance(tainted_at + 300 - world.clock.now() + 1)
        assert not (await world.get(PODS, "web"))["metadata"].get("deletionTimestamp")
        await world.advance(created_at + 300 - world.clock.now())
        await _pod_when(world, "web", lambda p: p["metadata"].get("deletionTimestamp"))


async def test_a_terminating_pod_keeps_its_pending_eviction(tmp_path: Path) -> None:
    # A graceful delete does not change the pod's tolerations or node: upstream's work stays and fires
    # on the Terminating pod (DisruptionTarget, then a delete that changes nothing more).
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1, terminationGracePeriodSeconds=30))
        await _pod_when(world, "web", _ready)
        tainted_at = await _unreachable(world)
        await world.client.delete(PODS, "web", namespace=NS)
        await world.advance(tainted_at + 299 - world.clock.now())
        assert not condition(await world.get(PODS, "web"), "DisruptionTarget")
        await world.advance(1)
        web = await _pod_when(world, "web", lambda p: condition(p, "DisruptionTarget"))
        assert condition(web, "DisruptionTarget")["lastTransitionTime"] == format_time(tainted_at + 300)
        assert MARK in _without_count(await _events(world, "web"))
        assert CANCEL not in _without_count(await _events(world, "web"))


async def test_a_pod_without_a_matching_toleration_is_evicted_at_once(tmp_path: Path) -> None:
    # DefaultTolerationSeconds adds nothing for a pod that names the key with effect NoExecute, even
    # with a value the (value-less) taint does not match: such a pod tolerates nothing and goes at once.
    odd = [{"key": "node.kubernetes.io/unreachable", "operator": "Equal", "value": "x", "effect": "NoExecute"}]
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1, tolerations=odd))
        await _pod_when(world, "web", _ready)
        assert [t for t in (await world.get(PODS, "web"))["spec"]["tolerations"]
                if t["key"] == "node.kubernetes.io/unreachable"] == odd
        tainted_at = await _unreachable(world)
        web = await _pod_when(world, "web", lambda p: p["metadata"].get("deletionTimestamp"))
        assert condition(web, "DisruptionTarget")["lastTransitionTime"] == format_time(tainted_at)


async def test_the_deadline_counts_from_when_the_taint_is_seen_not_from_time_added(tmp_path: Path) -> None:
    # processPodOnNode schedules work at now + tolerationSeconds; a taint's timeAdded plays no part.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1, terminationGracePeriodSeconds=0, tolerations=[
            {"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]))
        await _pod_when(world, "web", _ready)
        await world.advance(1000)
        seen_at = world.clock.now()
        await _set_taints(world, [{"key": "maint", "effect": "NoExecute", "timeAdded": format_time(seen_at - 900)}])
        await world.advance(59)
        assert await world.maybe(PODS, "web") is not None
        await world.advance(1)
        await _until_gone(world, "web")


async def test_a_taint_removed_and_added_again_starts_a_fresh_toleration(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1, terminationGracePeriodSeconds=0, tolerations=[
            {"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]))
        await _pod_when(world, "web", _ready)
        maint = {"key": "maint", "effect": "NoExecute"}
        await _set_taints(world, [maint])
        await world.advance(30)
        await world.client.patch(NODES, NODE, {"spec": {"taints": None}})
        await world.settle()
        assert CANCEL in _without_count(await _events(world, "web"))
        await world.advance(10)
        readded_at = world.clock.now()
        await _set_taints(world, [maint])
        await world.advance(59)
        assert await world.maybe(PODS, "web") is not None
        await world.advance(readded_at + 60 - world.clock.now())
        await _until_gone(world, "web")


async def test_scheduled_eviction_keeps_its_first_deadline_when_a_shorter_tolerated_taint_comes(
        tmp_path: Path) -> None:  # fmt: skip
    # An existing work item is kept: its created-at plus the new minimum is before now plus it.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1, terminationGracePeriodSeconds=0, tolerations=[
            {"key": "slow", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 100},
            {"key": "fast", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]))
        await _pod_when(world, "web", _ready)
        first = world.clock.now()
        await _set_taints(world, [{"key": "slow", "effect": "NoExecute"}])
        await world.advance(20)
        await _set_taints(world, [{"key": "fast", "effect": "NoExecute"}])
        await world.advance(first + 99 - world.clock.now())
        assert await world.maybe(PODS, "web") is not None
        await world.advance(1)
        await _until_gone(world, "web")


async def test_disruption_target_keeps_its_transition_time_when_eviction_runs_again(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1, terminationGracePeriodSeconds=30))
        await _pod_when(world, "web", _ready)
        await _unreachable(world)
        await _set_taints(world, [{"key": "first", "effect": "NoExecute"}])
        web = await _pod_when(world, "web", lambda p: condition(p, "DisruptionTarget"))
        evicted_at = condition(web, "DisruptionTarget")["lastTransitionTime"]
        await world.advance(10)
        # Another untolerated taint: upstream runs the eviction again (work due now, the fired work
        # cancelled without an Event); the condition is already there, so nothing is written to it.
        await _set_taints(world, [{"key": "second", "effect": "NoExecute"}])
        assert [e[4] for e in await _events(world, "web") if e[:4] == MARK] == [2]
        web = await world.get(PODS, "web")
        assert condition(web, "DisruptionTarget")["lastTransitionTime"] == evicted_at
        assert [c["type"] for c in web["status"]["conditions"]].count("DisruptionTarget") == 1
        # One cancel: the pending 300 s work replaced by work due now ("first"); the fired work
        # cancelled for "second" had already run, so upstream records nothing for it.
        assert [e[4] for e in await _events(world, "web") if e[:4] == CANCEL] == [1]


def test_update_pod_condition_semantics_of_disruption_target() -> None:
    stamp = format_time(1000.0)
    later = 2000.0
    first, changed = disruption_target([{"type": "Ready", "status": "False"}], 1000.0)
    assert changed and [c["type"] for c in first] == ["Ready", "DisruptionTarget"]
    assert first[1]["lastTransitionTime"] == stamp
    same, changed = disruption_target(first, later)
    assert not changed and same == first
    # Same status, another reason: updated in place, the transition time kept.
    other = [first[0], {**first[1], "reason": "PreemptionByScheduler"}]
    updated, changed = disruption_target(other, later)
    assert changed and updated[1]["reason"] == "DeletionByTaintManager" and updated[1]["lastTransitionTime"] == stamp
    # Status False before: a transition, stamped now, at the same index.
    flipped, changed = disruption_target([{**first[1], "status": "False"}, first[0]], later)
    assert changed and flipped[0]["status"] == "True" and flipped[0]["lastTransitionTime"] == format_time(later)


async def test_a_finished_pod_on_a_tainted_node_is_evicted_too(tmp_path: Path) -> None:
    # processPodOnNode does not look at the pod's phase: a Succeeded pod that does not tolerate the taint goes.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("done", nodeSelector=ON_NODE_1, restart="Never", terminationGracePeriodSeconds=0,
                                     annotations={"kubeloop.dev/fault": "succeed-after"}))
        await _pod_when(world, "done", lambda p: p.get("status", {}).get("phase") == "Succeeded")
        await _set_taints(world, [{"key": "maint", "effect": "NoExecute"}])
        await _until_gone(world, "done")
        assert ("Normal", "TaintManagerEviction", "taint-eviction-controller", "Marking for deletion Pod ns/done") in (
            _without_count(await _events(world, "done")))
