"""The simulated kubelet's pod timeline: a pure function of the pod, its node and the time.

A pod's simulated life is computed, not remembered: :func:`simulate_pod` derives the status the pod
should show at ``now`` from what the status already records (``startTime``, the moment the kubelet
first saw the pod) and the pod's fault profile, so the simulation is level-based and survives
restarts of the controller. It also returns when the status will next change (``wake_at``), so the
controller sleeps exactly until then on the injected clock.

Timeline: first seen at ``startTime`` -> containers ``ContainerCreating`` (phase Pending) for the
start delay -> running (phase Running) -> ready after the readiness delay. Profiles, chosen by the
annotation ``kubeloop.dev/fault`` (parameters ``kubeloop.dev/fault-after-seconds``,
``kubeloop.dev/exit-code``; delays ``kubeloop.dev/start-delay-seconds``,
``kubeloop.dev/ready-delay-seconds``):

==============  ==============================================================================
profile         behaviour
==============  ==============================================================================
(none)          runs forever, ready after the readiness delay
``crash-loop``  each run lasts ``fault-after-seconds`` (default 0) then exits with ``exit-code``
                (default 1); never ready; restarts with CrashLoopBackOff 10 s doubling to 5 min
``never-ready`` runs forever, never ready
``slow-start``  ``ContainerCreating`` for ``fault-after-seconds`` (default 30) before running
``fail-after``  ready, then exits with ``exit-code`` (default 1) after ``fault-after-seconds``
                (default 10); Never -> Failed, otherwise restarts as a crash loop
``succeed-after`` exits 0 after ``fault-after-seconds`` (default 0); Never/OnFailure -> Succeeded
==============  ==============================================================================

Conditions follow the kubelet: ``PodReadyToStartContainers``, ``Initialized``, ``Ready``,
``ContainersReady`` (``lastTransitionTime`` moves only when a status changes); others (such as
``PodScheduled`` and ``DisruptionTarget``) are kept as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.api import copy_json, format_time, parse_time

__all__ = ["Behaviour", "SimulatedPod", "behaviour_of", "go_duration", "simulate_pod"]

FAULT = "kubeloop.dev/fault"
FAULT_AFTER = "kubeloop.dev/fault-after-seconds"
EXIT_CODE = "kubeloop.dev/exit-code"
START_DELAY = "kubeloop.dev/start-delay-seconds"
READY_DELAY = "kubeloop.dev/ready-delay-seconds"
_KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
_MAX_BACKOFF = 300.0
_FIRST_BACKOFF = 10.0


@dataclass(frozen=True, slots=True)
class Behaviour:
    start_delay: float
    ready_delay: float
    never_ready: bool = False
    run_for: float | None = None  # None: the containers never exit
    exit_code: int = 0


@dataclass(frozen=True, slots=True)
class SimulatedPod:
    status: dict[str, Any]
    wake_at: float | None  # when the status changes next (absolute), if ever
    delete: bool = False  # the pod has stopped: remove it (final delete, grace 0)


def _number(annotations: Mapping[str, str], key: str, default: float) -> float:
    try:
        return max(0.0, float(annotations[key]))
    except (KeyError, ValueError):
        return default


def behaviour_of(pod: Mapping[str, Any], *, start_delay: float, ready_delay: float) -> Behaviour:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    fault = str(annotations.get(FAULT) or "")
    start = _number(annotations, START_DELAY, start_delay)
    ready = _number(annotations, READY_DELAY, ready_delay)
    try:
        code = int(annotations.get(EXIT_CODE, "1"))
    except ValueError:
        code = 1
    if fault == "crash-loop":
        return Behaviour(start, ready, never_ready=True, run_for=_number(annotations, FAULT_AFTER, 0.0),
                         exit_code=code or 1)
    if fault == "never-ready":
        return Behaviour(start, ready, never_ready=True)
    if fault == "slow-start":
        return Behaviour(_number(annotations, FAULT_AFTER, 30.0), ready)
    if fault == "fail-after":
        return Behaviour(start, ready, run_for=_number(annotations, FAULT_AFTER, 10.0), exit_code=code or 1)
    if fault in ("succeed-after", "complete"):
        return Behaviour(start, ready, run_for=_number(annotations, FAULT_AFTER, 0.0), exit_code=0)
    return Behaviour(start, ready)


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` for a non-negative number of seconds (``0s``, ``1.5s``, ``2m0s``, ``250ms``)."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        millis = seconds * 1000
        return f"{millis:g}ms" if millis >= 1 else f"{seconds * 1e6:g}µs"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{round(secs, 9):g}s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    return f"{int(minutes)}m{text}" if minutes else text


@dataclass(frozen=True, slots=True)
class _Run:
    """Where the containers are at ``now``: which run, its state and what happened before."""

    index: int
    state: str  # creating | running | backoff | exited
    started: float = 0.0
    finished: float = 0.0
    backoff: float = 0.0
    previous: tuple[float, float] | None = None  # (started, finished) of the last exited run
    wake_at: float | None = None


def _timeline(b: Behaviour, t0: float, now: float, restart: bool) -> _Run:
    start = t0 + b.start_delay
    if now < start:
        return _Run(0, "creating", wake_at=start)
    index, previous = 0, None
    while True:
        if b.run_for is None:
            ready_at = start + b.ready_delay
            return _Run(index, "running", start, previous=previous,
                        wake_at=ready_at if not b.never_ready and now < ready_at else None)
        end = start + b.run_for
        if now < end:
            ready_at = start + b.ready_delay
            wake = ready_at if not b.never_ready and now < ready_at < end else end
            return _Run(index, "running", start, previous=previous, wake_at=wake)
        if not restart:
            return _Run(index, "exited", start, end, previous=previous)
        backoff = min(_FIRST_BACKOFF * 2**index, _MAX_BACKOFF)
        if now < end + backoff:
            return _Run(index, "backoff", start, end, backoff=backoff, previous=(start, end), wake_at=end + backoff)
        previous = (start, end)
        start, index = end + backoff, index + 1


def _container_id(uid: str, name: str, index: int) -> str:
    return "kubeloop://" + hashlib.sha1(f"{uid}/{name}/{index}".encode()).hexdigest()[:16]


def _terminated(code: int, started: float, finished: float, cid: str) -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                           "startedAt": format_time(started), "finishedAt": format_time(finished), "containerID": cid}}


def simulate_pod(pod: Mapping[str, Any], now: float, *, node_ready: bool, host_ip: str, pod_ip: str,
                 start_delay: float = 0.0, ready_delay: float = 0.0,
                 termination_delay: float | None = None) -> SimulatedPod:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    old = pod.get("status") or {}
    status = copy_json(dict(old))
    t0 = parse_time(old["startTime"]) if old.get("startTime") else now
    b = behaviour_of(pod, start_delay=start_delay, ready_delay=ready_delay)
    policy = spec.get("restartPolicy") or "Always"
    restart = policy == "Always" or (policy == "OnFailure" and b.exit_code != 0)
    run = _timeline(b, t0, now, restart)
    uid = str(meta.get("uid") or "")
    deleting = bool(meta.get("deletionTimestamp"))
    delete_at = 0.0
    if deleting:
        delete_at = parse_time(meta["deletionTimestamp"])
        if termination_delay is not None:
            requested = delete_at - float(meta.get("deletionGracePeriodSeconds") or 0)
            delete_at = min(delete_at, requested + termination_delay)

    containers = [c for c in spec.get("containers") or () if isinstance(c, dict)]
    statuses = []
    for c in containers:
        name = str(c.get("name") or "")
        cid = _container_id(uid, name, run.index)
        entry: dict[str, Any] = {"name": name, "image": c.get("image") or "", "imageID": "",
                                 "restartCount": run.index, "started": False, "ready": False,
                                 "lastState": {}}
        if run.previous is not None:
            previous_index = run.index if run.state == "backoff" else run.index - 1
            entry["lastState"] = _terminated(b.exit_code, *run.previous, _container_id(uid, name, previous_index))
        if deleting:
            finished = min(now, delete_at)
            entry["state"] = _terminated(0, run.started or finished, finished, cid)
            entry["containerID"] = cid
        elif run.state == "creating":
            entry["state"] = {"waiting": {"reason": "ContainerCreating"}}
        elif run.state == "running":
            entry.update(containerID=cid, started=True, state={"running": {"startedAt": format_time(run.started)}})
            entry["ready"] = node_ready and not b.never_ready and now >= run.started + b.ready_delay
        elif run.state == "backoff":
            entry["restartCount"] = run.index + 1
            entry["state"] = {"waiting": {"reason": "CrashLoopBackOff", "message": (
                f"back-off {go_duration(run.backoff)} restarting failed container={name} "
                f"pod={meta.get('name')}_{meta.get('namespace')}({uid})")}}
        else:
            entry.update(containerID=cid, state=_terminated(b.exit_code, run.started, run.finished, cid))
        statuses.append(entry)

    if run.state == "exited" and not deleting:
        phase = "Succeeded" if b.exit_code == 0 else "Failed"
    elif run.state == "creating" and not deleting:
        phase = "Pending"
    else:
        phase = str(old.get("phase")) if deleting and old.get("phase") in ("Running", "Pending") else "Running"
    all_ready = bool(statuses) and all(s["ready"] for s in statuses)
    unready = [s["name"] for s in statuses if not s["ready"]]
    message = f"containers with unready status: [{' '.join(unready)}]"
    terminal = phase in ("Succeeded", "Failed")
    wanted = {
        "PodReadyToStartContainers": ("False" if terminal or deleting else "True", "", ""),
        "Initialized": ("True", "PodCompleted" if terminal else "", ""),
        "Ready": ("True", "", "") if all_ready else ("False", "PodCompleted" if terminal else "ContainersNotReady",
                                                      "" if terminal else message),
        "ContainersReady": ("True", "", "") if all_ready else (
            "False", "PodCompleted" if terminal else "ContainersNotReady", "" if terminal else message),
    }
    status["conditions"] = _conditions(old.get("conditions") or [], wanted, now)
    init = [c for c in spec.get("initContainers") or () if isinstance(c, dict)]
    if init:
        status["initContainerStatuses"] = [
            {"name": c.get("name"), "image": c.get("image") or "", "imageID": "", "restartCount": 0,
             "started": False, "ready": True, "lastState": {},
             "state": _terminated(0, t0, t0, f"kubeloop://{uid[:8]}-init-{c.get('name')}")} for c in init]
    status.update(phase=phase, hostIP=host_ip, hostIPs=[{"ip": host_ip}] if host_ip else [],
                  startTime=format_time(t0), containerStatuses=statuses)
    if ephemeral := _ephemeral_statuses(spec, old, uid, now, delete_at if deleting else None):
        status["ephemeralContainerStatuses"] = ephemeral
    if pod_ip:
        status.update(podIP=pod_ip, podIPs=[{"ip": pod_ip}])
    if deleting:
        return SimulatedPod(status, delete_at, delete=now >= delete_at)
    return SimulatedPod(status, run.wake_at)


def _ephemeral_statuses(spec: Mapping[str, Any], old: Mapping[str, Any], uid: str, now: float,
                        delete_at: float | None) -> list[dict[str, Any]]:
    """``status.ephemeralContainerStatuses``: an ephemeral container (added through the ephemeralcontainers
    subresource) runs from the moment the kubelet first sees it, is never restarted, has no probes (never
    ready; the kubelet's probe manager sets ``started`` for regular and init containers only), and stops with
    the pod."""
    before = {s.get("name"): s for s in old.get("ephemeralContainerStatuses") or () if isinstance(s, dict)}
    out = []
    for c in spec.get("ephemeralContainers") or ():
        if not isinstance(c, dict):
            continue
        name = str(c.get("name") or "")
        cid = _container_id(uid, name, 0)
        running = ((before.get(name) or {}).get("state") or {}).get("running") or {}
        started = parse_time(running["startedAt"]) if running.get("startedAt") else now
        entry: dict[str, Any] = {"name": name, "image": c.get("image") or "", "imageID": "", "containerID": cid,
                                 "restartCount": 0, "ready": False, "lastState": {}}
        if delete_at is not None:
            finished = min(now, delete_at)
            entry["state"] = _terminated(0, min(started, finished), finished, cid)
        else:
            entry["state"] = {"running": {"startedAt": format_time(started)}}
        out.append(entry)
    return out


def _conditions(old: list[dict[str, Any]], wanted: Mapping[str, tuple[str, str, str]], now: float) -> list[Any]:
    existing = {c.get("type"): c for c in old}
    out = []
    for type_ in _KUBELET_CONDITIONS:
        status, reason, message = wanted[type_]
        before = existing.get(type_) or {}
        condition: dict[str, Any] = {"type": type_, "status": status, "lastProbeTime": None,
                                     "lastTransitionTime": before.get("lastTransitionTime") if before.get("status") ==
                                     status and before.get("lastTransitionTime") else format_time(now)}
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        out.append(condition)
    out.extend(c for c in old if c.get("type") not in _KUBELET_CONDITIONS)
    return out
