"""The loop checks: idempotency and lost-update tolerance (reconciliation pitfalls 5 and 4).

Each check runs in its own :class:`~kubeloop.testing._world.World` and measures the controller's
own requests (recorded by its :class:`~kubeloop.testing._traffic.ControllerTraffic`):

* **idempotency**: after the scenario converged (edits included), force resyncs (every primary
  enqueued again when the controller is a ``Manager``'s, a restart of the controller, ten quiet
  minutes of fake time) and count the controller's write requests: any write fails the check;
* **lost-update**: a seeded-random fraction of the controller's updates is answered 409 Conflict
  until the scenario first converged; then (no random 409 any more) the scenario's edits are applied
  *while* the controller writes (the next edit lands just before one of its writes), the child
  update right after each edit is answered 409, and a concurrent writer labels the child the
  controller is about to update (so its update is really stale), and labels again each child just
  before the controller retries an update of it that got an injected 409 (so only a retry from a
  fresh read keeps the label). Children are the objects it created or that a primary owns
  (:mod:`._lineage`): an unrelated object it patches gets neither. The world must still converge to
  the latest spec, every injected 409 on a child update must be followed by an accepted update of
  that child, and the other writer's labels must survive. Then the decisive round: with the
  controller idle, the spec is changed back and then to the last edit again, and only then the next
  child update of each primary is answered 409 (the update carrying the latest spec, followed by no
  event of the grader's: a swallowed 409 leaves the child stale). Without a 409 landed there, a
  second round is tried; a controller that never updates a child (or never writes) is reported
  skipped, "not exercised", never passed.

The hot-loop check is in :mod:`kubeloop.testing._checks_hotloop`.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kubeloop.api import NotFound
from kubeloop.runtime import Request
from kubeloop.testing._lineage import Lineage
from kubeloop.testing._subject import CheckResult
from kubeloop.testing._traffic import Conflicts, Exchange
from kubeloop.testing._world import World

__all__ = ["CONCURRENT_WRITER_LABEL", "GradeOptions", "WorldFactory", "check_idempotency", "check_lost_update", "converge_with_edits", "write_lines"]

CONCURRENT_WRITER_LABEL = "kubeloop.dev/concurrent-writer"

WorldFactory = Callable[[str], World]


@dataclass(frozen=True, slots=True)
class GradeOptions:
    """Knobs of the checks (defaults suit controllers on ``kubeloop.runtime``'s default rate limiter)."""

    converge_seconds: float = 60.0
    conflict_rate: float = 0.5
    failure_status: int = 500
    failure_seconds: float = 120.0
    # Retries per second against the failing dependency (one primary's children), over the last half
    # of the failure: exponential backoff from 5 ms makes about one in that minute.
    max_retry_rate: float = 0.1
    # Status rewrites of the failing primary that woke the controller at once into another attempt,
    # while nothing but time changed: a few are the failure being reported, more a loop (see hot-loop).
    max_status_rewrites: int = 2
    recovery_seconds: float = 600.0
    # Built-in controllers running beside the one graded (names in kubeloop.controllers.BUILTIN_CONTROLLERS;
    # call register_workload_controllers() first for "deployment", "replicaset", "statefulset").
    builtins: tuple[str, ...] = ("garbage-collector", "namespace")


def write_lines(exchanges: Sequence[Exchange], *, limit: int = 8) -> list[str]:
    """Evidence lines for requests: the request line and the start of its body."""
    lines = []
    for e in exchanges[:limit]:
        body = bytes(e.body[:160]).decode(errors="replace")
        lines.append(e.line() + (f" body={body}" if body else ""))
    if len(exchanges) > limit:
        lines.append(f"... and {len(exchanges) - limit} more")
    return lines


def _never_converged(check: str, problems: list[str], hint: str, extra: Sequence[str] = ()) -> CheckResult:
    return CheckResult(
        check, "failed", "the world never matched the scenario's expect", (*problems[:6], *extra), hint
    )


async def _converge_scenario(world: World, options: GradeOptions) -> list[str]:
    world.start_controller()
    await world.create_primaries()
    return await converge_with_edits(world, options)


async def converge_with_edits(world: World, options: GradeOptions) -> list[str]:
    """Converge, then apply each of the scenario's edits and converge again; the problems left
    (``[]``: the latest spec is matched), stopping at the first convergence that fails."""
    problems = await world.converge(seconds=options.converge_seconds)
    for edit in world.scenario.edits:
        if problems:
            break
        await world.edit_primaries(edit)
        problems = await world.converge(seconds=options.converge_seconds)
    return problems


# -- idempotency ---------------------------------------------------------------------------------


async def check_idempotency(make_world: WorldFactory, options: GradeOptions) -> CheckResult:
    name = "idempotency"
    async with make_world(name) as world:
        problems = await _converge_scenario(world, options)
        if problems:
            return _never_converged(name, problems, "reconcile must read the world and close the gap to the spec")
        # Trailing writes (a requeue due within 5 s included) land before counting starts.
        await world.until_idle(5.0, step=0.25, within=5.0)
        mark = len(world.traffic.exchanges)
        notes: list[str] = []
        subject = world.controller
        if subject.managers:
            before = subject.reconciles() or 0
            manager = subject.managers[-1]
            for controller in manager.controllers.values():
                for obj in world.primaries:
                    meta = obj["metadata"]
                    controller.enqueue(Request(meta.get("namespace", ""), meta["name"]))
            idle = await world.until_idle(5.0, step=0.1)
            notes.append(f"every primary enqueued again: {(subject.reconciles() or 0) - before} reconcile(s)"
                         + _idle_note(idle, 5.0))  # fmt: skip
        await world.stop_controller()
        restart = len(world.traffic.exchanges)
        world.start_controller()
        # A restart re-reconciles everything (after any lease expiry): a manager's is watched until
        # idle, a function controller's is given the whole 30 s.
        idle = await world.until_idle(30.0, step=0.25)
        restarted = len(world.traffic.reads(since=restart))
        reconciles = subject.reconciles()
        notes.append(
            "restarted: " + (f"{reconciles} reconcile(s)" if reconciles is not None else f"{restarted} read(s)")
            + (_idle_note(idle, 30.0) if subject.managers else "")
        )
        await world.drive(600.0, step=10.0)
        notes.append("then ten quiet minutes of fake time")
        writes = world.traffic.writes(since=mark)
        if writes:
            return CheckResult(
                name, "failed", f"{len(writes)} write(s) after convergence, with nothing to change",
                (*notes, *write_lines(writes)),
                "compare desired with observed state and write only the difference (create_or_update, "
                "StatusWriter): a converged resync must make no writes",
            )  # fmt: skip
        return CheckResult(name, "passed", "no write after convergence", tuple(notes))


def _idle_note(took: float | None, limit: float) -> str:
    return f", idle after {took:.2f}s" if took is not None else f", not idle within {limit:.0f}s"


# -- lost updates --------------------------------------------------------------------------------


class _Race:
    """Applies the scenario's edits mid-write; after each edit answers the next child update of every
    primary with 409 (injected: no event follows it, so a swallowed 409 stays lost); then has a
    concurrent writer label the child the controller is about to update (a real, server-side 409),
    and label again each child just before the controller retries an update of it that got an
    injected 409, so that retry succeeds only from a fresh read (a blind one drops the label)."""

    def __init__(self, world: World, edits: Sequence[Any]) -> None:
        self.world = world
        self.lineage = Lineage(world)
        self.pending = list(edits)
        self.conflicts_armed = 0
        self.child_races = 1
        self.applied = 0
        self.touched: list[tuple[Any, str | None, str, str]] = []  # (resource, namespace, name, uid)
        self.injected: list[Exchange] = []
        self._retry_raced: set[str] = set()  # paths whose retry the concurrent writer raced

    def arm(self) -> None:
        """The next child update of every primary gets an injected 409."""
        self.conflicts_armed = len(self.world.primaries)

    async def next_edit(self) -> None:
        await self.world.edit_primaries(self.pending.pop(0))
        self.applied += 1
        self.arm()

    async def _child_update(self, exchange: Exchange) -> bool:
        # Aimed at the children only (objects it created, or owned by a primary): a conflict on the
        # primary's own status write, or on an unrelated object it patches, loses no child update.
        return exchange.method in ("PUT", "PATCH") and await self.lineage.is_child_write(exchange)

    async def conflict_rule(self, exchange: Exchange) -> int | None:
        if self.conflicts_armed > 0 and await self._child_update(exchange):
            self.conflicts_armed -= 1
            self.injected.append(exchange)
            return 409
        return None

    async def before_write(self, exchange: Exchange) -> None:
        retry = exchange.method in ("PUT", "PATCH") and any(e.path == exchange.path for e in self.injected)
        if retry and exchange.path not in self._retry_raced:  # the retry of an update answered 409
            self._retry_raced.add(exchange.path)
            await self._label(exchange)
            return
        if self.pending:
            await self.next_edit()
            return
        if self.child_races <= 0 or not await self._child_update(exchange):
            return
        self.child_races -= 1
        await self._label(exchange)

    async def _label(self, exchange: Exchange) -> None:
        target = await self.world.resolve_path(exchange.path)
        if target is None:
            return
        info, namespace, obj_name = target
        patch = {"metadata": {"labels": {CONCURRENT_WRITER_LABEL: str(len(self.touched) + 1)}}}
        try:
            touched = await self.world.client.patch(info, obj_name, patch, namespace=namespace)
        except NotFound:
            return
        self.touched.append((info, namespace, obj_name, touched["metadata"]["uid"]))

    def rounds(self) -> list[Callable[[], Awaitable[None]]]:
        """A decisive round's two spec changes: back (to the edit before the last, or with a single
        edit to the scenario's original bodies), then to the last edit again."""
        edits = list(self.world.scenario.edits)

        def edit(patch: Any) -> Callable[[], Awaitable[None]]:
            return lambda: self.world.edit_primaries(patch)

        back = edit(edits[-2]) if len(edits) >= 2 else self.world.restore_primaries
        return [back, edit(edits[-1])]

    def unretried(self, exchanges: Sequence[Exchange]) -> list[Exchange]:
        """The injected 409s never followed by an accepted update of the same object."""
        out = []
        for hit in self.injected:
            at = next(i for i, e in enumerate(exchanges) if e is hit)
            later = exchanges[at + 1:]
            if not any(e.path == hit.path and e.method in ("PUT", "PATCH") and 200 <= e.status < 300 for e in later):
                out.append(hit)
        return out


_ROUNDS = 2  # decisive rounds (the spec changed back, then to the last edit) tried until a 409 lands
_SETTLE = 10.0  # fake seconds allowed for the controller to become idle before a decisive change


async def check_lost_update(make_world: WorldFactory, options: GradeOptions) -> CheckResult:
    name = "lost-update"
    hint = "on 409 Conflict re-read and retry (return the error so the queue backs off); never swallow it"
    async with make_world(name) as world:
        if not world.scenario.edits:
            return CheckResult(name, "skipped", "the scenario has no edits: nothing can be lost",
                               hint="give Scenario(edits=[...]) at least one spec change")  # fmt: skip
        conflicts = Conflicts(options.conflict_rate, rng=random.Random(world.seed))
        world.traffic.faults.append(conflicts)
        world.start_controller()
        await world.create_primaries()
        problems = await world.converge(seconds=options.converge_seconds)
        if problems:
            lines = write_lines([e for e in world.traffic.exchanges if e.status == 409])
            return _never_converged(name, problems, hint, [f"{conflicts.injected} update(s) answered 409", *lines])
        mark = len(world.traffic.exchanges)
        # From here the 409s are the race's alone, each placed on purpose: random ones on top could
        # string together on one object (past any backoff within the time allowed) by chance.
        world.traffic.faults.remove(conflicts)
        race = _Race(world, world.scenario.edits)
        world.traffic.faults.insert(0, race.conflict_rule)
        world.traffic.before_write = race.before_write
        await race.next_edit()
        problems = await world.converge(seconds=options.converge_seconds)
        # The decisive round: with the controller idle (it has acted on every edit so far), the spec
        # is changed back and then to the last edit again, and only then armed: its next child update
        # is the one carrying the latest spec, and its 409 is followed by no event of the grader's.
        # Whether it makes one is up to the controller: without a 409 landed, a second round is tried.
        rounds = 0
        decisive: list[Exchange] = []
        for _ in range(_ROUNDS if not problems else 0):
            back, last = race.rounds()
            race.conflicts_armed = 0
            await world.until_idle(_SETTLE, step=0.1, within=2.0)
            await back()
            problems = await world.converge(seconds=options.converge_seconds)
            if problems:
                break
            await world.until_idle(_SETTLE, step=0.1, within=2.0)
            before = len(race.injected)
            await last()
            race.arm()
            rounds += 1
            problems = await world.converge(seconds=options.converge_seconds)
            decisive = race.injected[before:]
            if problems or decisive:
                break
        await world.until_idle(2.0, step=0.1, within=2.0)  # trailing retries land before judging
        world.traffic.before_write = None
        exchanges = world.traffic.exchanges
        real = [e for e in exchanges if e.status == 409 and not e.injected]
        evidence = [
            f"{conflicts.injected + len(race.injected)} update(s) answered 409 by the grader, {len(real)} by the "
            f"server after a concurrent write; {race.applied} edit(s), {race.applied - 1} of them while the controller wrote",
            f"{len(race.injected)} child update(s) answered 409 right after a spec change, {len(decisive)} in the "
            f"decisive round (the spec changed back and forth with the controller idle; {rounds} round(s))",
        ]  # fmt: skip
        if problems:
            evidence += write_lines(race.injected + real)
            return CheckResult(name, "failed", "an update was lost: the world does not match the latest spec",
                               (*problems[:6], *evidence), hint)  # fmt: skip
        writes = world.traffic.writes(since=mark)
        if not writes:
            return CheckResult(name, "skipped", "not exercised: the controller made no write during the check, "
                               "so no update of it could be lost", tuple(evidence),
                               "the scenario's edits must make the controller update what it made")  # fmt: skip
        if not decisive:
            return CheckResult(
                name, "skipped",
                f"not exercised: none of its {len(writes)} write(s) after a spec change was an update (PUT or PATCH) "
                f"of a child, so no 409 could be injected on one ({2 * rounds} extra spec change(s) tried)",
                (*evidence, *write_lines(writes, limit=4)),
                "the scenario's edits must make the controller update children it owns (with an ownerReference "
                "to the primary)",
            )  # fmt: skip
        unretried = race.unretried(exchanges)
        if unretried:
            return CheckResult(name, "failed", f"a 409 on a child update was never retried: {unretried[0].line()}",
                               (*evidence, *write_lines(unretried[1:], limit=4)), hint)  # fmt: skip
        evidence.append(f"each was retried and accepted; {len(race.touched)} concurrent write(s) to a child "
                        "just before the controller's update of it")  # fmt: skip
        for info, namespace, obj_name, uid in race.touched:
            try:
                live = await world.client.get(info, obj_name, namespace=namespace)
            except NotFound:
                continue
            labels = live["metadata"].get("labels") or {}
            if live["metadata"]["uid"] == uid and CONCURRENT_WRITER_LABEL not in labels:
                where = f"{info.plural} {namespace + '/' if namespace else ''}{obj_name}"
                return CheckResult(
                    name, "failed", f"the concurrent writer's change to {where} was overwritten",
                    (*evidence, f"label {CONCURRENT_WRITER_LABEL} missing from {where}", *write_lines(real)),
                    "update the object you read (with its resourceVersion) or patch only your fields; "
                    "never replace it blindly",
                )  # fmt: skip
        return CheckResult(name, "passed", "converged to the latest spec through 409s and concurrent edits",
                           tuple(evidence))  # fmt: skip
