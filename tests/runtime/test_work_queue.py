"""WorkQueue: client-go's guarantees (util/workqueue/queue.go)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kubeloop.runtime import Metrics, QueueShutDown, WorkQueue
from kubeloop.testing import FakeClock


def labels(name: str) -> dict[str, str]:
    return {"controller": name, "name": name}


async def test_duplicate_adds_collapse_into_one_item() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert [await q.get(), await q.get()] == ["a", "b"]
    assert len(q) == 0


async def test_keys_are_handed_out_in_fifo_order() -> None:
    q: WorkQueue[int] = WorkQueue(clock=FakeClock())
    for i in range(5):
        q.add(i)
    assert [await q.get() for _ in range(5)] == [0, 1, 2, 3, 4]


async def test_an_order_hands_out_the_lowest_key_first_and_fifo_among_equals() -> None:
    # The scheduler's activeQ: -priority as the order, arrival among equal priorities.
    priority = {"low-1": 0, "high-1": 10, "low-2": 0, "high-2": 10, "mid": 5}
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.order = lambda key: -priority[key]
    for key in priority:
        q.add(key)
    assert [await q.get() for _ in priority] == ["high-1", "high-2", "mid", "low-1", "low-2"]


async def test_a_key_being_processed_is_not_handed_to_a_second_worker() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    first = await q.get()
    q.add("a")  # an event arrives while "a" is being processed
    assert len(q) == 0
    second_worker = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not second_worker.done()
    q.done(first)
    assert await second_worker == "a"


async def test_many_adds_while_processing_collapse_into_exactly_one_more_run() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    key = await q.get()
    for _ in range(10):
        q.add("a")
    assert q.depth == 1
    q.done(key)
    assert len(q) == 1
    again = await q.get()
    q.done(again)
    assert len(q) == 0 and q.depth == 0


async def test_done_without_readd_does_not_requeue() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    q.done(await q.get())
    assert len(q) == 0


async def test_concurrent_workers_never_hold_the_same_key() -> None:
    q: WorkQueue[int] = WorkQueue(clock=FakeClock())
    held: set[int] = set()
    overlaps: list[int] = []
    runs = 0

    async def worker() -> None:
        nonlocal runs
        while True:
            try:
                key = await q.get()
            except QueueShutDown:
                return
            if key in held:
                overlaps.append(key)
            held.add(key)
            runs += 1
            await asyncio.sleep(0)
            q.add(key % 3)  # keep re-adding keys that other workers may hold
            await asyncio.sleep(0)
            held.discard(key)
            q.done(key)

    for i in range(3):
        q.add(i)
    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for _ in range(50):
        await asyncio.sleep(0)
    q.shutdown()
    await asyncio.gather(*workers)
    assert overlaps == []
    assert runs > 3


async def test_shutdown_still_hands_out_waiting_keys_then_raises() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    q.shutdown()
    q.add("b")  # ignored after shutdown
    assert await q.get() == "a"
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_shutdown_wakes_idle_workers() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    waiter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shutdown()
    with pytest.raises(QueueShutDown):
        await waiter


async def test_shutdown_with_drain_waits_for_keys_in_flight() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    key = await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain())
    await asyncio.sleep(0)
    assert not drain.done()
    q.done(key)
    await drain


async def test_a_cancelled_waiter_passes_its_wakeup_to_another_worker() -> None:
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    w1 = asyncio.create_task(q.get())
    w2 = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")  # wakes w1 ...
    w1.cancel()  # ... which is cancelled before it runs
    assert await w2 == "a"
    with pytest.raises(asyncio.CancelledError):
        await w1


async def test_depth_above_the_bound_warns_once_and_counts_every_excess_add(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = Metrics()
    q: WorkQueue[int] = WorkQueue(name="busy", clock=FakeClock(), metrics=metrics, max_depth=2)
    with caplog.at_level(logging.WARNING, logger="kubeloop.runtime.queue"):
        for i in range(5):
            q.add(i)
    assert len(q) == 5  # nothing is dropped
    warnings = [r for r in caplog.records if "above its bound" in r.getMessage()]
    assert len(warnings) == 1
    assert metrics.sample("workqueue_depth_limit_exceeded_total", labels("busy")) == 3


async def test_the_depth_warning_rearms_only_once_the_backlog_has_halved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    q: WorkQueue[int] = WorkQueue(name="busy", clock=FakeClock(), max_depth=4)

    def warnings() -> int:
        return len([r for r in caplog.records if "above its bound" in r.getMessage()])

    async def drain_to(depth: int) -> None:
        while q.depth > depth:
            q.done(await q.get())

    with caplog.at_level(logging.WARNING, logger="kubeloop.runtime.queue"):
        for i in range(5):
            q.add(i)
        assert warnings() == 1
        await drain_to(2)
        q.add(10)  # depth 3: above half the bound, still the same backlog
        for i in range(11, 13):
            q.add(i)
        assert q.depth == 5 and warnings() == 1
        await drain_to(1)
        q.add(20)  # depth 2, half the bound: the backlog has cleared
        for i in range(21, 24):
            q.add(i)
        assert q.depth == 5 and warnings() == 2


async def test_queue_metrics_follow_client_go_names_and_meaning() -> None:
    clock = FakeClock()
    metrics = Metrics()
    q: WorkQueue[str] = WorkQueue(name="w", clock=clock, metrics=metrics)
    q.add("a")
    q.add("a")  # deduplicated: not counted
    q.add("b")
    assert metrics.sample("workqueue_adds_total", labels("w")) == 2
    assert metrics.sample("workqueue_depth", labels("w")) == 2
    await clock.advance(0.25)
    key = await q.get()
    assert metrics.sample("workqueue_depth", labels("w")) == 1
    assert metrics.sample("workqueue_queue_duration_seconds_sum", labels("w")) == pytest.approx(0.25)
    await clock.advance(1.5)
    assert metrics.sample("workqueue_unfinished_work_seconds", labels("w")) == pytest.approx(1.5)
    assert metrics.sample("workqueue_longest_running_processor_seconds", labels("w")) == pytest.approx(1.5)
    q.done(key)
    assert metrics.sample("workqueue_work_duration_seconds_count", labels("w")) == 1
    assert metrics.sample("workqueue_work_duration_seconds_sum", labels("w")) == pytest.approx(1.5)
    assert metrics.sample("workqueue_unfinished_work_seconds", labels("w")) == 0
    text = metrics.exposition().decode()
    assert 'workqueue_adds_total{controller="w",name="w"} 2.0' in text


async def test_two_queues_on_separate_metrics_do_not_collide() -> None:
    a: WorkQueue[str] = WorkQueue(name="same", clock=FakeClock())
    b: WorkQueue[str] = WorkQueue(name="same", clock=FakeClock())
    a.add("x")
    b.add("y")
    assert len(a) == len(b) == 1
