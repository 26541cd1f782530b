"""``EventRecorder``: write ``core/v1`` Events about objects, as client-go's ``record.EventRecorder`` does.

An Event is how a controller tells humans (``kubectl describe``, ``kubectl get events``) what it
did or why it cannot: leader election records ``<identity> became leader`` on its Lease, the
circuit breaker records its state changes, reconcilers record what they decide.

Contract:

* :meth:`EventRecorder.event` creates one Event in the involved object's namespace (``default``
  for cluster-scoped objects, as client-go does), named ``<object name>.<hex nanoseconds>``,
  (nanoseconds plus a per-recorder sequence, unique under a fake clock),
  with ``involvedObject`` (apiVersion, kind, namespace, name, uid, resourceVersion), ``reason``,
  ``message``, ``type`` (``Normal`` or ``Warning``), ``source.component``, ``reportingComponent``,
  ``reportingInstance``, ``firstTimestamp`` = ``lastTimestamp`` = now on the injected clock, ``count`` 1.
* Recording is best effort and never raises: an Event that cannot be written (API down, RBAC,
  terminating namespace) is logged and dropped, exactly like client-go's broadcaster, so a
  controller never fails because it could not report.
* :attr:`EventRecorder.recorded` keeps the last few messages sent, for logs and tests.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Mapping
from typing import Any, Literal

from kubeloop.api import ApiError, Clock, KindRegistry, ResourceInfo, SystemClock, format_time
from kubeloop.client import Client

__all__ = ["EVENTS", "EventRecorder", "EventType", "event_body", "event_name"]

log = logging.getLogger("kubeloop.runtime.events")

# Process-wide: keeps names unique when a (fake) clock has not moved between two events, also
# across recorders (a scheduler and a kubelet naming events about one pod at one instant).
_SEQUENCE = itertools.count(1)


def event_name(object_name: str, now: float) -> str:
    """``<object name>.<hex nanoseconds>`` as client-go names Events, unique within this process even
    when a (fake) clock has not moved: every Event writer in kubeloop names its Events here."""
    return f"{object_name}.{int(now * 1e9) + next(_SEQUENCE):x}"

EVENTS: ResourceInfo = KindRegistry().by_kind("", "Event")  # type: ignore[assignment]
EventType = Literal["Normal", "Warning"]


def event_body(
    obj: Mapping[str, Any],
    event_type: str,
    reason: str,
    message: str,
    *,
    component: str,
    instance: str,
    now: float,
    count: int = 1,
) -> dict[str, Any] | None:
    """The core/v1 Event about ``obj`` (a full object with apiVersion and kind) that client-go's recorder
    writes, seen ``count`` times up to ``now``; ``None`` when ``obj`` has no name. Every Event writer in
    kubeloop builds its Events here."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        return None
    involved = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "namespace": str(meta.get("namespace") or ""),
        "name": name,
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(name, now), "namespace": str(meta.get("namespace") or "default")},
        "involvedObject": {k: v for k, v in involved.items() if v},
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": instance,
        "firstTimestamp": format_time(now),
        "lastTimestamp": format_time(now),
        "count": count,
    }


class EventRecorder:
    def __init__(
        self,
        client: Client,
        *,
        component: str,
        instance: str = "",
        clock: Clock | None = None,
        keep: int = 100,
    ) -> None:
        self.client = client
        self.component = component
        self.instance = instance
        self._clock: Clock = clock if clock is not None else SystemClock()
        self.recorded: deque[tuple[str, str, str]] = deque(maxlen=keep)  # (type, reason, message)

    async def event(
        self, obj: Mapping[str, Any], event_type: EventType, reason: str, message: str
    ) -> dict[str, Any] | None:
        """Record an Event about ``obj`` (a full object with apiVersion and kind); the Event or ``None``."""
        body = event_body(obj, event_type, reason, message, component=self.component, instance=self.instance,
                          now=self._clock.now())
        if body is None:
            log.warning("event %s/%s not recorded: the object has no name", reason, message)
            return None
        namespace, name = body["metadata"]["namespace"], body["involvedObject"]["name"]
        self.recorded.append((event_type, reason, message))
        try:
            return await self.client.create(EVENTS, body, namespace=namespace)
        except ApiError as err:
            log.warning("event %s on %s/%s not recorded: %s", reason, namespace, name, err)
            return None
