"""Expectations: no duplicate creates or deletes while the informer cache lags behind our own writes.

Upstream: ``ControllerExpectations`` and ``UIDTrackingControllerExpectations`` (k/k
``pkg/controller/controller_utils.go``). Per controller key:

- :meth:`Expectations.expect_creations` records ``n`` pending creates *before* they are sent;
  each pod Add event with our controller ref (:meth:`creation_observed`) and each create that
  failed (the informer will never see it) lowers the count.
- :meth:`expect` records both at once.
- :meth:`expect_deletions` records the keys of the pods about to be deleted; only the deletion
  of one of *those* pods (:meth:`deletion_observed`: a Delete event, or an update that shows
  ``deletionTimestamp``) lowers the count, once per pod.
- :meth:`satisfied` is true when no record exists, when both counts are at or below zero, or
  when the record is older than :data:`EXPECTATIONS_TIMEOUT` (5 minutes on the injected clock), so
  a lost watch event cannot wedge a controller forever. Counts are only ever lowered once set.

Single event loop: every method is atomic with respect to other tasks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from kubeloop.api import Clock
from kubeloop.runtime import Event, Request, object_key

__all__ = ["EXPECTATIONS_TIMEOUT", "Expectations", "OwnObjectEvents"]

EXPECTATIONS_TIMEOUT = 5 * 60.0


@dataclass
class _Record:
    adds: int
    dels: int
    timestamp: float
    deleting: set[str] = field(default_factory=set)


class Expectations:
    def __init__(self, clock: Clock, *, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._clock = clock
        self._timeout = timeout
        self._records: dict[str, _Record] = {}

    def satisfied(self, key: str) -> bool:
        record = self._records.get(key)
        if record is None:
            return True
        if record.adds <= 0 and record.dels <= 0:
            return True
        return self._clock.monotonic() - record.timestamp > self._timeout

    def expect_creations(self, key: str, n: int) -> None:
        self._records[key] = _Record(adds=n, dels=0, timestamp=self._clock.monotonic())

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        keys = set(pod_keys)
        self._records[key] = _Record(adds=0, dels=len(keys), timestamp=self._clock.monotonic(), deleting=keys)

    def expect(self, key: str, creations: int, pod_keys: Iterable[str]) -> None:
        """Both at once (``SetExpectations``, as the DaemonSet controller's ``syncNodes`` raises them)."""
        keys = set(pod_keys)
        self._records[key] = _Record(adds=creations, dels=len(keys), timestamp=self._clock.monotonic(), deleting=keys)

    def creation_observed(self, key: str) -> None:
        record = self._records.get(key)
        if record is not None:
            record.adds -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        record = self._records.get(key)
        if record is not None and pod_key in record.deleting:
            record.deleting.discard(pod_key)
            record.dels -= 1

    def delete(self, key: str) -> None:
        self._records.pop(key, None)

    def pending(self, key: str) -> tuple[int, int]:
        """(creates, deletes) still expected; (0, 0) without a record."""
        record = self._records.get(key)
        return (record.adds, record.dels) if record is not None else (0, 0)


class _ExpectingController(Protocol):
    expectations: Expectations


class OwnObjectEvents:
    """A controller's own objects' events (ReplicaSets, DaemonSets) -> a request for the object; a deleted
    one's expectations go with it (upstream's ``deleteRS``/``deleteDaemonset``: ``DeleteExpectations``).
    Holds the controller, not its expectations: watches are set up before the controller makes them."""

    def __init__(self, owner: _ExpectingController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type == "delete":
            self.owner.expectations.delete(object_key(event.object))
        return (Request.for_object(event.object),)
