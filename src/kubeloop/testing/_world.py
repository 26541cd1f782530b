"""One check's world: a fresh in-process cluster, the built-in controllers, the controller under test.

``World`` is what each conformance check runs in, so checks never see each other's objects or
faults. It holds:

* an :class:`~kubeloop.testing.InProcessCluster` on a :class:`~kubeloop.testing.FakeClock`, every
  client going through its ``FaultyApp`` (so the world can wait until the server is quiet);
* built-in controllers (the garbage collector and namespace controller by default) on their own
  manager and client;
* the controller under test on a client that goes through a :class:`ControllerTraffic`, so its
  requests (and only its) are recorded, and faults injected for it alone;
* the scenario's CRDs (served before anything starts) and its primary objects.

Time moves only in :meth:`World.drive`, :meth:`World.converge` and :meth:`World.until_idle` (which
stops once the controller's manager reports :meth:`~kubeloop.runtime.Manager.idle`): wait until the
server is quiet, then advance the fake clock one step (at most 2 s, so a leader renews its Lease in
time); so backoffs, requeues and leases run in milliseconds. Before each step the controller's
recent traffic is checked: past a burst at one instant, or a request rate no reconcile needs (both
scaled to the scenario), :class:`HotLoop` is raised and the check fails instead of spinning.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from kubeloop.api import ApiError, NotFound, ResourceInfo
from kubeloop.client import Client, Discovery, discover_resources
from kubeloop.controllers import add_builtin_controllers, has_synced
from kubeloop.runtime import Manager
from kubeloop.testing._clock import FakeClock
from kubeloop.testing._cluster import InProcessCluster, resource
from kubeloop.testing._subject import ControllerUnderTest, Scenario
from kubeloop.testing._traffic import ControllerTraffic

__all__ = ["HotLoop", "World"]

_CRDS = resource("apiextensions.k8s.io", "CustomResourceDefinition")
_POLLS = 400
# Past these the controller is in a hot loop whatever the check: the grader stops driving time.
# Both grow with the scenario (a resync of many objects is a legitimate burst).
_MAX_PARKED = 1  # requests parked for bursting at one instant
_BURST_PER_OBJECT = 20  # requests at one instant, per primary object (at least 100)
_RATE_PER_OBJECT = 50  # requests in one second of fake time, per primary object (at least 500)
# Longest step of fake time: a leader renews every 2 s and must see its renewal answered in time.
_MAX_STEP = 2.0


class HotLoop(Exception):
    """The controller kept sending requests without letting fake time pass: the grader stops driving."""


class World:
    """``async with World(dir, controller, scenario, seed=..., builtins=...) as world:`` (see the module docstring)."""

    def __init__(
        self,
        data_dir: Path,
        controller: ControllerUnderTest,
        scenario: Scenario,
        *,
        seed: int,
        builtins: Sequence[str],
    ) -> None:
        self.clock = FakeClock()
        self.controller = controller
        self.scenario = scenario
        self.seed = seed
        self.rng = random.Random(seed)
        self.builtins = tuple(builtins)
        self.cluster = InProcessCluster(
            data_dir, clock=self.clock, seed=seed, namespaces=[scenario.namespace],
            default_namespace=scenario.namespace, inject_http_faults=True,
        )  # fmt: skip
        self._traffic: ControllerTraffic | None = None
        self.max_per_second = max(500, _RATE_PER_OBJECT * len(scenario.objects))
        self._running: tuple[asyncio.Task[None], Client] | None = None
        self._managers_before = 0  # managers the controller had started before the running instance
        self._discovery: Discovery | None = None
        self.primaries: list[dict[str, Any]] = []

    @property
    def client(self) -> Client:
        """The grader's own client: its requests are not the controller's."""
        return self.cluster.client

    @property
    def traffic(self) -> ControllerTraffic:
        assert self._traffic is not None, "the world is not running"
        return self._traffic

    async def __aenter__(self) -> World:
        await self.cluster.__aenter__()
        self._traffic = ControllerTraffic(
            self.cluster.http_faults, clock=self.clock,
            burst_limit=max(100, _BURST_PER_OBJECT * len(self.scenario.objects)),
        )  # fmt: skip
        try:
            await self._start_builtins()
            for crd in self.scenario.crds:
                await self.client.create(_CRDS, crd)
            if self.scenario.crds:
                await self._until_served(self.scenario.resource)
        except BaseException:
            await self.cluster.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self.stop_controller()
        finally:
            await self.cluster.__aexit__(exc_type, exc, tb)

    async def _start_builtins(self) -> None:
        manager = Manager(
            self.cluster.new_client(Client), clock=self.clock, rng=random.Random(self.seed + 1)
        )
        started = add_builtin_controllers(manager, names=self.builtins)
        self.cluster.run_in_background(manager.run())
        await self.poll(
            lambda: all(has_synced(r) for r in started.values()), what=f"{', '.join(self.builtins)} synced"
        )

    async def _until_served(self, info: ResourceInfo) -> None:
        for _ in range(_POLLS):
            try:
                await self.client.list(info, namespace="")
                return
            except ApiError:
                await self.step(0.05)
        raise AssertionError(f"{info.plural}.{info.group} was never served")

    # -- the controller under test ------------------------------------------------------------

    def start_controller(self) -> None:
        """Start (another instance of) the controller on a fresh client through the recorder."""
        assert self._running is None, "the controller is already running"
        client = Client.from_asgi(self.traffic, clock=self.clock, default_namespace=self.scenario.namespace)
        rng = random.Random(self.rng.random())
        self._managers_before = len(self.controller.managers)
        task = asyncio.create_task(self.controller.start(client, self.clock, rng))
        self._running = (task, client)

    async def stop_controller(self) -> None:
        """Cancel the running instance, advancing time while it shuts down gracefully."""
        if self._running is None:
            return
        task, client = self._running
        self._running = None
        task.cancel()
        for _ in range(_POLLS):
            if task.done():
                break
            await self.quiet()
            await self.clock.advance(0.5)
        await asyncio.gather(task, return_exceptions=True)
        await client.close()

    def controller_failure(self) -> BaseException | None:
        """The exception the controller's task ended with, if it ended on its own."""
        if self._running is None or not self._running[0].done() or self._running[0].cancelled():
            return None
        return self._running[0].exception()

    # -- objects ------------------------------------------------------------------------------

    def _ns(self, info: ResourceInfo, obj: Mapping[str, Any] | None = None) -> str | None:
        if not info.namespaced:
            return None
        return str(((obj or {}).get("metadata") or {}).get("namespace") or self.scenario.namespace)

    async def create_primaries(self) -> None:
        info = self.scenario.resource
        for body in self.scenario.objects:
            created = await self.client.create(info, body, namespace=self._ns(info, body))
            self.primaries.append(created)

    async def current_primaries(self) -> list[dict[str, Any] | None]:
        """Every primary as it is now (``None`` when gone)."""
        info = self.scenario.resource
        out: list[dict[str, Any] | None] = []
        for obj in self.primaries:
            meta = obj["metadata"]
            try:
                out.append(await self.client.get(info, meta["name"], namespace=self._ns(info, obj)))
            except NotFound:
                out.append(None)
        return out

    async def edit_primaries(self, patch: Mapping[str, Any]) -> None:
        info = self.scenario.resource
        for obj in self.primaries:
            await self.client.patch(info, obj["metadata"]["name"], dict(patch), namespace=self._ns(info, obj))

    async def restore_primaries(self) -> None:
        """Merge-patch every primary back to the scenario's body for it (everything but
        ``apiVersion``, ``kind``, ``metadata`` and ``status``): a spec change when edits moved it."""
        info = self.scenario.resource
        for obj, body in zip(self.primaries, self.scenario.objects, strict=True):
            patch = {k: v for k, v in body.items() if k not in ("apiVersion", "kind", "metadata", "status")}
            if patch:
                await self.client.patch(info, obj["metadata"]["name"], patch, namespace=self._ns(info, obj))

    async def problems(self) -> list[str]:
        """Why the world does not (yet) match every primary, by ``scenario.expect``; empty: converged."""
        found: list[str] = []
        for obj in await self.current_primaries():
            if obj is None:
                continue
            found += await self.judge(obj)
        return found

    async def judge(self, primary: dict[str, Any]) -> list[str]:
        """``scenario.expect`` on one primary: ``[]`` when it matches, else why not."""
        meta = primary["metadata"]
        where = f"{meta.get('namespace', '')}/{meta['name']}".lstrip("/")
        try:
            verdict = await self.scenario.expect(self.client, primary)
        except NotFound as err:  # a child not there (yet): no match, not a grader failure
            return [f"{self.scenario.resource.kind} {where}: {err.message}"]
        except AssertionError as err:
            return [f"{self.scenario.resource.kind} {where}: {err or 'expect failed'}"]
        if verdict is False:
            return [f"{self.scenario.resource.kind} {where}: expect returned False"]
        return []

    async def resolve(self, api_version: str, kind: str) -> ResourceInfo | None:
        """The served resource for ``apiVersion``/``kind`` (discovery, refreshed once on a miss)."""
        for fresh in (False, True):
            if self._discovery is None or fresh:
                self._discovery = await discover_resources(self.client)
            found = self._discovery.by_kind(api_version, kind)
            if found is not None:
                return found
        return None

    async def resolve_path(self, path: str) -> tuple[ResourceInfo, str | None, str] | None:
        """``(resource, namespace, name)`` of an item path such as ``/api/v1/namespaces/ns/secrets/a``."""
        parts = path.strip("/").split("/")
        if parts[:1] == ["api"]:
            group, version, rest = "", parts[1] if len(parts) > 1 else "", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) > 2:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        namespace = None
        if rest[:1] == ["namespaces"] and len(rest) >= 4:
            namespace, rest = rest[1], rest[2:]
        if len(rest) < 2:
            return None
        if self._discovery is None:
            self._discovery = await discover_resources(self.client)
        for info in self._discovery.resources:
            if (info.group, info.version, info.plural) == (group, version, rest[0]):
                return info, namespace, rest[1]
        return None

    async def get_live(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """The object as it is now (``None``: gone or not served), by its apiVersion/kind/name."""
        info = await self.resolve(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if info is None:
            return None
        meta = obj.get("metadata") or {}
        try:
            return await self.client.get(info, meta["name"], namespace=meta.get("namespace") if info.namespaced else None)
        except NotFound:
            return None

    # -- time ---------------------------------------------------------------------------------

    async def quiet(self) -> None:
        await self.cluster.http_faults.settle()

    async def step(self, seconds: float) -> None:
        await self.quiet()
        traffic = self._traffic
        if traffic is not None and (traffic.bursts > _MAX_PARKED or traffic.recent(1.0) > self.max_per_second):
            raise HotLoop(
                f"the controller sent {traffic.recent(1.0)} requests in one second of fake time "
                f"(the grader stops at {self.max_per_second}); {traffic.bursts} request(s) beyond "
                f"{traffic.burst_limit} at one instant"
            )
        await self.clock.advance(seconds)

    async def drive(self, seconds: float, *, step: float = 0.1) -> None:
        """Let ``seconds`` of fake time pass in steps (at most 2 s), the server quiet before each."""
        step = min(step, _MAX_STEP)
        for _ in range(max(1, round(seconds / step))):
            await self.step(step)
        await self.quiet()

    async def drive_schedule(self, schedule: Iterable[tuple[float, float]]) -> None:
        """``drive`` each ``(seconds, step)`` in turn: fine steps first, coarse ones later."""
        for seconds, step in schedule:
            await self.drive(seconds, step=step)

    def running_manager(self) -> Manager | None:
        """The manager of the running instance of the controller (``None``: a function controller,
        none running, or its manager not built yet); never a manager of an instance stopped before."""
        managers = self.controller.managers
        if self._running is None or len(managers) <= self._managers_before:
            return None
        return managers[-1]

    async def until_idle(self, seconds: float, *, step: float = 0.1, within: float | None = None) -> float | None:
        """Drive until the running instance's manager is idle, with nothing due ``within`` the
        next seconds (``step`` by default; :meth:`kubeloop.runtime.Manager.idle` on the injected
        clock, asked once the server is quiet), at most ``seconds`` of fake time; the fake seconds it
        took, or ``None``: never idle (a stopped controller included), or a function controller,
        whose quiescence cannot be seen (it is driven the whole ``seconds``)."""
        start = self.clock.monotonic()
        horizon = step if within is None else within
        while self.clock.monotonic() - start < seconds:
            await self.quiet()
            manager = self.running_manager()
            if manager is not None and manager.idle(until=self.clock.monotonic() + horizon):
                return self.clock.monotonic() - start
            await self.step(min(step, _MAX_STEP))
        await self.quiet()
        return None

    async def converge(self, *, seconds: float = 30.0, step: float = 0.05) -> list[str]:
        """Drive until ``scenario.expect`` holds for every primary (``[]``), or return the problems
        left after ``seconds`` of fake time (steps of ``step`` for the first 5 s, then ten times
        that, at most 2 s)."""
        problems: list[str] = []
        start = self.clock.monotonic()
        while self.clock.monotonic() - start < seconds:
            await self.quiet()
            problems = await self.problems()
            if not problems:
                return []
            await self.step(min(step if self.clock.monotonic() - start < 5.0 else step * 10, _MAX_STEP))
        await self.quiet()
        problems = await self.problems()
        failure = self.controller_failure()
        if problems and failure is not None:
            problems.append(f"the controller stopped with {failure!r}")
        return problems

    async def poll(self, check: Callable[[], object | Awaitable[object]], *, what: str, step: float = 0.05) -> None:
        for _ in range(_POLLS):
            result = check()
            if isinstance(result, Awaitable):
                result = await result
            if result:
                return
            await self.step(step)
        raise AssertionError(f"never happened: {what}")
