"""A first start's TLS material, made by a forked child on the core the start leaves idle.

A start that has no CA or serving certificate yet (a first start, a new bind address) spends about 40 ms
of the API server's CPU on them, most of it importing ``cryptography``, and the server's CPU is the
critical path of ``kubeloop up`` (docs/performance.md, start-up round 10). :func:`fork_tls_material`
forks a child that runs :func:`kubeloop._tls.ensure_tls` and exits. It forks as early as the start can:
right after the data-directory lock and the listening socket, before the parent's shared imports and the
controller manager's fork, while the second core has nothing to do. The parent's file-writing thread
:meth:`TlsChild.wait`\\ s for the child (a blocking ``waitpid``, which releases the GIL) before its own
``ensure_ca`` and ``ensure_tls``, which then find the files and only read them, as a restart does.

The child saves time and decides nothing: whatever it does not make (an error, a signal, a kill), the
parent's own calls make, or report as a start-up error, exactly as without it. The two never write at the
same time (the parent waits first), and every file is written atomically (:mod:`kubeloop._files`), so a
child that dies mid-way leaves each file whole or absent. Nothing is forked when the material is all
there (a restart) or when the process already has threads (``run`` embedded in a threaded program, where a
fork is unsafe): the parent makes the material itself, as before. The child imports only
:mod:`kubeloop._tls` and ``cryptography``, never the server, and leaves with ``os._exit`` (no atexit
handlers, no buffers of the parent's flushed twice). It closes the listening socket it inherits and keeps
the data-directory lock until it exits, so that no other server takes the directory while it writes, even
if the parent is killed.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["TlsChild", "fork_tls_material"]


class _Closeable(Protocol):
    def close(self) -> None: ...


class TlsChild:
    """The forked maker of the TLS material; :meth:`wait` returns once it has exited (idempotent)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def wait(self) -> int:
        """Block until the child has exited; its exit code (0: the material is made)."""
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)  # releases the GIL; retried on EINTR (PEP 475)
            except ChildProcessError:  # reaped by someone else: the parent's own calls decide anyway
                self.returncode = -1
            else:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def fork_tls_material(data_dir: Path, *, address: str, close_in_child: Sequence[_Closeable]) -> TlsChild | None:
    """Fork the child that makes what ``ensure_tls(data_dir, address=address)`` would make; ``None`` when
    nothing needs making or this process has threads (see the module docstring)."""
    from kubeloop._tls import needs_making

    if not needs_making(data_dir, address=address) or threading.active_count() > 1:
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its effect is tested through ``kubeloop up``
        _child_main(data_dir, address, close_in_child)
    return TlsChild(pid)


def _child_main(data_dir: Path, address: str, close: Sequence[_Closeable]) -> None:  # pragma: no cover - the child
    code = 1
    try:
        for resource in close:
            resource.close()
        from kubeloop._tls import ensure_tls

        ensure_tls(data_dir, address=address)
        code = 0
    except BaseException:  # whatever is missing, the parent makes (or reports as a start-up error)
        pass
    finally:
        os._exit(code)
