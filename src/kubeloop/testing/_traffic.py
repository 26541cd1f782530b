"""``ControllerTraffic``: one controller's HTTP traffic, recorded with its answers, and faults for it alone.

The grader gives the controller under test a client that reaches the cluster through this ASGI
wrapper (``controller -> ControllerTraffic -> cluster``), while the built-in controllers and the
grader itself reach the cluster directly. So everything recorded here is the controller's own, and
a fault injected here is seen by the controller only (the garbage collector keeps working).

Guarantees:

* every request is recorded, in arrival order, as an :class:`Exchange`: method, path, query, the
  request body, the answer's status and (for everything but watches) its body, the injected
  clock's monotonic time, and whether the answer was injected;
* a **fault rule** (:class:`Conflicts`, :class:`Failing`; any callable ``(Exchange) -> int | None``,
  or a coroutine function returning that, for a rule that must look at the world first) may answer
  a request with an error ``Status`` instead of the server (first rule that answers wins); the
  server never sees such a request;
* ``before_write`` runs before a write (POST, PUT, PATCH, DELETE) reaches the server, and
  ``after_write`` after the server answered it but *before* the controller sees the answer: the
  grader uses the first to race a concurrent writer and the second to judge a status claim while
  the controller waits on it (the world is exactly as the controller left it);
* leader election is the runtime's housekeeping, not reconcile traffic: requests for Leases, and
  Events about Leases, are recorded (:attr:`Exchange.housekeeping`) but never faulted, never shown
  to the hooks, and left out of
  :meth:`ControllerTraffic.writes`, :meth:`~ControllerTraffic.reads` and
  :meth:`~ControllerTraffic.recent`;
* a controller that retries without ever yielding to time cannot stall the grader: past
  ``burst_limit`` requests at one fake instant, each further request first waits ``park`` seconds
  on the clock (the grader reports the burst; a controller with any backoff never reaches it).

Nothing here reads the wall clock.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import orjson

from kubeloop.api import Clock
from kubeloop.testing._fault_app import ASGIApp, HttpFault, Message, Receive, Scope, Send, _answer

__all__ = ["LEASES", "WRITE_METHODS", "Conflicts", "ControllerTraffic", "Exchange", "Failing", "FaultRule"]

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LEASES = "/apis/coordination.k8s.io/"


def _json(data: bytearray) -> Any:
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


@dataclass(slots=True)
class Exchange:
    """One request of the controller and the answer it got (``status`` 0 until answered)."""

    method: str
    path: str
    query: dict[str, str]
    at: float
    body: bytearray = field(default_factory=bytearray, repr=False)
    status: int = 0
    answer: bytearray = field(default_factory=bytearray, repr=False)
    injected: bool = False
    housekeeping: bool = False

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS

    @property
    def counts(self) -> bool:
        """Reconcile traffic: not a watch, not leader election."""
        return not self.is_watch and not self.housekeeping

    def request_json(self) -> Any:
        """The request body decoded (``None`` when empty or not JSON, e.g. an apply patch in YAML)."""
        return _json(self.body)

    def answer_json(self) -> Any:
        """The answer's body decoded (``None`` when empty, as for a watch, or not JSON)."""
        return _json(self.answer)

    def line(self) -> str:
        """``PUT /api/v1/namespaces/ns/secrets/app -> 409 (injected) at t=1.250s``, for evidence."""
        injected = " (injected)" if self.injected else ""
        return f"{self.method} {self.path} -> {self.status}{injected} at t={self.at:.3f}s"


FaultRule = Callable[[Exchange], "int | Awaitable[int | None] | None"]


class Conflicts:
    """Answer a seeded-random ``rate`` of the updates (PUT and PATCH) with 409 Conflict."""

    def __init__(self, rate: float, *, rng: random.Random, methods: Iterable[str] = ("PUT", "PATCH")) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError("rate must be between 0 and 1")
        self.rate = rate
        self.rng = rng
        self.methods = frozenset(methods)
        self.injected = 0

    def __call__(self, exchange: Exchange) -> int | None:
        if exchange.method not in self.methods or self.rng.random() >= self.rate:
            return None
        self.injected += 1
        return 409


class Failing:
    """Answer every request with one of ``methods`` whose path contains ``path_contains`` (and does
    not contain ``unless_path_contains``, when set) with ``status``, while :attr:`active`."""

    def __init__(
        self, status: int, *, methods: Iterable[str] = WRITE_METHODS, path_contains: str = "",
        unless_path_contains: str = "",
    ) -> None:  # fmt: skip
        self.status = status
        self.methods = frozenset(methods)
        self.path_contains = path_contains
        self.unless_path_contains = unless_path_contains
        self.active = True

    def __call__(self, exchange: Exchange) -> int | None:
        if not self.active or exchange.method not in self.methods or self.path_contains not in exchange.path:
            return None
        if self.unless_path_contains and self.unless_path_contains in exchange.path:
            return None
        return self.status


class ControllerTraffic:
    """Wrap ``app`` for one controller's client (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        clock: Clock,
        faults: Sequence[FaultRule] = (),
        before_write: Callable[[Exchange], Awaitable[None]] | None = None,
        after_write: Callable[[Exchange], Awaitable[None]] | None = None,
        burst_limit: int = 400,
        park: float = 0.05,
    ) -> None:
        self.app = app
        self.clock = clock
        self.faults: list[FaultRule] = list(faults)
        self.before_write = before_write
        self.after_write = after_write
        self.burst_limit = burst_limit
        self.park = park
        self.exchanges: list[Exchange] = []
        self.bursts = 0  # requests that were parked: the controller retried without yielding to time
        self._instant = -1.0
        self._at_instant = 0

    # -- what was asked ---------------------------------------------------------------------------

    def writes(self, *, since: int = 0) -> list[Exchange]:
        """The writes from index ``since`` on (every answer, injected ones included)."""
        return [e for e in self.exchanges[since:] if e.is_write and not e.housekeeping]

    def recent(self, seconds: float) -> int:
        """Requests (watches and Leases aside) that arrived in the last ``seconds`` of the clock's time."""
        since = self.clock.monotonic() - seconds
        count = 0
        for e in reversed(self.exchanges):
            if e.at < since:
                break
            count += e.counts
        return count

    def reads(self, *, since: int = 0) -> list[Exchange]:
        return [e for e in self.exchanges[since:] if not e.is_write and e.counts]

    def created(self) -> list[dict[str, Any]]:
        """The objects the controller created: the server's answers to its accepted POSTs."""
        made = []
        for e in self.exchanges:
            if e.method == "POST" and e.status == 201 and not e.injected and not e.housekeeping:
                obj = e.answer_json()
                if isinstance(obj, dict) and obj.get("kind") not in (None, "Event", "Status"):
                    made.append(obj)
        return made

    # -- ASGI -------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self._throttle()
        query = dict(parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True))
        exchange = Exchange(scope["method"], scope["path"], query, self.clock.monotonic())
        self.exchanges.append(exchange)
        if exchange.is_write:
            # Read the whole body first: the fault rules and hooks may look at it.
            more = True
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    return
                exchange.body.extend(message.get("body", b""))
                more = bool(message.get("more_body"))
            receive = _replay(bytes(exchange.body), receive)
        exchange.housekeeping = _is_housekeeping(exchange)
        if exchange.housekeeping:
            await self.app(scope, receive, _recording(exchange, send))
            return
        for rule in self.faults:
            status = rule(exchange)
            if inspect.isawaitable(status):
                status = await status
            if status is not None:
                exchange.status, exchange.injected = status, True
                await _answer(_recording(exchange, send), HttpFault(exchange.method, status))
                return
        if exchange.is_watch:
            await self.app(scope, receive, _status_only(exchange, send))
            return
        if not exchange.is_write:
            await self.app(scope, receive, _recording(exchange, send))
            return
        if self.before_write is not None:
            await self.before_write(exchange)
        held: list[Message] = []

        async def hold(message: Message) -> None:
            held.append(message)

        await self.app(scope, receive, _recording(exchange, hold))
        if self.after_write is not None:
            await self.after_write(exchange)
        for message in held:
            await send(message)

    async def _throttle(self) -> None:
        now = self.clock.monotonic()
        if now != self._instant:
            self._instant, self._at_instant = now, 0
        self._at_instant += 1
        if self._at_instant > self.burst_limit:
            self.bursts += 1
            await self.clock.sleep(self.park)


def _is_housekeeping(exchange: Exchange) -> bool:
    """A Lease request, or an Event about a Lease (leader election's "became leader")."""
    if exchange.path.startswith(LEASES):
        return True
    if exchange.method != "POST" or not exchange.path.endswith("/events"):
        return False
    event = exchange.request_json()
    if not isinstance(event, dict):
        return False
    about = event.get("involvedObject") or event.get("regarding") or {}
    return isinstance(about, dict) and about.get("kind") == "Lease"


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the already-read ``body`` once, then defers to the real one."""
    sent = False

    async def replaying() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replaying


def _recording(exchange: Exchange, send: Send) -> Send:
    async def recording(message: Message) -> None:
        if message["type"] == "http.response.start":
            exchange.status = int(message["status"])
        elif message["type"] == "http.response.body":
            exchange.answer.extend(message.get("body", b""))
        await send(message)

    return recording


def _status_only(exchange: Exchange, send: Send) -> Send:
    async def recording(message: Message) -> None:
        if message["type"] == "http.response.start":
            exchange.status = int(message["status"])
        await send(message)

    return recording
