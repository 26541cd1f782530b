"""Client interceptors for tests: count every write, inject 409/500 answers, race a concurrent writer.

:class:`InterceptedClient` wraps any :class:`~kubeloop.client.Client` (controller-runtime's
``interceptor.Funcs`` idea: fault injection by wrapping, not patching). It *is* a ``Client``, so it
goes wherever one is expected (informers, managers, controllers). Reads pass through untouched;
every write (create, update, patch, apply, scale, delete, delete_collection) is:

1. announced to ``before_write`` (an async hook; a test can use it to write the same object
   concurrently, so the controller's request really is stale and the server answers 409);
2. failed by ``faults`` when they say so (the request is then *not* sent, as a server refusing it);
3. sent, and recorded in :attr:`InterceptedClient.writes` with its outcome.

:class:`RandomFaults` fails a seeded-random fraction of writes with 409 Conflict or 500 InternalError
(``rate``; the code chosen by the same ``random.Random``), optionally only for some resources or verbs.
Everything is deterministic for a given seed and sequence of writes.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kubeloop.api import ApiError, InternalError, ResourceInfo, conflict
from kubeloop.client import Client, PatchType, WatchEvent

__all__ = ["Faults", "InterceptedClient", "RandomFaults", "Write"]


@dataclass(frozen=True, slots=True)
class Write:
    """One write a client made: verb, resource plural, namespace, name, subresource, outcome."""

    verb: str
    resource: str
    namespace: str | None
    name: str
    subresource: str | None = None
    outcome: str = "ok"  # "ok", "injected:<code>", or "error:<code>"
    injected: bool = False


class Faults(Protocol):
    def error_for(self, write: Write) -> ApiError | None: ...


class RandomFaults:
    """Fail ``rate`` of the writes (seeded) with one of ``codes`` (409 Conflict, 500 InternalError)."""

    def __init__(
        self,
        rate: float,
        *,
        rng: random.Random,
        codes: Sequence[int] = (409, 500),
        resources: Sequence[str] | None = None,
        verbs: Sequence[str] | None = None,
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError("rate must be between 0 and 1")
        self.rate = rate
        self.rng = rng
        self.codes = tuple(codes)
        self.resources = None if resources is None else frozenset(resources)
        self.verbs = None if verbs is None else frozenset(verbs)
        self.enabled = True

    def error_for(self, write: Write) -> ApiError | None:
        if not self.enabled:
            return None
        if self.resources is not None and write.resource not in self.resources:
            return None
        if self.verbs is not None and write.verb not in self.verbs:
            return None
        if self.rng.random() >= self.rate:
            return None
        code = self.rng.choice(self.codes)
        if code == 409:
            return conflict(write.resource, write.name or "(generated)")
        return InternalError(f"Internal error occurred: injected fault for {write.verb} {write.resource}")


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or meta.get("generateName") or "")


class InterceptedClient(Client):
    """A ``Client`` that records and can fail or race every write of the client it wraps."""

    def __init__(
        self,
        inner: Client,
        *,
        faults: Faults | None = None,
        before_write: Callable[[Write], Awaitable[None]] | None = None,
    ) -> None:
        # The base is built on the wrapped client's connection, so every Client attribute holds (transport,
        # base_url, auth, clock, ...); requests are still forwarded to ``inner``, which owns the transport.
        super().__init__(
            inner.transport, base_url=inner.base_url, auth=inner.auth, default_namespace=inner.default_namespace,
            clock=inner.clock, max_retries=inner.max_retries,
        )  # fmt: skip
        self.inner = inner
        self.faults = faults
        self.before_write = before_write
        self.writes: list[Write] = []

    # -- bookkeeping ---------------------------------------------------------------------------

    def count(self, *, verb: str | None = None, resource: str | None = None, ok_only: bool = True) -> int:
        """How many writes matched (by default only those the server accepted)."""
        return sum(
            1 for w in self.writes
            if (verb is None or w.verb == verb) and (resource is None or w.resource == resource)
            and (not ok_only or w.outcome == "ok")
        )  # fmt: skip

    def reset(self) -> None:
        self.writes.clear()

    async def _write(self, write: Write, send: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        if self.before_write is not None:
            await self.before_write(write)
        error = self.faults.error_for(write) if self.faults is not None else None
        if error is not None:
            self.writes.append(replace(write, outcome=f"injected:{error.code}", injected=True))
            raise error
        try:
            result = await send()
        except ApiError as err:
            self.writes.append(replace(write, outcome=f"error:{err.code}"))
            raise
        self.writes.append(write)
        return result

    # -- reads (forwarded) ---------------------------------------------------------------------

    async def close(self) -> None:
        await self.inner.close()

    async def get(
        self, resource: ResourceInfo, name: str, *, namespace: str | None = None, subresource: str | None = None
    ) -> dict[str, Any]:
        return await self.inner.get(resource, name, namespace=namespace, subresource=subresource)

    async def list(self, resource: ResourceInfo, **kwargs: Any) -> dict[str, Any]:
        return await self.inner.list(resource, **kwargs)

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        # Raw reads (discovery documents, e.g. for `discover_resources`) pass through; a raw write
        # would escape the recording and the faults, so it is refused.
        if method != "GET":
            raise TypeError(f"InterceptedClient forwards raw GETs only, not {method} {path}")
        return await self.inner._json(method, path, **kwargs)

    async def list_all(self, resource: ResourceInfo, **kwargs: Any) -> tuple[builtins.list[dict[str, Any]], str]:
        return await self.inner.list_all(resource, **kwargs)

    async def watch(self, resource: ResourceInfo, **kwargs: Any) -> AsyncGenerator[WatchEvent, None]:
        async for event in self.inner.watch(resource, **kwargs):
            yield event

    # -- writes (intercepted) ------------------------------------------------------------------

    async def create(
        self, resource: ResourceInfo, obj: Mapping[str, Any], *, namespace: str | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        ns = namespace or (obj.get("metadata") or {}).get("namespace")
        write = Write("create", resource.plural, ns, _name(obj))
        return await self._write(write, lambda: self.inner.create(resource, obj, namespace=namespace, **kwargs))

    async def update(
        self,
        resource: ResourceInfo,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        ns = namespace or (obj.get("metadata") or {}).get("namespace")
        write = Write("update", resource.plural, ns, _name(obj), subresource)
        return await self._write(
            write, lambda: self.inner.update(resource, obj, namespace=namespace, subresource=subresource, **kwargs)
        )

    async def patch(
        self,
        resource: ResourceInfo,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        write = Write("patch", resource.plural, namespace, name, subresource)
        return await self._write(
            write,
            lambda: self.inner.patch(
                resource, name, patch, namespace=namespace, patch_type=patch_type, subresource=subresource, **kwargs
            ),
        )

    async def delete(
        self, resource: ResourceInfo, name: str, *, namespace: str | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        write = Write("delete", resource.plural, namespace, name)
        return await self._write(write, lambda: self.inner.delete(resource, name, namespace=namespace, **kwargs))

    async def delete_collection(
        self, resource: ResourceInfo, *, namespace: str | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        write = Write("deletecollection", resource.plural, namespace, "")
        return await self._write(write, lambda: self.inner.delete_collection(resource, namespace=namespace, **kwargs))
