"""On shutdown the manager asks every leader runnable that can stop (``Stoppable``) to stop first;
event names stay unique across recorders at one instant."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kubeloop.client import Client
from kubeloop.runtime import EventRecorder, Manager, Stoppable
from kubeloop.testing import FakeClock, InProcessCluster, resource


class Worker:
    """A runnable outside the runtime's Controller class (like the garbage collector) with stop()."""

    def __init__(self) -> None:
        self.stopping = asyncio.Event()
        self.finished_cleanly = False

    async def run(self) -> None:
        await self.stopping.wait()
        self.finished_cleanly = True

    def stop(self) -> None:
        self.stopping.set()


async def test_a_stoppable_runnable_is_stopped_gracefully_not_cancelled(tmp_path: Path) -> None:
    clock = FakeClock()
    async with InProcessCluster(tmp_path, clock=clock) as cluster:
        # A fake clock that never advances: without stop() the graceful period would never end.
        manager = Manager(cluster.client, clock=clock, graceful_shutdown_timeout=3600)
        worker = Worker()
        assert isinstance(worker, Stoppable)
        manager.add(worker)
        task = asyncio.create_task(manager.run())
        for _ in range(20):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert worker.finished_cleanly


async def test_two_recorders_at_one_instant_name_their_events_differently(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path) as cluster:
        pods = resource("", "Pod")
        pod = await cluster.client.create(
            pods, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        )
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        other: Client = cluster.new_client(Client)
        scheduler = EventRecorder(cluster.client, component="default-scheduler", clock=cluster.clock)
        kubelet = EventRecorder(other, component="kubelet", clock=cluster.clock)
        first = await scheduler.event(pod, "Normal", "Scheduled", "assigned")
        second = await kubelet.event(pod, "Normal", "Started", "started")
        assert first is not None and second is not None
        assert first["metadata"]["name"] != second["metadata"]["name"]


def test_event_names_are_unique_across_writers_at_one_instant() -> None:
    # The runtime's EventRecorder and the controllers' EventSink both name Events with event_name:
    # at one fake-clock instant, about objects of the same name, the names must still differ.
    from kubeloop.runtime import event_name

    names = {event_name("web", 1_700_000_000.0) for _ in range(100)}
    assert len(names) == 100
