"""The pod garbage collector runs every 20 s, not on events: its passes and its quarantine on the fake clock.

Upstream (release 1.32): k/k ``pkg/controller/podgc/gc_controller.go``: ``Run`` starts
``wait.UntilWithContext(ctx, gcc.gc, gcc.gcCheckPeriod)`` (``gcCheckPeriod`` 20 s) once the pod and node
caches synced, and registers no event handler; ``gcOrphaned`` puts a missing node in ``nodeQueue`` with
``AddAfter(name, quarantineTime)`` (40 s) and ``discoverDeletedNodes`` checks it at the first pass after that.
"""

from __future__ import annotations

from pathlib import Path

from kubeloop.controllers._pod_gc import GC_CHECK_PERIOD, QUARANTINE_SECONDS

from ._sim_world import NODES, NS, PODS
from .test_pod_gc_steps import GCWorld, finish, gc_world, node, pod


async def _first_pass_done(world: GCWorld) -> None:
    """The pass that runs once the caches synced (at fake time 0) is over: the next one is due later."""
    async def idle() -> bool:
        return world.gc.controller.idle()

    await world.eventually(idle)


def test_upstream_period_and_quarantine() -> None:
    assert (GC_CHECK_PERIOD, QUARANTINE_SECONDS) == (20.0, 40.0)


async def test_terminated_pods_past_the_threshold_wait_for_the_next_pass(tmp_path: Path) -> None:
    async with gc_world(tmp_path, threshold=1) as world:
        await _first_pass_done(world)
        await world.client.create(NODES, node("n1", ready=True))
        for name in ("old", "new"):
            await world.create(PODS, pod(name, "n1"))
            await world.clock.advance(1)
            await finish(world, name, "Succeeded")
        await world.settle()
        assert await world.names() == ["new", "old"], "a pod that finishes starts no pass"
        await world.advance(GC_CHECK_PERIOD - 2 - 0.5)  # fake time 19.5: before the second pass
        assert await world.names() == ["new", "old"]
        assert world.deleted_total("terminated") == 0
        await world.advance(0.5)  # 20 s after the first pass

        async def collected() -> bool:  # the count follows the delete's answer
            return await world.names() == ["new"] and world.deleted_total("terminated") > 0

        await world.eventually(collected)
        assert world.deleted_total("terminated") == 1


async def test_an_unscheduled_terminating_pod_waits_for_the_next_pass(tmp_path: Path) -> None:
    async with gc_world(tmp_path) as world:
        await _first_pass_done(world)
        await world.create(PODS, pod("held", finalizers=("example.com/hold",)))
        await world.client.delete(PODS, "held", namespace=NS)
        await world.advance(GC_CHECK_PERIOD - 0.5)
        found = await world.get(PODS, "held")
        # The API server deleted it at once (never scheduled), and only its finalizer keeps it: Pending.
        assert found["status"]["phase"] == "Pending" and found["metadata"]["deletionTimestamp"]
        await world.advance(0.5)

        async def forced() -> bool:
            found = await world.get(PODS, "held")
            return bool(found["status"]["phase"] == "Failed" and found["metadata"]["deletionGracePeriodSeconds"] == 0)

        await world.eventually(forced)


async def test_the_quarantine_counts_from_the_pass_that_first_misses_the_node(tmp_path: Path) -> None:
    async with gc_world(tmp_path) as world:
        await _first_pass_done(world)
        await world.client.create(NODES, node("gone", ready=True))
        await world.create(PODS, pod("orphan", "gone"))
        await world.advance(5)
        await world.client.delete(NODES, "gone")

        async def seen() -> bool:
            # The pass at 20 reads the informers' caches: the delete and the pod must be there before it
            # runs, or on a loaded machine the pass at 40 is the first to miss the node (until 80).
            return world.gc.nodes.cache.get_by_name("gone") is None and bool(world.gc.pods.cache.list())

        await world.eventually(seen)
        await world.advance(15)  # the pass at 20 misses the node: quarantined until 60
        await world.advance(20)  # the pass at 40: still in quarantine
        await world.advance(19)  # 59
        found = await world.get(PODS, "orphan")
        assert not found["metadata"].get("deletionTimestamp") and found["status"]["phase"] == "Pending"
        await world.advance(1)  # the pass at 60 reads the node: 404, its pods are orphans

        async def deleted() -> bool:
            found = await world.maybe(PODS, "orphan")
            # The collector counts the delete once its answer is back, after the pod is gone.
            return found is None and world.deleted_total("orphaned") > 0

        await world.eventually(deleted)
        assert world.deleted_total("orphaned") == 1
