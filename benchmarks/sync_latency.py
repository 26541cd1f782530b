"""The controller manager's first sync with a fixed delay on every request, from two source trees.

Usage: ``python benchmarks/sync_latency.py --base OTHER/src [--delay-ms 25] [--runs 5] [--rounds 2]``.
Each run builds a fresh in-process cluster (the real server on SQLite, reached over ASGI), wraps the
server so that every HTTP request waits ``--delay-ms`` before it is served (a controller manager
against a remote API server: the sync is bound by round trips, not by CPU), and times a
:class:`~kubeloop.runtime.Manager` with every built-in controller from ``run()`` until its informers and
every controller report synced, the condition ``kubeloop up`` waits for before ``/readyz`` answers 200.
Trees alternate round by round, each run in its own process (``PYTHONPATH`` is the tree); it prints
the median and fastest run per tree and round. docs/performance.md "Start-up round 5" has figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


class Delayed:
    """Every HTTP request waits ``delay`` seconds before ``app`` sees it."""

    def __init__(self, app: ASGIApp, delay: float) -> None:
        self._app = app
        self._delay = delay

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            await asyncio.sleep(self._delay)
        await self._app(scope, receive, send)


async def time_to_synced(data_dir: Path, delay: float) -> float:
    from kubeloop.api import SystemClock
    from kubeloop.client import Client
    from kubeloop.controllers import add_builtin_controllers, has_synced
    from kubeloop.runtime import Manager
    from kubeloop.testing import InProcessCluster

    async with (
        InProcessCluster(data_dir, clock=SystemClock()) as cluster,
        Client.from_asgi(Delayed(cluster.app, delay), clock=cluster.clock) as client,
    ):
        manager = Manager(client, clock=cluster.clock, graceful_shutdown_timeout=0)
        controllers = add_builtin_controllers(manager)
        started = time.monotonic()
        running = asyncio.ensure_future(manager.run())
        try:
            while not (manager.informers.has_synced() and all(has_synced(c) for c in controllers.values())):
                if running.done():
                    running.result()
                await asyncio.sleep(0.001)
            return time.monotonic() - started
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

def child(delay: float, runs: int) -> None:
    """In the tree's process: ``runs`` syncs, one line of seconds each."""
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            print(asyncio.run(time_to_synced(Path(tmp), delay)), flush=True)


def main(trees: dict[str, str], delay_ms: float, runs: int, rounds: int) -> None:
    for i in range(rounds):
        for name in list(trees) if i % 2 == 0 else list(reversed(trees)):
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--delay-ms", str(delay_ms), "--runs", str(runs)],
                env=dict(os.environ, PYTHONPATH=trees[name]), capture_output=True, text=True, check=True,
            )  # fmt: skip
            times = sorted(float(line) for line in out.stdout.split())
            print(f"round {i + 1} {name}: delay {delay_ms:g} ms, synced in median {times[len(times) // 2] * 1e3:.0f} ms "
                  f"(fastest {times[0] * 1e3:.0f} ms) over {len(times)} runs")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the other tree's src directory (A)")
    parser.add_argument("--delay-ms", type=float, default=25.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.delay_ms / 1e3, args.runs)
    else:
        if not args.base:
            parser.error("--base is required")
        here = str(Path(__file__).resolve().parent.parent / "src")
        main({"A": args.base, "B": here}, args.delay_ms, args.runs, args.rounds)
