"""Rate limiters as small strategies (client-go default_rate_limiters.go)."""

from __future__ import annotations

import pytest

from kubeloop.runtime import (
    ItemExponential,
    ItemFastSlow,
    MaxOf,
    TokenBucket,
    WithMaxWait,
    default_controller_rate_limiter,
)
from kubeloop.testing import FakeClock


def test_item_exponential_doubles_from_5ms_and_caps_at_1000s() -> None:
    limiter = ItemExponential(0.005, 1000.0)
    delays = [limiter.when("k") for _ in range(21)]
    assert delays[:4] == pytest.approx([0.005, 0.010, 0.020, 0.040])
    assert delays[17] == pytest.approx(655.36)  # the 18th call
    assert delays[18:] == [1000.0, 1000.0, 1000.0]  # from the 19th
    assert limiter.num_requeues("k") == 21


def test_item_exponential_keeps_state_per_key() -> None:
    limiter = ItemExponential(0.005, 1000.0)
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == pytest.approx(0.005)
    assert limiter.num_requeues("a") == 2


def test_forget_restarts_backoff_at_the_base_delay() -> None:
    limiter = ItemExponential(0.005, 1000.0)
    for _ in range(5):
        limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_item_exponential_survives_huge_failure_counts() -> None:
    limiter = ItemExponential(0.005, 1000.0)
    for _ in range(2000):
        delay = limiter.when("k")
    assert delay == 1000.0


async def test_token_bucket_allows_a_burst_then_paces_at_its_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10.0, 100, clock=clock)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    assert bucket.when("x") == pytest.approx(0.1)
    assert bucket.when("y") == pytest.approx(0.2)
    await clock.advance(1.0)  # refills 10 tokens, paying the debt of 2
    assert bucket.when("z") == pytest.approx(0.0)
    assert bucket.num_requeues("x") == 0


async def test_token_bucket_never_holds_more_than_its_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1.0, 2, clock=clock)
    await clock.advance(100)
    assert [bucket.when(i) for i in range(3)] == pytest.approx([0.0, 0.0, 1.0])


def test_max_of_asks_every_member_and_returns_the_longest_delay() -> None:
    a = ItemExponential(0.001, 1000.0)
    b = ItemFastSlow(0.5, 10.0, 2)
    limiter = MaxOf(a, b)
    assert [limiter.when("k") for _ in range(3)] == pytest.approx([0.5, 0.5, 10.0])
    assert a.num_requeues("k") == 3 and b.num_requeues("k") == 3
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0


def test_fast_slow_switches_after_the_fast_attempts() -> None:
    limiter = ItemFastSlow(0.1, 5.0, 3)
    assert [limiter.when("k") for _ in range(5)] == [0.1, 0.1, 0.1, 5.0, 5.0]


def test_with_max_wait_caps_another_limiter() -> None:
    limiter = WithMaxWait(ItemExponential(1.0, 1000.0), 3.0)
    assert [limiter.when("k") for _ in range(4)] == [1.0, 2.0, 3.0, 3.0]


async def test_default_controller_rate_limiter_is_the_max_of_exponential_and_bucket() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    assert limiter.when("k") == pytest.approx(0.005)
    assert limiter.when("k") == pytest.approx(0.010)
    for i in range(98):
        limiter.when(i)
    assert limiter.when("other") == pytest.approx(0.1)  # the 101st token in a burst of 100
