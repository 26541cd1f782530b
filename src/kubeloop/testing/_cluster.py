"""An in-process cluster: the real API server on a real SQLite store, reached through the real client.

``InProcessCluster`` is what controller tests (ours and users') run against: the same server code
as ``kubeloop up`` minus the socket and TLS, the client reaching the ASGI app in-process through the
same transport seam it uses for a URL, and one injected ``Clock`` shared by server and controllers so
time-based behaviour (backoff, leases, grace periods) runs in milliseconds on a ``FakeClock``.

Guarantees:
- nothing is mocked: writes go through admission, validation and the store's compare-and-swap;
- every task started with :meth:`InProcessCluster.run_in_background` and every client from
  :meth:`InProcessCluster.new_client` is cancelled or closed on exit, so tests leak nothing;
- :func:`eventually` waits by polling a bounded number of times (advancing the fake clock between
  polls when given one), never by wall-clock deadlines.

Conveniences for building test worlds by hand: :meth:`InProcessCluster.create` (an object of a kind
by name, with labels, annotations, owners and finalizers), :meth:`InProcessCluster.get_or_none`,
:meth:`~InProcessCluster.exists` / :meth:`~InProcessCluster.gone`, and :func:`owner_ref`.

Like envtest's API server (controller-runtime ``pkg/internal/testing/controlplane/apiserver.go``,
``defaultArgs``: ``--disable-admission-plugins=ServiceAccount``), the cluster runs no controller
manager and so no namespace gets a ``default`` ServiceAccount: the ServiceAccount admission plugin is
off and pods are stored as sent. ``service_accounts=True`` turns it on, as on a real cluster; a test
then creates the ServiceAccounts (or runs :class:`~kubeloop.controllers.ServiceAccountsController`)
and advances a ``FakeClock`` while a pod create waits for ``default``.

With ``inject_http_faults=True`` every client of the cluster reaches the server through a
:class:`~kubeloop.testing.FaultyApp` (:attr:`InProcessCluster.http_faults`), which records requests,
answers scripted errors and cuts watches; :attr:`InProcessCluster.app` stays the server itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast

from kubeloop.api import AlreadyExists, Clock, KindRegistry, NotFound, ResourceInfo, owner_reference
from kubeloop.client import Client
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, App, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing._clock import FakeClock
from kubeloop.testing._fault_app import ASGIApp, FaultyApp

__all__ = ["InProcessCluster", "eventually", "owner_ref", "resource"]

T = TypeVar("T")
C = TypeVar("C", bound=Client)

_KINDS = KindRegistry()


def resource(group: str, kind: str) -> ResourceInfo:
    """A built-in kind's ``ResourceInfo`` by group and kind, e.g. ``resource("apps", "Deployment")``."""
    info = _KINDS.by_kind(group, kind)
    if info is None:
        raise KeyError(f"no built-in kind {kind!r} in group {group!r}")
    return info


def owner_ref(owner: Mapping[str, Any], *, controller: bool = False, block: bool = False) -> dict[str, Any]:
    """An ownerReference to ``owner`` (a created object: apiVersion, kind, name, uid), as
    :func:`kubeloop.api.owner_reference`: ``controller`` and ``blockOwnerDeletion`` only when set."""
    return owner_reference(owner, controller=controller, block_owner_deletion=block)


# After this many polls that only yield to the event loop, each further poll also sleeps a millisecond
# (see eventually).
_BUSY_POLLS = 100


async def eventually(
    check: Callable[[], Awaitable[T]],
    *,
    clock: FakeClock | None = None,
    step: float = 0.05,
    tries: int = 2000,
    interval: float = 0.0,
) -> T:
    """Poll ``check`` until it returns something truthy (an ``AssertionError`` counts as "not yet").

    Each poll yields to the event loop a few times, or sleeps ``interval`` real seconds when given
    (for work that runs off the loop, such as a store's writer thread); with ``clock`` it also
    advances fake time by ``step``, so queued backoffs and timers come due. Past the first
    :data:`_BUSY_POLLS` polls, each also sleeps a millisecond: a store's writer thread needs the GIL
    and a core to commit what the polled controllers wrote, and a loop that only yields can spend every
    poll before a loaded machine gives it either. Fails after ``tries`` polls with the last assertion,
    never after a wall-clock bound.
    """
    last: AssertionError | None = None
    for poll in range(tries):
        try:
            result = await check()
            if result:
                return result
            last = None
        except AssertionError as err:
            last = err
        if interval > 0:
            await asyncio.sleep(interval)
        else:
            for _ in range(3):
                await asyncio.sleep(0)
            if poll >= _BUSY_POLLS:
                await asyncio.sleep(0.001)
        if clock is not None:
            await clock.advance(step)
    if last is not None:
        raise last
    raise AssertionError(f"condition not reached after {tries} polls")


class InProcessCluster:
    """``async with InProcessCluster(tmp_path) as cluster:`` — a fresh cluster in ``data_dir``."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        clock: Clock | None = None,
        seed: int = 7,
        namespaces: Iterable[str] = (),
        default_namespace: str = "default",
        inject_http_faults: bool = False,
        service_accounts: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.clock: Clock = clock if clock is not None else FakeClock()
        self._seed = seed
        self._namespaces = tuple(namespaces)
        self.default_namespace = default_namespace
        self._store: SqliteStore | None = None
        self._app: App | None = None
        self._inject_http_faults = inject_http_faults
        self._service_accounts = service_accounts
        self._http_faults: FaultyApp | None = None
        self._client: Client | None = None
        self._clients: list[Client] = []
        self._tasks: list[asyncio.Task[Any]] = []

    @property
    def app(self) -> App:
        assert self._app is not None, "the cluster is not running"
        return self._app

    @property
    def http_faults(self) -> FaultyApp:
        """The fault injector every client goes through (only with ``inject_http_faults=True``)."""
        assert self._http_faults is not None, "the cluster runs without inject_http_faults=True"
        return self._http_faults

    @property
    def _served(self) -> ASGIApp:
        """What clients reach: the fault injector when there is one, else the server."""
        return self._http_faults if self._http_faults is not None else self.app

    @property
    def store(self) -> SqliteStore:
        assert self._store is not None, "the cluster is not running"
        return self._store

    @property
    def client(self) -> Client:
        """The default client (admin, in-process)."""
        assert self._client is not None, "the cluster is not running"
        return self._client

    async def __aenter__(self) -> InProcessCluster:
        self._store = await SqliteStore.open(self.data_dir / "kubeloop.db")
        self._app = create_app(store=self._store, clock=self.clock, rng=random.Random(self._seed),
                               disable_admission_plugins=() if self._service_accounts else ENVTEST_DISABLED_ADMISSION_PLUGINS)
        await self._app.startup()
        if self._inject_http_faults:
            self._http_faults = FaultyApp(self._app, clock=self.clock)
        self._client = Client.from_asgi(self._served, clock=self.clock, default_namespace=self.default_namespace)
        namespaces = resource("", "Namespace")
        for name in self._namespaces:
            with contextlib.suppress(AlreadyExists):
                await self._client.create(namespaces, {"metadata": {"name": name}})
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for client in self._clients:
            await client.close()
        if self._client is not None:
            await self._client.close()
        if self._app is not None:
            await self._app.shutdown()
        if self._store is not None:
            await self._store.close()

    def new_client(self, cls: type[C], **kwargs: Any) -> C:
        """Another client of the same server: ``Client``, or a subclass that injects faults."""
        kwargs.setdefault("default_namespace", self.default_namespace)
        client = cast(C, cls.from_asgi(self._served, clock=self.clock, **kwargs))
        self._clients.append(client)
        return client

    def run_in_background(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Start ``coro`` (a controller's ``run()``, a manager) in this loop; it is cancelled on exit."""
        task = asyncio.create_task(coro)
        self._tasks.append(task)
        return task

    async def eventually(self, check: Callable[[], Awaitable[T]], *, step: float = 0.05, tries: int = 2000,
                         interval: float = 0.0) -> T:  # fmt: skip
        """:func:`eventually` on this cluster's clock (advanced only when it is a ``FakeClock``)."""
        clock = self.clock if isinstance(self.clock, FakeClock) else None
        return await eventually(check, clock=clock, step=step, tries=tries, interval=interval)

    # -- objects -------------------------------------------------------------------------------

    def _namespace(self, resource: ResourceInfo, namespace: str | None) -> str | None:
        return (namespace or self.default_namespace) if resource.namespaced else None

    async def create(
        self,
        resource: ResourceInfo,
        name: str,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        owners: Iterable[Mapping[str, Any]] | None = None,
        finalizers: Iterable[str] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Create a ``resource`` named ``name`` (in ``namespace``, default :attr:`default_namespace`,
        ignored for cluster-scoped kinds) with ``fields`` as its top-level fields (``spec=...``,
        ``data=...``); the created object, ``apiVersion`` and ``kind`` included (for :func:`owner_ref`)."""
        meta: dict[str, Any] = {"name": name}
        for key, value in (("labels", dict(labels or {})), ("annotations", dict(annotations or {})),
                           ("ownerReferences", [dict(o) for o in owners or ()]), ("finalizers", list(finalizers or ()))):
            if value:
                meta[key] = value
        body = {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": meta, **fields}
        created = await self.client.create(resource, body, namespace=self._namespace(resource, namespace))
        created.setdefault("apiVersion", resource.api_version)
        created.setdefault("kind", resource.kind)
        return created

    async def get_or_none(self, resource: ResourceInfo, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or ``None`` when it does not exist (``namespace`` as in :meth:`create`)."""
        try:
            return await self.client.get(resource, name, namespace=self._namespace(resource, namespace))
        except NotFound:
            return None

    async def exists(self, resource: ResourceInfo, name: str, namespace: str | None = None) -> bool:
        return await self.get_or_none(resource, name, namespace) is not None

    async def gone(self, resource: ResourceInfo, name: str, namespace: str | None = None) -> bool:
        return await self.get_or_none(resource, name, namespace) is None
