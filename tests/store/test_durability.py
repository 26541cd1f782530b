"""A write is acknowledged only once it is on disk: SIGKILL during concurrent writes loses no acknowledged write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from kubeloop.store import SqliteStore

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from kubeloop.store import SqliteStore

    async def main(path):
        store = await SqliteStore.open(path)
        async def writer(w):
            for i in range(100000):
                key = f"/r/{w}/{i}"
                await store.create(key, lambda rev, key=key: key.encode())
                sys.stdout.write(key + "\\n")
                sys.stdout.flush()
        await asyncio.gather(*(writer(w) for w in range(16)))

    asyncio.run(main(sys.argv[1]))
    """
)


def _write_until_killed(db: Path) -> list[str]:
    """Run 16 concurrent writers in a child process, SIGKILL it mid-stream; return the acknowledged keys."""
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged: list[str] = []
    for line in proc.stdout:
        acknowledged.append(line.strip())
        if len(acknowledged) >= 400:
            break
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate()
    acknowledged.extend(k for k in rest.splitlines() if k)
    assert proc.returncode == -signal.SIGKILL
    return acknowledged


async def test_sigkill_during_concurrent_writes_loses_no_acknowledged_write(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    acknowledged = _write_until_killed(db)
    store = await SqliteStore.open(db)
    try:
        stored = {kv.key for kv in (await store.range("/r/")).items}
        missing = [k for k in acknowledged if k not in stored]
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
        assert store.revision >= len(acknowledged)
        # Revisions keep increasing after the crash.
        kv = await store.create("/r/after-crash", lambda rev: b"x")
        assert kv.mod_revision == store.revision > len(stored) - 1
    finally:
        await store.close()
