"""Small files written durably: certificates, keys, tokens and kubeconfigs.

:func:`write_atomically` guarantees that, whatever moment the process dies or the machine loses
power, ``path`` holds either its previous content (or nothing, if it had none) or all of ``data``,
never a prefix of it:

- ``data`` goes to a new temporary file in the same directory (so the rename below stays on one file
  system), created exclusively with mode 0600 and only then given ``mode``, so a secret is never
  readable by others, not even half-written;
- the file is flushed to disk (``fsync``) before it is renamed over ``path`` (POSIX ``rename`` is
  atomic), and the directory is flushed after the rename, so the new name survives a power cut;
- on an error the temporary file is removed and the error raised (an ``OSError``); a process killed
  before the rename leaves only a ``.<name>.*.tmp`` file beside ``path``, which nothing reads: the next
  start finds ``path`` as it was and keeps it, or does not find it and makes it again.

:func:`make_directory` creates a directory (and its missing parents) durably: each new directory's
entry in its parent is flushed too.

This module sits at the top of the package, below every layer: it imports nothing from kubeloop.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["make_directory", "sync_directory", "write_atomically"]


def sync_directory(directory: Path) -> None:
    """Flush ``directory``'s entries (names created, renamed or removed in it) to disk."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_directory(directory: Path) -> None:
    """``mkdir -p directory``, each directory it creates flushed into its parent."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for created in reversed(missing):
        created.mkdir(exist_ok=True)
        sync_directory(created.parent)


def write_atomically(path: Path, data: bytes, *, mode: int) -> None:
    """Replace ``path`` with ``data`` (file mode ``mode``) atomically and durably; see the module docstring."""
    directory = path.parent
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sync_directory(directory)
