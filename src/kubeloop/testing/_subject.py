"""What the grader grades: a controller under test, a scenario to run it on, and the report it gets.

* :class:`ControllerUnderTest` is any controller that runs in-process on a client the grader hands
  it: :meth:`ControllerUnderTest.manager` for a ``kubeloop.runtime`` controller (a ``setup(manager)``
  function, like ``examples/configmap_mirror.py``'s), :meth:`ControllerUnderTest.function` for any
  ``async def run(client)`` or ``run(client, clock)`` that runs until cancelled. The grader starts
  it (possibly several times: a restart is how a resync is forced) and cancels it.
* :class:`Scenario` says what to do to the world (the primary objects to create, merge patches to
  apply to them, CRDs to install first) and what converged means (``expect``).
* :class:`Report` holds one :class:`CheckResult` per check: passed, failed or skipped, a one-line
  summary, the evidence (requests, objects and fields involved) and a one-line hint on the fix.

Everything here is plain data; the checks live in :mod:`kubeloop.testing._checks`.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from kubeloop.api import Clock, ResourceInfo
from kubeloop.client import NAMESPACE_ALL, Client
from kubeloop.runtime import LeaderElectionOptions, Manager

__all__ = ["CheckResult", "ControllerUnderTest", "Expect", "Outcome", "Report", "Scenario"]

Expect = Callable[[Client, dict[str, Any]], Awaitable[object]]
"""``await expect(client, primary)``: raise ``AssertionError`` or ``NotFound`` (or return ``False``)
while the world does not yet match ``primary`` (the latest version of one primary object); anything
else is a match."""

Outcome = Literal["passed", "failed", "skipped"]

_RECONCILE_RESULTS = ("success", "error", "requeue_after", "requeue")


@dataclass(slots=True)
class ControllerUnderTest:
    """A controller the grader can start on a client (and ``clock``, ``rng``) and cancel."""

    name: str
    start: Callable[[Client, Clock, random.Random], Coroutine[Any, Any, None]]
    managers: list[Manager] = field(default_factory=list, repr=False)

    @classmethod
    def manager(
        cls,
        setup: Callable[[Manager], object],
        *,
        name: str = "controller",
        namespace: str = NAMESPACE_ALL,
        leader_election: LeaderElectionOptions | None = None,
    ) -> ControllerUnderTest:
        """A ``kubeloop.runtime`` controller: each start builds a :class:`~kubeloop.runtime.Manager`
        on the grader's client, clock and rng, calls ``setup(manager)`` and runs the manager."""
        subject = cls(name, _unset_start)

        async def start(client: Client, clock: Clock, rng: random.Random) -> None:
            manager = Manager(client, namespace=namespace, leader_election=leader_election, clock=clock, rng=rng)
            setup(manager)
            subject.managers.append(manager)
            await manager.run()

        subject.start = start
        return subject

    @classmethod
    def function(cls, run: Callable[..., Awaitable[None]], *, name: str | None = None) -> ControllerUnderTest:
        """Any in-process controller: ``async def run(client)`` or ``run(client, clock)``, running
        until cancelled. Give it the clock if it sleeps or backs off: the grader's time is fake."""
        positional = [
            p for p in inspect.signature(run).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]  # fmt: skip
        takes_clock = len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in positional)

        async def start(client: Client, clock: Clock, rng: random.Random) -> None:
            await (run(client, clock) if takes_clock else run(client))

        return cls(name or str(getattr(run, "__name__", "controller")), start)

    def reconciles(self) -> int | None:
        """Reconciles the latest started manager ran (``None`` for :meth:`function` controllers)."""
        if not self.managers:
            return None
        manager = self.managers[-1]
        total = 0.0
        for controller in manager.controllers:
            for result in _RECONCILE_RESULTS:
                labels = {"controller": controller, "result": result}
                total += manager.metrics.sample("controller_runtime_reconcile_total", labels) or 0.0
        return int(total)


async def _unset_start(client: Client, clock: Clock, rng: random.Random) -> None:
    raise RuntimeError("unreachable: replaced in ControllerUnderTest.manager")


@dataclass(frozen=True)
class Scenario:
    """The world to grade a controller in.

    ``resource`` is the primary kind; ``objects`` its objects to create (namespaced ones land in
    ``namespace`` unless they name one); ``edits`` are merge patches applied to every primary in
    turn (spec changes the controller must follow; the lost-update check needs at least one);
    ``crds`` are CustomResourceDefinitions installed (and waited for) before anything else;
    ``ready_conditions`` are the condition types that claim "done" for the status check.
    """

    resource: ResourceInfo
    objects: Sequence[Mapping[str, Any]]
    expect: Expect
    _: KW_ONLY
    edits: Sequence[Mapping[str, Any]] = ()
    namespace: str = "default"
    crds: Sequence[Mapping[str, Any]] = ()
    ready_conditions: Sequence[str] = ("Ready", "Available")


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict: ``outcome``, a one-line ``summary``, ``evidence`` lines (the requests,
    objects and fields involved) and a one-line ``hint`` on the fix (set when it failed)."""

    check: str
    outcome: Outcome
    summary: str
    evidence: tuple[str, ...] = ()
    hint: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    def render(self) -> str:
        lines = [f"[{self.outcome.upper()}] {self.check}: {self.summary}"]
        lines += [f"    {line}" for line in self.evidence]
        if self.hint and self.failed:
            lines.append(f"    hint: {self.hint}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Report:
    """The grade of ``controller``: one result per check, in the order they ran."""

    controller: str
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """No check failed (skipped ones say why they could not measure)."""
        return not any(r.failed for r in self.results)

    def __getitem__(self, check: str) -> CheckResult:
        for result in self.results:
            if result.check == check:
                return result
        raise KeyError(check)

    def failed(self) -> list[str]:
        return [r.check for r in self.results if r.failed]

    def render(self) -> str:
        verdict = "passed" if self.passed else f"failed {', '.join(self.failed())}"
        head = f"kubeloop grade of {self.controller}: {verdict}"
        return "\n".join([head, *(r.render() for r in self.results)])

    def assert_passed(self) -> None:
        """Raise ``AssertionError`` with the rendered report unless every check passed or was skipped."""
        if not self.passed:
            raise AssertionError(self.render())
