"""A queue's and a controller's labelled series are created on first use or first collection (start-up round 8).

Building ``kubeloop up``'s thirty-odd controllers spent most of its CPU making Prometheus children (a
histogram child makes a value and a label string per bucket) that nothing reads before the first
scrape. Whatever collects the registry must still see every series, pre-initialised, as if made then.
"""

from __future__ import annotations

import asyncio

from prometheus_client import generate_latest

from kubeloop.runtime import Controller, Metrics, Request
from kubeloop.testing import FakeClock


async def _noop(request: Request) -> None:
    return None


def _controller(metrics: Metrics, name: str = "deployment", workers: int = 3) -> Controller:
    return Controller(name, _noop, clock=FakeClock(), metrics=metrics, max_concurrent_reconciles=workers)


async def test_building_a_controller_creates_no_series_until_something_collects_or_uses_them() -> None:
    metrics = Metrics()
    _controller(metrics)
    assert metrics.pending.pending  # made later
    assert metrics.sample("controller_runtime_reconcile_total", {"controller": "deployment", "result": "error"}) == 0
    assert not metrics.pending.pending  # the collection made them


async def test_a_scrape_of_the_registry_itself_sees_every_series_pre_initialised() -> None:
    metrics = Metrics()
    _controller(metrics)
    _controller(metrics, "replicaset", workers=5)
    text = generate_latest(metrics.registry).decode()  # not through Metrics: the registry's own collection
    for name in ("deployment", "replicaset"):
        for result in ("success", "error", "requeue", "requeue_after"):
            assert f'controller_runtime_reconcile_total{{controller="{name}",result="{result}"}} 0.0' in text
        assert f'controller_runtime_active_workers{{controller="{name}"}} 0.0' in text
        assert f'controller_runtime_reconcile_errors_total{{controller="{name}"}} 0.0' in text
        assert f'controller_runtime_reconcile_time_seconds_count{{controller="{name}"}} 0.0' in text
        assert f'workqueue_depth{{controller="{name}",name="{name}"}} 0.0' in text
        assert f'workqueue_adds_total{{controller="{name}",name="{name}"}} 0.0' in text
        assert f'workqueue_unfinished_work_seconds{{controller="{name}",name="{name}"}} 0.0' in text
        assert f'workqueue_longest_running_processor_seconds{{controller="{name}",name="{name}"}} 0.0' in text
    assert 'controller_runtime_max_concurrent_reconciles{controller="deployment"} 3.0' in text
    assert 'controller_runtime_max_concurrent_reconciles{controller="replicaset"} 5.0' in text


async def test_use_before_any_collection_counts_from_the_first_event() -> None:
    metrics = Metrics()
    controller = _controller(metrics)
    controller.enqueue(Request("ns", "a"))
    controller.enqueue(Request("ns", "b"))
    assert await controller.process_next()
    await asyncio.sleep(0)
    labels = {"controller": "deployment", "name": "deployment"}
    assert metrics.sample("workqueue_adds_total", labels) == 2
    assert metrics.sample("workqueue_depth", labels) == 1
    assert metrics.sample("controller_runtime_reconcile_total", {"controller": "deployment", "result": "success"}) == 1
    assert metrics.sample("controller_runtime_reconcile_total", {"controller": "deployment", "result": "error"}) == 0
    assert metrics.sample("controller_runtime_active_workers", {"controller": "deployment"}) == 0
