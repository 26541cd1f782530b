"""Taint-based eviction bookkeeping for pods on any node: when each pod is to be deleted.

Mirrors kube-controller-manager's ``taint-eviction-controller`` (``pkg/controller/tainteviction``,
``processPodOnNode`` and its ``TimedWorkerQueue``). :class:`TaintEvictions` keeps one piece of
scheduled work per pod and answers, for a pod and its node's NoExecute taints, when the pod is to be
deleted. It is a single state machine; the taint-eviction controller
(:mod:`._taint_eviction_controller`) calls it and does the deleting.

- A pod is (re)considered only when what upstream watches changes: the first time it is seen on a
  tainted node, or when the node's NoExecute taints or the pod's tolerations change. Other pod or
  node updates leave its scheduled work as it is.
- No NoExecute taint: the work is cancelled. A taint the pod does not tolerate: the work is replaced
  by one due at once. Tolerated with no ``tolerationSeconds`` (for ever): cancelled. Otherwise work
  is scheduled ``min(tolerationSeconds)`` after *now*, the moment the pod is considered, not the
  taint's ``timeAdded`` (upstream's queue is in memory: after a controller restart, or a taint
  removed and added again, the full toleration runs again); work already scheduled is kept with its
  first deadline while the taints change (the not-ready taint swapped for the unreachable one).
- Work that has fired stays recorded, so the pod is not deleted again, until a cancel clears it.
- Every cancel of work not yet fired (taints gone, tolerated for ever, or the pod deleted, which the
  caller reports with :meth:`TaintEvictions.forget`) records a ``TaintManagerEviction`` Event
  "Cancelling deletion of Pod <ns>/<name>".

Upstream compares deadlines with ``time.Before`` on a clock that always moves between two passes;
on a fake clock two passes often share one instant, so work scheduled at that same instant is kept
rather than cancelled and scheduled again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.api import Clock
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._scheduler_fit import tolerates

__all__ = ["TaintEvictions", "no_execute_taints", "tolerates_all", "toleration_time"]

_Key = tuple[str, str]


def no_execute_taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [t for t in (node.get("spec") or {}).get("taints") or () if isinstance(t, dict)
            and t.get("effect") == "NoExecute"]


def _tolerations(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [t for t in (pod.get("spec") or {}).get("tolerations") or () if isinstance(t, dict)]


def toleration_time(tolerations: list[dict[str, Any]], taints: list[dict[str, Any]]) -> float | None:
    """Seconds a pod that tolerates every one of ``taints`` may stay; None: for ever.

    ``GetMatchingTolerations`` uses, per taint, the first toleration that tolerates it;
    ``getMinTolerationTime`` takes the shortest ``tolerationSeconds`` among those (0 or less
    meaning 0), none at all meaning for ever."""
    shortest: float | None = None
    for taint in taints:
        used = next((t for t in tolerations if tolerates([t], taint)), None)
        seconds = (used or {}).get("tolerationSeconds")
        if seconds is not None:
            value = max(0.0, float(seconds))
            shortest = value if shortest is None else min(shortest, value)
    return shortest


def tolerates_all(tolerations: list[dict[str, Any]], taints: list[dict[str, Any]]) -> bool:
    return all(tolerates(tolerations, taint) for taint in taints)


@dataclass(slots=True)
class _Work:
    uid: str
    created_at: float
    fire_at: float
    fired: bool
    # What the pod was last considered with: its node's NoExecute taints and its tolerations.
    taints: list[dict[str, Any]]
    tolerations: list[dict[str, Any]]


class TaintEvictions:
    """Scheduled taint evictions, per pod (namespace, name)."""

    def __init__(self, events: EventSink, clock: Clock) -> None:
        self.events = events
        self.clock = clock
        self._work: dict[_Key, _Work] = {}

    def due_at(self, pod: Mapping[str, Any], node: Mapping[str, Any]) -> float | None:
        """When ``pod`` on ``node`` is to be deleted; None when no deletion is pending."""
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        uid = str(meta.get("uid") or "")
        taints, tolerations = no_execute_taints(node), _tolerations(pod)
        work = self._work.get(key)
        if work is not None and work.uid != uid:
            self.forget(*key)  # another pod of that name: the one we knew was deleted
            work = None
        if work is not None and (work.taints, work.tolerations) == (taints, tolerations):
            return None if work.fired else work.fire_at
        # Considered afresh (a pod without work is too: that gives the same answer every time).
        return self._consider(key, uid, taints, tolerations)

    def _consider(self, key: _Key, uid: str, taints: list[dict[str, Any]],
                  tolerations: list[dict[str, Any]]) -> float | None:  # fmt: skip
        """``processPodOnNode``."""
        now = self.clock.now()
        if not taints:
            self._cancel(key)
            return None
        work = self._work.get(key)
        if not tolerates_all(tolerations, taints):
            # Deleted at once: whatever was scheduled is cancelled and replaced by work due now
            # (work due now from this same instant is already that).
            if work is None or work.fired or work.fire_at > now:
                self._cancel(key)
                work = self._work[key] = _Work(uid, now, now, False, taints, tolerations)
            work.taints, work.tolerations = taints, tolerations
            return None if work.fired else work.fire_at
        after = toleration_time(tolerations, taints)
        if after is None:  # tolerated for ever
            self._cancel(key)
            return None
        if work is None:
            work = self._work[key] = _Work(uid, now, now + after, False, taints, tolerations)
        else:
            # Scheduled (or fired) work is kept with its first deadline: upstream's created-at plus
            # the new toleration is before now plus it, so it returns before rescheduling.
            work.taints, work.tolerations = taints, tolerations
        return None if work.fired else work.fire_at

    def fired(self, namespace: str, name: str) -> None:
        """The pod's work ran (its delete was sent): keep it so that it does not run again."""
        work = self._work.get((namespace, name))
        if work is not None:
            work.fired = True

    def forget(self, namespace: str, name: str) -> None:
        """The pod is gone: cancel its work (``handlePodUpdate`` on a pod no longer found)."""
        self._cancel((namespace, name))

    def _cancel(self, key: _Key) -> None:
        """``cancelWorkWithEvent``: drop the work; an Event only when it had not fired yet."""
        work = self._work.pop(key, None)
        if work is None or work.fired:
            return
        namespace, name = key
        ref = {"metadata": {"namespace": namespace, "name": name, "uid": work.uid}}
        self.events.emit(ref, "Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {namespace}/{name}",
                         api_version="v1", kind="Pod")
