"""**hot-loop** (reconciliation pitfall 6): one dependency fails persistently: every write for the
first primary's children (matched by ownerReference, in the body sent or on the object targeted; not
by name) is answered 500 (by default) for two simulated minutes, while no other write is faulted.
Its retries against that dependency, and its writes to that primary itself (its status), over the
second minute must be at most ``max_retry_rate`` per second (exponential backoff from 5 ms makes
about one in that minute), it must never have sent hundreds of requests at one fake instant, its
status rewrites that woke it into its next attempt far sooner than its backoff (its own watch event:
a loop on a real clock, where each rewrite carries a new time or count) must be at most
``max_status_rewrites`` (reporting the failure once is one), the other primaries must converge
meanwhile (a worker stuck retrying inside reconcile starves them), and once the dependency heals it
must converge.

Like the other checks it runs in its own :class:`~kubeloop.testing._world.World` and measures the
controller's own requests (:class:`~kubeloop.testing._traffic.ControllerTraffic`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.testing._checks import GradeOptions, WorldFactory, write_lines
from kubeloop.testing._lineage import Lineage
from kubeloop.testing._subject import CheckResult
from kubeloop.testing._traffic import Exchange
from kubeloop.testing._world import HotLoop, World

__all__ = ["check_hot_loop"]

# -- hot loops -----------------------------------------------------------------------------------

_WINDOWS = ((0.0, 1.0), (1.0, 10.0), (10.0, 60.0), (60.0, 120.0))


class _FailingDependency:
    """Answers ``status`` to every write for the children of the first primary (matched by
    ownerReference, see :class:`~kubeloop.testing._lineage.Lineage`) while :attr:`active`: one
    dependency fails persistently, no other write (its status, the other primaries' children) is
    faulted."""

    def __init__(self, world: World, status: int) -> None:
        self.world = world
        self.lineage = Lineage(world)
        self.status = status
        self.active = True
        self.failed: list[Exchange] = []

    @property
    def owner(self) -> dict[str, Any] | None:
        return self.world.primaries[0] if self.world.primaries else None

    async def __call__(self, exchange: Exchange) -> int | None:
        owner = self.owner
        if not self.active or owner is None or not exchange.is_write:
            return None
        if owner["metadata"]["uid"] not in await self.lineage.owners(exchange):
            return None
        self.failed.append(exchange)
        return self.status


async def check_hot_loop(make_world: WorldFactory, options: GradeOptions) -> CheckResult:
    name = "hot-loop"
    hint = "return the error (or raise TransientError) so the work queue backs off exponentially"
    async with make_world(name) as world:
        failing = _FailingDependency(world, options.failure_status)
        world.traffic.faults.append(failing)
        world.start_controller()
        await world.until_idle(1.0, step=0.1)  # informers synced before the clock starts
        t0 = world.clock.monotonic()
        await world.create_primaries()
        total = options.failure_seconds
        try:
            await world.drive_schedule([(0.5, 0.01), (4.5, 0.1), (15.0, 0.5), (total - 20.0, 2.0)])
        except HotLoop as err:
            looped = _status_loop(world, failing)
            if looped is None:
                raise
            return CheckResult(name, "failed", looped[0], (str(err), *looped[1:]), _STATUS_HINT)
        requests = [e for e in world.traffic.exchanges if e.counts and e.at >= t0]
        burst = (
            [f"{world.traffic.bursts} request(s) beyond {world.traffic.burst_limit} at one instant of fake time"]
            if world.traffic.bursts else []
        )  # fmt: skip
        owner = failing.owner
        assert owner is not None
        where = f"{world.scenario.resource.kind} {_where(owner)}"
        retries = failing.failed
        if not retries and not burst:
            if not any(e.is_write for e in requests):
                return CheckResult(name, "skipped", "the controller made no write, so no dependency could fail")
            return CheckResult(name, "skipped", f"no write of the controller was for {where}'s children "
                               "(none carried an ownerReference to it), so no dependency of it could fail",
                               hint="set a controller reference on what you create (set_controller_reference)")  # fmt: skip
        scale = total / _WINDOWS[-1][1]
        counts = [sum(1 for e in retries if lo * scale <= e.at - t0 < hi * scale) for lo, hi in _WINDOWS]
        status = _StatusWrites(world, failing, since=t0)
        late = sorted([e for e in retries if e.at >= t0 + total / 2] + status.late(t0 + total / 2), key=lambda e: e.at)
        rate = len(late) / (total / 2)
        evidence = [
            f"writes for {where}'s children (by ownerReference) answered {options.failure_status} for {total:.0f}s "
            "of fake time, no other write faulted; "
            + ", ".join(f"{c} of them in [{lo * scale:.0f}s, {hi * scale:.0f}s)"
                        for c, (lo, hi) in zip(counts, _WINDOWS, strict=True)),
            f"{rate:.3f} request(s)/s per object against that failing dependency over the last {total / 2:.0f}s "
            f"(limit {options.max_retry_rate}), writes to {where} itself (its status) included",
            f"{where}'s status changed by {len(status.changed)} write(s) of the controller meanwhile, "
            f"{len(status.woke)} of which woke it at once into another attempt (limit {options.max_status_rewrites})",
            *burst,
        ]  # fmt: skip
        if burst or rate > options.max_retry_rate:
            return CheckResult(name, "failed", "the controller keeps retrying a failing dependency at a steady rate",
                               (*evidence, *write_lines(late or retries or requests, limit=5)), hint)  # fmt: skip
        if len(status.woke) > options.max_status_rewrites:
            return CheckResult(
                name, "failed", f"the controller rewrites {where}'s status while the dependency fails, and each "
                "rewrite wakes it again (a hot loop through its own watch events)",
                (*evidence, *write_lines(status.woke, limit=5)), _STATUS_HINT,
            )  # fmt: skip
        others = [obj for obj in (await world.current_primaries())[1:] if obj is not None]
        held_up = [problem for obj in others for problem in await world.judge(obj)]
        if held_up:
            return CheckResult(
                name, "failed", f"one failing dependency held up the other primaries: {held_up[0]}",
                (*evidence, *held_up[1:4]),
                "never wait on a failing dependency inside reconcile (a retry loop, a sleep): return the error, "
                "so the work queue backs off that key alone and the workers serve the others",
            )  # fmt: skip
        evidence.append(
            f"the other {len(others)} primary object(s) converged meanwhile" if others
            else "a single primary object: nothing else had to proceed meanwhile"
        )  # fmt: skip
        failing.active = False
        problems = await world.converge(seconds=options.recovery_seconds, step=2.0)
        if problems:
            return CheckResult(
                name, "failed", "backed off, but never recovered once the dependency healed",
                (*evidence, *problems[:4]),
                "a 5xx is transient: keep retrying with backoff (do not treat it as a permanent error)",
            )  # fmt: skip
        evidence.append("converged once the dependency healed")
        return CheckResult(name, "passed", "backed off the failing dependency while the rest proceeded", tuple(evidence))


_STATUS_HINT = (
    "write status only when it changes (StatusWriter), with nothing in it that moves on every reconcile (a "
    "counter, a timestamp); or do not let status-only updates wake the controller (GenerationChanged)"
)


class _StatusWrites:
    """The controller's writes to the failing primary itself (its status) since ``since``: those that
    changed it (a new resourceVersion), and of those, the ones that woke it into its next attempt at
    the failing dependency far sooner than its backoff would have (at the same fake instant, or
    within half the gap between its two previous attempts): its own watch event did. On a real clock
    each such rewrite that carries a time or a count wakes the controller again and again; on the fake
    clock the loop stops once nothing time-derived moves, so the wakes are counted instead."""

    def __init__(self, world: World, failing: _FailingDependency, *, since: float) -> None:
        owner = failing.owner
        assert owner is not None
        paths = _object_paths(world, owner)
        exchanges = world.traffic.exchanges
        order = {id(e): i for i, e in enumerate(exchanges)}
        attempts = sorted(failing.failed, key=lambda e: order[id(e)])
        self.writes = [e for e in exchanges if e.is_write and e.path in paths and e.at >= since and not e.injected]
        self.changed: list[Exchange] = []
        self.woke: list[Exchange] = []
        version = str(owner["metadata"].get("resourceVersion", ""))
        for e in self.writes:
            answer = e.answer_json()
            meta = (answer.get("metadata") or {}) if isinstance(answer, dict) and 200 <= e.status < 300 else {}
            now = str(meta.get("resourceVersion", ""))
            if not now or now == version:
                continue
            version = now
            self.changed.append(e)
            before = [a for a in attempts if order[id(a)] < order[id(e)]]
            after = next((a for a in attempts if order[id(a)] > order[id(e)]), None)
            if after is None:
                continue
            gap = after.at - e.at
            backoff = before[-1].at - before[-2].at if len(before) >= 2 else None
            if gap == 0 or (backoff is not None and gap < backoff / 2):
                self.woke.append(e)

    def late(self, since: float) -> list[Exchange]:
        return [e for e in self.writes if e.at >= since]


def _object_paths(world: World, obj: Mapping[str, Any]) -> set[str]:
    meta = obj["metadata"]
    path = f"{world.scenario.resource.base_path(meta.get('namespace'))}/{meta['name']}"
    return {path, f"{path}/status"}


def _status_loop(world: World, failing: _FailingDependency) -> tuple[str, ...] | None:
    """When the grader had to stop a hot loop: the summary and evidence if the controller's writes to
    the failing primary itself were most of its writes at the last instants (a loop through its own
    status), else ``None``."""
    owner = failing.owner
    if owner is None:
        return None
    paths = _object_paths(world, owner)
    recent = [e for e in world.traffic.exchanges[-200:] if e.is_write and not e.housekeeping]
    own = [e for e in recent if e.path in paths]
    if not recent or len(own) * 3 < len(recent):
        return None
    where = f"{world.scenario.resource.kind} {_where(owner)}"
    return (
        f"hot loop through its own status: the controller rewrites {where}'s status on every reconcile "
        "and each write wakes it again",
        f"{len(own)} of its last {len(recent)} write(s) were to {where} itself",
        *write_lines(own, limit=4),
    )


def _where(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name')}".lstrip("/")
