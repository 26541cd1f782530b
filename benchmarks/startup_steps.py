"""Where ``kubeloop up``'s start goes: step marks in both processes, two source trees alternated.

Usage: ``python benchmarks/startup_steps.py --base OTHER/src [--pairs 6]`` (the tree under test is this
repository's ``src``; compile both trees' bytecode first, ``python -m compileall -q SRC``). For each pair and
each tree (alternating which goes first) it runs a first start on a fresh data directory and a restart on it,
each to its first ``/readyz`` 200 (``apiserver.kubeloop_ready``), then stops it. Every ``kubeloop up`` runs
under this file as a wrapper (``--steps-wrapper``) that patches the start-up steps of both processes (the
controller manager is forked from the wrapped process, so it inherits the patches) and writes one line to
stderr per step: the pid, the step, ``time.monotonic()`` and the process's CPU (``time.process_time()``).
It prints, per tree and start, the median of each step in ms after the ``kubeloop up`` process was spawned,
with the process's CPU at that moment in brackets; ``S`` is the API server, ``C`` the controller manager, ``T``
the child that makes a first start's TLS material (``cli/_tls_child.py``).

The steps are function boundaries in ``cli/_cluster.py``, ``cli/_controller_manager.py``, ``server`` and
``_tls.py`` (a step a tree does not have is skipped), so they follow those modules' names: rename one
and its step disappears from the table. docs/performance.md "Start-up round 8" has figures.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import importlib.abc
import importlib.machinery
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

Mark = tuple[str, str, float, float]  # "S" (API server) or "C" (controller manager), step, ms after spawn, CPU ms


def _mark(step: str) -> None:
    os.write(2, f"STEP {os.getpid()} {time.monotonic():.6f} {time.process_time():.6f} {step}\n".encode())


def _timed(step: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _mark(f"{step} start")
        try:
            return function(*args, **kwargs)
        finally:
            _mark(f"{step} end")

    return wrapper


def _timed_async(step: str, function: Callable[..., Any]) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        _mark(f"{step} start")
        try:
            return await function(*args, **kwargs)
        finally:
            _mark(f"{step} end")

    return wrapper


def _patch_server(module: ModuleType) -> None:
    _mark("kubeloop.server imported")
    module.App.startup = _timed_async("app start-up (system namespaces, Service, PriorityClasses)", module.App.startup)


def _patch_tls(module: ModuleType) -> None:
    for name, step in (("ensure_ca", "CA"), ("ensure_tls", "TLS material")):
        if hasattr(module, name):
            setattr(module, name, _timed(step, getattr(module, name)))


def _patch_tls_child(module: Any) -> None:  # the module named in _PATCHES, whose names it replaces
    module.fork_tls_material = _timed("TLS child fork", module.fork_tls_material)


def _patch_bootstrap(module: Any) -> None:  # the module named in _PATCHES, whose names it replaces
    module.bootstrap = _timed_async("RBAC bootstrap", module.bootstrap)


def _patch_kubeconfig(module: Any) -> None:
    write = module.write_kubeconfig

    def write_kubeconfig(path: Path, **kwargs: Any) -> None:
        write(path, **kwargs)
        _mark(f"{path.name} written")

    module.write_kubeconfig = write_kubeconfig


_PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "kubeloop.server": _patch_server,
    "kubeloop.server._tls": _patch_tls,  # where the TLS material was made before start-up round 10
    "kubeloop._tls": _patch_tls,
    "kubeloop.cli._tls_child": _patch_tls_child,
    "kubeloop.cli._bootstrap": _patch_bootstrap,
    "kubeloop.cli._kubeconfig": _patch_kubeconfig,
}


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Runs a module's patch right after the module is first executed."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def run_wrapped(argv: list[str]) -> None:
    """``kubeloop ARGV`` with the step marks (the wrapper side)."""
    sys.meta_path.insert(0, _PatchOnImport())
    import kubeloop.cli._cluster as cluster
    import kubeloop.cli._controller_manager as controller_manager
    from kubeloop.cli import main

    readiness = cluster._Readiness
    set_serving, set_controllers = readiness.set_serving, readiness.set_controllers

    def serving(self: Any) -> None:
        _mark("serving")
        set_serving(self)

    def controllers(self: Any, ready: bool) -> None:
        if ready:
            _mark("controller manager ready")
        set_controllers(self, ready)

    readiness.set_serving = serving  # type: ignore[method-assign]
    readiness.set_controllers = controllers  # type: ignore[method-assign]
    wait_for_file = controller_manager._wait_for_file

    def wait(*args: Any, **kwargs: Any) -> None:
        _mark("imports done")
        wait_for_file(*args, **kwargs)
        _mark("kubeconfig found")

    controller_manager._wait_for_file = wait
    run_controllers = controller_manager._run_builtin_controllers

    async def run_builtin(*args: Any, on_ready: Callable[[], None], **kwargs: Any) -> None:
        def ready() -> None:
            _mark("every controller synced (its CPU)")
            on_ready()

        await run_controllers(*args, on_ready=ready, **kwargs)

    controller_manager._run_builtin_controllers = run_builtin
    controller_manager._builtin_controllers = _timed("manager and controllers built",
                                                     controller_manager._builtin_controllers)
    open_store = cluster._open_store_importing_serving

    async def opened(*args: Any, **kwargs: Any) -> Any:
        store = await open_store(*args, **kwargs)
        _mark("store open, uvicorn imported")
        return store

    cluster._open_store_importing_serving = opened
    main(args=argv, prog_name="kubeloop")


def start(src: str, data_dir: Path) -> tuple[float, list[Mark]]:
    """One ``kubeloop up`` of the tree ``src`` to its first ``/readyz`` 200: (ms, the marks)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import apiserver as bench

    port = bench.free_port()
    server = bench.Server.__new__(bench.Server)
    server.port, server.data_dir = port, data_dir
    spawned = time.monotonic()
    server.proc = subprocess.Popen(
        [sys.executable, __file__, "--steps-wrapper", "up", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=src),
    )  # fmt: skip
    try:
        asyncio.run(bench.kubeloop_ready(server))
        ready = (time.monotonic() - spawned) * 1000
    finally:
        server.proc.terminate()
        err = server.proc.stderr.read().decode() if server.proc.stderr else ""
        server.proc.wait()
    marks: list[Mark] = []
    for line in err.splitlines():
        if line.startswith("STEP "):
            _, pid, mono, cpu, step = line.split(" ", 4)
            # S: the server; T: the TLS material's forked child (start-up round 10); C: the controller manager.
            tls_child = step.startswith(("CA ", "TLS material "))
            who = "S" if int(pid) == server.proc.pid else "T" if tls_child else "C"
            marks.append((who, step, (float(mono) - spawned) * 1000, float(cpu) * 1000))
    return ready, marks


def summary(runs: list[tuple[float, list[Mark]]]) -> list[str]:
    steps: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for ready, marks in runs:
        seen: set[str] = set()
        for who, step, at, cpu in marks:
            key = f"{who} {step}"
            if key not in seen:  # the first time only (a step may repeat, e.g. on shutdown)
                seen.add(key)
                steps[key].append((at, cpu))
        steps["/readyz 200 (the benchmark's client)"].append((ready, 0.0))
    ordered = sorted(steps.items(), key=lambda item: statistics.median(at for at, _ in item[1]))
    return [f"  {statistics.median(at for at, _ in values):8.1f} ms ({statistics.median(c for _, c in values):6.1f})  "
            f"{key}  [n={len(values)}]" for key, values in ordered]  # fmt: skip


def main(trees: dict[str, str], pairs: int) -> None:
    runs: dict[tuple[str, str], list[tuple[float, list[Mark]]]] = collections.defaultdict(list)
    tmp = Path(tempfile.mkdtemp(prefix="kubeloop-startup-steps-"))
    try:
        for i in range(pairs):
            for name in list(trees) if i % 2 == 0 else list(reversed(trees)):
                data_dir = tmp / f"{name}{i}"
                runs[(name, "first start")].append(start(trees[name], data_dir))
                runs[(name, "restart")].append(start(trees[name], data_dir))
            print(f"pair {i + 1}/{pairs} done", file=sys.stderr)
    finally:
        shutil.rmtree(tmp)
    for (name, kind), rows in runs.items():
        print(f"{name} ({trees[name]}), {kind}: median ms after spawn (CPU ms of that process)")
        print("\n".join(summary(rows)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--steps-wrapper"]:
        run_wrapped(sys.argv[2:])
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--base", required=True, help="the other tree's src directory (A)")
        parser.add_argument("--pairs", type=int, default=6)
        args = parser.parse_args()
        here = str(Path(__file__).resolve().parent.parent / "src")
        main({"A": args.base, "B": here}, args.pairs)
