"""Health, readiness and metrics endpoints of a manager, as a small ASGI app.

``GET /healthz`` and ``GET /readyz`` answer like the Kubernetes components do: 200 ``ok`` when every
registered check passes, 500 with the failing check names otherwise; ``?verbose`` lists each check
(``[+]name ok`` / ``[-]name failed: reason withheld``). ``GET /metrics`` is the Prometheus text
exposition of the manager's own registry.

The checks say whether the *process* is alive and can serve (caches synced, leader lease renewed
when leading), never whether the controlled objects have converged: a controller that is retrying
a failing object is healthy, and a standby replica is ready.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from kubeloop.runtime._metrics import Metrics

__all__ = ["Check", "HealthChecks", "probe_app"]

log = logging.getLogger("kubeloop.runtime.health")

Check = Callable[[], bool | Awaitable[bool]]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class HealthChecks:
    """Named liveness (``healthz``) and readiness (``readyz``) checks; both start with ``ping``."""

    def __init__(self) -> None:
        self.healthz: dict[str, Check] = {"ping": lambda: True}
        self.readyz: dict[str, Check] = {"ping": lambda: True}

    def add_healthz(self, name: str, check: Check) -> None:
        self.healthz[name] = check

    def add_readyz(self, name: str, check: Check) -> None:
        self.readyz[name] = check

    async def run(self, which: str) -> list[tuple[str, bool]]:
        checks = self.healthz if which == "healthz" else self.readyz
        results: list[tuple[str, bool]] = []
        for name, check in checks.items():
            try:
                outcome = check()
                ok = bool(await outcome) if inspect.isawaitable(outcome) else bool(outcome)
            except Exception as err:  # a broken check is a failed check, not a crashed endpoint
                log.warning("%s check %r raised: %r", which, name, err)
                ok = False
            results.append((name, ok))
        return results


def _render(which: str, results: list[tuple[str, bool]], verbose: bool) -> tuple[int, str]:
    passed = all(ok for _, ok in results)
    if passed and not verbose:
        return 200, "ok"
    lines = [f"[+]{name} ok" if ok else f"[-]{name} failed: reason withheld" for name, ok in results]
    lines.append(f"{which} check {'passed' if passed else 'failed'}")
    return (200 if passed else 500), "\n".join(lines) + "\n"


def probe_app(checks: HealthChecks, metrics: Metrics) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The ASGI app serving ``/healthz``, ``/readyz`` (also ``/livez``) and ``/metrics``."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path = scope["path"].rstrip("/") or "/"
        query = scope.get("query_string", b"").decode()
        verbose = "verbose" in query.split("&") or any(q.startswith("verbose=") for q in query.split("&"))
        if scope["method"] not in ("GET", "HEAD"):
            status, body, ctype = 405, b"method not allowed\n", "text/plain; charset=utf-8"
        elif path == "/metrics":
            status, body, ctype = 200, metrics.exposition(), CONTENT_TYPE_LATEST
        elif path in ("/healthz", "/livez", "/readyz"):
            which = "readyz" if path == "/readyz" else "healthz"
            status, text = _render(path.lstrip("/"), await checks.run(which), verbose)
            body, ctype = text.encode(), "text/plain; charset=utf-8"
        else:
            status, body, ctype = 404, b"404 page not found\n", "text/plain; charset=utf-8"
        await send({
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode())],
        })  # fmt: skip
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})

    return app
