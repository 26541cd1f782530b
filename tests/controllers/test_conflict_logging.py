"""A reconcile that meets a 409 Conflict logs one error line, not a traceback; a reconciler's bug logs an
error with its traceback.

Upstream logs both at error level: controller-runtime's reconcileHandler requeues with rate limiting and
logs ``log.Error(err, "Reconciler error")`` with the error's text (pkg/internal/controller/controller.go);
most kube-controller-manager controllers hand the error to utilruntime.HandleError (klog's error level), one
line. The Deployment controller is the exception: its handleErr (deployment_controller.go) logs "Error
syncing deployment" at V(2) until maxRetries (15) requeues, so a routine 409 is a debug line there. The
backoff is the same for either kind of error.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import Conflict
from kubeloop.runtime import Controller, ItemExponential, Request
from kubeloop.testing import FakeClock, Write

from ._workload_world import DEPLOYMENTS, NS, open_world, template

LOGGER = "kubeloop.runtime.controller"


def deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template()}}


def reconcile_failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and "failed" in r.getMessage()]


async def test_the_deployment_controller_logs_a_real_409_as_one_debug_line_and_retries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    raced: list[Write] = []

    async def race(write: Write) -> None:
        # Before the controller's first Deployment status write, another writer changes the Deployment:
        # the controller's update carries a stale resourceVersion and the server answers 409.
        if write.verb == "update" and write.resource == "deployments" and not raced:
            raced.append(write)
            await world.client.patch(DEPLOYMENTS, write.name, {"metadata": {"labels": {"touched": "y"}}}, namespace=NS)

    caplog.set_level(logging.DEBUG, logger=LOGGER)
    async with open_world(tmp_path, "deployment", "replicaset", before_write=race) as world:
        world.start_kubelet()
        await world.client.create(DEPLOYMENTS, deployment())

        async def converged() -> bool:
            d = await world.get(DEPLOYMENTS, "web")
            assert (d.get("status") or {}).get("availableReplicas") == 2, d
            assert d["metadata"]["generation"] == d["status"]["observedGeneration"]
            return True

        await world.eventually(converged, step=0.2, tries=1500)
    assert raced and any(w.outcome == "error:409" for w in world.ctl.writes)
    failures = reconcile_failures(caplog)
    assert failures, "the 409 reached the reconcile loop"
    conflict = failures[0]
    message = conflict.getMessage()
    # handleErr below maxRetries: logger.V(2).Info("Error syncing deployment", ...), not an error line.
    assert conflict.levelno == logging.DEBUG and conflict.exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == LOGGER]
    assert "\n" not in message
    assert message == ("controller 'deployment': reconcile of ns/web failed, retrying: 409 Conflict: Operation cannot be "
                       'fulfilled on deployments.apps "web": the object has been modified; please apply your changes '
                       "to the latest version and try again")
    assert "Traceback" not in caplog.text
    conflicts = [r for r in caplog.records if "the object has been modified" in r.getMessage()]
    assert {r.name for r in conflicts} == {LOGGER}, "only the reconcile loop reports it"
    assert len(conflicts) <= sum(w.outcome == "error:409" for w in world.ctl.writes), "one line per failed attempt"


async def test_an_api_error_and_a_bug_back_off_alike_and_only_the_bug_logs_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    failures: list[Exception] = [Conflict('Operation cannot be fulfilled on configmaps "a": the object has been '
                                          "modified; please apply your changes to the latest version and try again"),
                                 KeyError("spec")]

    async def reconcile(req: Request) -> None:
        raise failures.pop(0)

    caplog.set_level(logging.WARNING, logger=LOGGER)
    c = Controller("c", reconcile, clock=clock, rate_limiter=ItemExponential(0.005, 1000))
    a = Request("ns", "a")
    c.enqueue(a)
    await c.process_next()
    assert c.queue.num_requeues(a) == 1 and c.queue.waiting == 1
    await clock.advance(0.005)
    await c.process_next()
    assert c.queue.num_requeues(a) == 2 and c.queue.waiting == 1  # the same backoff for both
    api, bug = reconcile_failures(caplog)
    assert api.getMessage() == ("controller 'c': reconcile of ns/a failed: 409 Conflict: Operation cannot be fulfilled "
                                'on configmaps "a": the object has been modified; please apply your changes to the '
                                "latest version and try again")
    assert api.exc_info is None and api.levelno == logging.ERROR
    assert bug.levelno == logging.ERROR
    assert bug.getMessage() == "controller 'c': reconcile of ns/a failed: KeyError('spec')"
    assert bug.exc_info is not None and bug.exc_info[1] is not None
    assert "Traceback" in caplog.text and "raise failures.pop(0)" in caplog.text
    c.stop()
