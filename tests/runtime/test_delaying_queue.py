"""DelayingQueue and RateLimitingQueue (client-go delaying_queue.go, rate_limiting_queue.go), on fake time."""

from __future__ import annotations

import asyncio

from kubeloop.runtime import DelayingQueue, ItemExponential, Metrics, RateLimitingQueue
from kubeloop.testing import FakeClock


async def test_add_after_makes_the_key_ready_only_when_its_time_comes() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 0.050)
    await asyncio.sleep(0)
    assert len(q) == 0 and q.waiting == 1
    await clock.advance(0.049)
    assert len(q) == 0
    await clock.advance(0.001)
    assert len(q) == 1 and q.waiting == 0
    assert await q.get() == "a"
    q.shutdown()


async def test_add_after_with_no_delay_adds_at_once() -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=FakeClock())
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert len(q) == 2


async def test_a_later_add_after_never_postpones_an_earlier_one() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 0.010)
    q.add_after("a", 5.0)
    await clock.advance(0.010)
    assert len(q) == 1
    q.shutdown()


async def test_an_earlier_add_after_moves_the_key_forward() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 5.0)
    await asyncio.sleep(0)
    q.add_after("a", 0.010)
    await clock.advance(0.010)
    assert len(q) == 1
    await clock.advance(10)
    assert q.depth == 1  # the superseded later time adds nothing more
    q.shutdown()


async def test_delayed_keys_become_ready_in_time_order() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("late", 0.3)
    q.add_after("early", 0.1)
    q.add_after("middle", 0.2)
    await clock.advance(1)
    assert [await q.get() for _ in range(3)] == ["early", "middle", "late"]
    q.shutdown()


async def test_a_delayed_key_that_is_already_queued_stays_one_item() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add("a")
    q.add_after("a", 0.1)
    await clock.advance(0.1)
    assert len(q) == 1
    q.shutdown()


async def test_every_add_after_counts_as_a_retry() -> None:
    metrics = Metrics()
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(name="d", clock=clock, metrics=metrics)
    q.add_after("a", 0)
    q.add_after("b", 1)
    q.add_after("b", 2)
    assert metrics.sample("workqueue_retries_total", {"controller": "d", "name": "d"}) == 3
    q.shutdown()


async def test_shutdown_drops_waiting_keys_and_leaves_no_timer_behind() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 1)
    await asyncio.sleep(0)
    await q.shutdown_with_drain()
    q.add_after("b", 1)
    await clock.advance(2)
    assert len(q) == 0 and q.waiting == 0


async def test_rate_limited_adds_back_off_per_key_until_forgotten() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=clock, rate_limiter=ItemExponential(0.005, 1000))
    q.add_rate_limited("a")  # 5 ms
    q.add_rate_limited("b")  # 5 ms
    await clock.advance(0.005)
    assert len(q) == 2
    q.done(await q.get())
    q.done(await q.get())
    q.add_rate_limited("a")  # second failure of "a": 10 ms
    await clock.advance(0.005)
    assert len(q) == 0
    await clock.advance(0.005)
    assert len(q) == 1
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert q.num_requeues("a") == 0
    assert len(q) == 1  # forget resets the backoff only; the queue is untouched
    q.shutdown()


async def test_the_default_rate_limiter_is_per_key_exponential_and_a_global_bucket() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[int] = RateLimitingQueue(clock=clock)
    for i in range(100):  # the bucket's burst: all at the per-key 5 ms
        q.add_rate_limited(i)
    q.add_rate_limited(100)  # the 101st waits for a token: 100 ms at 10 per second
    await clock.advance(0.005)
    assert len(q) == 100
    await clock.advance(0.094)
    assert len(q) == 100
    await clock.advance(0.001)
    assert len(q) == 101
    q.shutdown()
