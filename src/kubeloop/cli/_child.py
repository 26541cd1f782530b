"""The controller manager as a child process of ``kubeloop up``: forked warm, respawned when it exits.

DESIGN.md keeps two processes (API server and controller manager, over loopback HTTPS, each with its
own identity). What this module changes is only how the second one starts:

* **First start: fork.** :func:`fork_controller_manager` runs before the parent starts its event
  loop, while it has only one thread, right after it imported what both processes need
  (:data:`SHARED_IMPORTS`). The child therefore starts with those modules loaded and without a new
  interpreter, and imports only the client and the controllers, in parallel with the parent
  importing the server. The child closes the parent's data-directory lock and listening socket, puts
  its stdout and stdin on pipes, and runs :func:`~kubeloop.cli._controller_manager.run_controller_manager`
  exactly as ``kubeloop controller-manager --exit-with-parent --wait-for-kubeconfig`` would; it
  ends with ``os._exit`` and never returns into the parent's stack.
* **Restarts: spawn.** Once the parent's event loop and store threads run, forking is no longer
  safe, so :class:`ControllerManager` starts later instances as ``python -m kubeloop.cli
  controller-manager`` (the same command, a fresh interpreter). If the parent has more than one
  thread at start-up (embedding), the first start spawns too.

Either way the parent sees a :class:`ChildProcess`: stdout lines (the ready line), ``wait``,
``terminate``, ``kill``; the child's stdin is a pipe the parent never writes, so the child sees
end-of-file and exits when the parent dies, even by SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["SHARED_IMPORTS", "ChildProcess", "ControllerManager", "ForkedProcess", "fork_controller_manager"]

Echo = Callable[[str], None]
_RESTART_BACKOFF_MAX = 30.0
# Modules both processes import: the parent loads them before forking so the child gets them free.
# (Quantities, with ``fractions``: the server's strategies and the controllers' resource arithmetic; no
# longer loaded by importing kubeloop.api since the protobuf decoder, which needs them, is loaded on use.)
SHARED_IMPORTS = ("ssl", "orjson", "uvloop", "kubeloop.api", "kubeloop.api._quantity")


class _Closeable(Protocol):
    def close(self) -> None: ...


class ChildProcess(Protocol):
    """What the supervisor needs of a child, forked or spawned (``asyncio.subprocess.Process`` fits)."""

    @property
    def returncode(self) -> int | None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...

    async def wait(self) -> int: ...


class ForkedProcess:
    """A child made by :func:`fork_controller_manager`; :meth:`attach` its stdout inside the loop."""

    def __init__(self, pid: int, *, stdin_fd: int, stdout_fd: int) -> None:
        self.pid = pid
        self._stdin_fd: int | None = stdin_fd
        self._stdout_fd: int | None = stdout_fd
        self._returncode: int | None = None
        self.stdout: asyncio.StreamReader | None = None  # made in attach(): a reader binds to the running loop
        self._transport: asyncio.BaseTransport | None = None

    async def attach(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._stdout_fd is not None
        pipe = os.fdopen(self._stdout_fd, "rb", buffering=0)
        self._stdout_fd = None  # the pipe object owns it now
        self.stdout = reader = asyncio.StreamReader()
        self._transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)

    @property
    def returncode(self) -> int | None:
        if self._returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._returncode = os.waitstatus_to_exitcode(status)
                self._close()
        return self._returncode

    def _signal(self, sig: signal.Signals) -> None:
        if self.returncode is None:  # never signal a reaped pid: it may belong to someone else now
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    async def wait(self) -> int:
        while (code := self.returncode) is None:
            await asyncio.sleep(0.01)
        return code

    def _close(self) -> None:
        if self._stdin_fd is not None:
            os.close(self._stdin_fd)
            self._stdin_fd = None
        if self._stdout_fd is not None:
            os.close(self._stdout_fd)
            self._stdout_fd = None
        if self._transport is not None:
            self._transport.close()
            self._transport = None


def fork_controller_manager(kubeconfig: Path, *, close_in_child: Sequence[_Closeable]) -> ForkedProcess | None:
    """Fork the controller manager (see the module docstring); ``None`` if this process has threads."""
    for name in SHARED_IMPORTS:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    if threading.active_count() > 1:
        return None
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its behaviour is tested through ``kubeloop up``
        _child_main(kubeconfig, stdin=(stdin_r, stdin_w), stdout=(stdout_r, stdout_w), close=close_in_child)
    os.close(stdin_r)
    os.close(stdout_w)
    return ForkedProcess(pid, stdin_fd=stdin_w, stdout_fd=stdout_r)


def _child_main(
    kubeconfig: Path, *, stdin: tuple[int, int], stdout: tuple[int, int], close: Sequence[_Closeable]
) -> None:  # pragma: no cover - runs in the forked child
    code = 1
    try:
        for resource in close:
            resource.close()
        os.close(stdin[1])
        os.close(stdout[0])
        os.dup2(stdin[0], 0)
        os.dup2(stdout[1], 1)
        os.close(stdin[0])
        os.close(stdout[1])
        # The parent forks with its collector paused for its own start-up: this process starts with the
        # collector on, as a spawned one does, and run_controller_manager pauses it until ready.
        gc.enable()
        from kubeloop.cli._controller_manager import run_controller_manager

        try:
            run_controller_manager(kubeconfig, exit_with_parent=True, wait_for_kubeconfig=True)
            code = 0
        except ValueError as exc:
            print(f"Error: {exc}", file=sys.stderr)
        except KeyboardInterrupt:
            code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


class ControllerManager:
    """Supervises the controller manager child: reports readiness, restarts it with backoff."""

    def __init__(
        self, kubeconfig: Path, *, echo: Echo, on_ready: Callable[[bool], None], first: ForkedProcess | None = None
    ) -> None:
        self._kubeconfig = kubeconfig
        self._echo = echo
        self._on_ready = on_ready
        self._first = first
        self._process: ChildProcess | None = None
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._supervise())

    async def _spawn(self) -> tuple[ChildProcess, AsyncIterator[bytes]]:
        if self._first is not None:
            forked, self._first = self._first, None
            self._process = forked
            await forked.attach()
            assert forked.stdout is not None
            return forked, forked.stdout
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "kubeloop.cli", "controller-manager",
            "--kubeconfig", str(self._kubeconfig), "--exit-with-parent", "--wait-for-kubeconfig",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stdout is not None
        return process, process.stdout

    async def _supervise(self) -> None:
        from kubeloop.cli._controller_manager import READY_LINE

        backoff = 1.0
        while not self._stopping:
            started = time.monotonic()
            process, lines = await self._spawn()
            self._process = process
            async for raw in lines:
                line = raw.decode(errors="replace").rstrip()
                if line == READY_LINE:
                    self._echo("Controller manager is running")
                    self._on_ready(True)
                elif line:
                    self._echo(f"controller-manager: {line}")
            code = await process.wait()
            self._on_ready(False)
            if self._stopping:
                return
            if time.monotonic() - started > 60:
                backoff = 1.0
            self._echo(f"Controller manager exited with code {code}; restarting in {backoff:g}s")
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _RESTART_BACKOFF_MAX)

    async def stop(self) -> None:
        self._stopping = True
        process = self._process if self._process is not None else self._first
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if isinstance(process, ForkedProcess):
            process._close()
