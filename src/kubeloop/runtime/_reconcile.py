"""The reconcile contract, written once (controller-runtime ``pkg/reconcile/reconcile.go``).

A :class:`Reconciler` is one async method, ``reconcile(request) -> Result | None``; a plain async
function of a :class:`Request` satisfies it too. The request carries only ``namespace`` and ``name``,
never the event that caused it: reconciling is level-based, so it must read all the state it needs
and be idempotent.

What the controller does with the outcome (``reconcileHandler``, exact):

=============================================  =====================================  ================
reconcile ...                                  queue                                  result label
=============================================  =====================================  ================
returns ``None`` or ``Result()``               ``forget`` (backoff reset)             ``success``
returns ``Result(requeue_after=d)``, ``d > 0``  ``forget``, then ``add_after(d)``      ``requeue_after``
raises :class:`TransientError` (``retry_after``  ``add_after(retry_after)``             ``error``
set)
raises :class:`PermanentError`                 nothing: recorded, not retried until   ``error``
                                               the next event (backoff kept)
raises any other ``Exception``                 ``add_rate_limited`` (backoff grows)   ``error``
=============================================  =====================================  ================

An exception never kills a worker. ``asyncio.CancelledError`` (shutdown) is not an outcome: it
propagates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "PermanentError",
    "ReconcileError",
    "ReconcileFunc",
    "Reconciler",
    "Request",
    "Result",
    "TransientError",
]


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """What to reconcile: an object's namespace (``""`` when cluster-scoped) and name."""

    namespace: str
    name: str

    @classmethod
    def for_object(cls, obj: Mapping[str, Any]) -> Request:
        meta = obj.get("metadata") or {}
        return cls(meta.get("namespace") or "", meta.get("name") or "")

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Result:
    """A successful reconcile; ``requeue_after`` (seconds) asks for another look later, e.g. polling."""

    requeue_after: float = 0.0


class ReconcileError(Exception):
    """Base of the reconcile control-flow errors (distinct from the API's ``ApiError`` tree)."""


class TransientError(ReconcileError):
    """Retry: with ``retry_after`` seconds when given, else with the rate limiter's backoff."""

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(ReconcileError):
    """Do not retry: retrying cannot help until something changes (controller-runtime ``TerminalError``).

    The controller records it (log, ``controller_runtime_terminal_reconcile_errors_total``,
    ``Controller.permanent_failures``) and reconciles the key again only when a new event adds it.
    """


@runtime_checkable
class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result | None: ...


ReconcileFunc = Callable[[Request], Awaitable[Result | None]]
