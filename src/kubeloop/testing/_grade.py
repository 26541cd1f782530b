"""``grade()``: run the conformance checks on a controller and return a :class:`~kubeloop.testing.Report`.

Each check (:data:`CHECKS`, in this order) runs in a fresh in-process cluster of its own, with the
built-in garbage collector and namespace controller, on a fake clock; see
:mod:`kubeloop.testing._checks`, :mod:`kubeloop.testing._checks_hotloop` and
:mod:`kubeloop.testing._checks_claims` for what each measures.
A whole grade takes a few seconds of wall time and no sleeping. The same ``seed`` gives the same
faults, so a failing grade reproduces.

Usage::

    report = await grade(ControllerUnderTest.manager(setup), scenario, data_dir=tmp_path)
    report.assert_passed()          # or: report["idempotency"].passed, print(report.render())
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from kubeloop.testing._checks import (
    GradeOptions,
    WorldFactory,
    check_idempotency,
    check_lost_update,
)
from kubeloop.testing._checks_claims import check_ownership, check_status
from kubeloop.testing._checks_hotloop import check_hot_loop
from kubeloop.testing._subject import CheckResult, ControllerUnderTest, Report, Scenario
from kubeloop.testing._world import HotLoop, World

__all__ = ["CHECKS", "GradeOptions", "grade"]

Check = Callable[[WorldFactory, GradeOptions], Awaitable[CheckResult]]

CHECKS: dict[str, Check] = {
    "idempotency": check_idempotency,
    "lost-update": check_lost_update,
    "hot-loop": check_hot_loop,
    "status": check_status,
    "ownership": check_ownership,
}


async def grade(
    controller: ControllerUnderTest | Callable[..., Awaitable[None]],
    scenario: Scenario,
    *,
    checks: Iterable[str] | None = None,
    data_dir: str | Path | None = None,
    seed: int = 7,
    options: GradeOptions | None = None,
) -> Report:
    """Grade ``controller`` (a :class:`ControllerUnderTest`, or an ``async def run(client[, clock])``)
    on ``scenario`` with the named ``checks`` (all by default); clusters live under ``data_dir``
    (a temporary directory by default)."""
    subject = controller if isinstance(controller, ControllerUnderTest) else ControllerUnderTest.function(controller)
    chosen = list(CHECKS) if checks is None else list(checks)
    unknown = [c for c in chosen if c not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {', '.join(unknown)}; known: {', '.join(CHECKS)}")
    opts = options if options is not None else GradeOptions()
    with contextlib.ExitStack() as stack:
        root = Path(data_dir) if data_dir is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))

        def make_world(name: str) -> World:
            where = root / f"grade-{name}"
            where.mkdir(parents=True, exist_ok=True)
            return World(where, subject, scenario, seed=seed, builtins=opts.builtins)

        results = []
        for name in chosen:
            subject.managers.clear()
            try:
                result = await CHECKS[name](make_world, opts)
            except HotLoop as err:
                result = CheckResult(
                    name, "failed", "hot loop: the controller kept sending requests while fake time stood still",
                    (str(err),),
                    "back off between retries (return the error to the work queue), and write only what differs "
                    "from the live object, server defaults included (two writers undoing each other never stop)",
                )  # fmt: skip
            results.append(result)
    return Report(subject.name, tuple(results))
