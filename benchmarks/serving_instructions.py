"""Instructions per create through the real server: ``python benchmarks/serving_instructions.py`` (valgrind).

``benchmarks/instructions.py`` calls the ASGI app directly; this one counts what the whole API server
process executes per durable create as a client sees it: ``kubeloop apiserver`` (uvicorn with kubeloop's
protocol class, uvloop, TLS, the app, the store's committer and SQLite thread) runs under
``valgrind --tool=callgrind``, and this process (the load generator of ``benchmarks/apiserver.py``: 64
keep-alive HTTPS connections, each POSTing a new ConfigMap back to back) drives it. After a warm-up on the
same connections (TLS handshakes, every cache) the counters are zeroed (``callgrind_control --zero``),
``--requests`` creates are made, and the counters dumped (``callgrind_control --dump``): the figure is the
dump's total divided by the creates. Callgrind runs the server's threads one at a time and slowly, so the
64 clients always have a create queued: the store commits batches of about 64, as it does when the server
is CPU-bound on its core, which is the case this measures.

Per create, the dump's self cost is also split by ELF object (libpython, libssl, libcrypto, uvloop,
httptools, libsqlite3, orjson, libc ...; ``--objects``). Not counted: the kernel (the syscalls themselves:
``send``, ``recv``, ``epoll_wait``, ``fsync``, futexes), and the time lost to thread hand-offs. Each tree's
``src/`` is frozen and compiled first, as ``benchmarks/instructions.py`` does (``--tree`` repeatable; trees
alternate round by round when ``--rounds`` > 1). Repeated runs agree to about 0.5%.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apiserver as bench
from instructions import frozen_src

CLIENTS = 64
REQUESTS = 1280
WARM_UP = 4  # creates per connection before the counters are zeroed
START_SECONDS = 900  # how long the server under callgrind may take to serve
KEEP: Path | None = None  # where each run's dump is copied (--keep), for callgrind_annotate


def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


async def _ready(server: bench.Server) -> ssl.SSLContext:
    """``benchmarks/apiserver.py``'s kubeloop_ready with a start-up bound fit for callgrind on a loaded
    machine (its 60 s is not: a server under callgrind can take minutes to write its CA)."""
    assert server.data_dir is not None
    ca = server.data_dir / "pki" / "ca.crt"
    deadline = time.monotonic() + START_SECONDS
    while not (ca.exists() and (server.data_dir / "kubeconfig").exists()):
        if server.proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("kubeloop apiserver under callgrind did not start")
        await asyncio.sleep(0.05)
    ctx = bench.client_context(ca)
    await bench.wait_ready(server.port, ctx, timeout=START_SECONDS)
    return ctx


def _remove_dumps(work: Path) -> None:
    """Dumps written before the one asked for (none unless callgrind dumped on its own)."""
    for stale in work.glob("callgrind.out.*"):
        stale.unlink()


def _callgrind_control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True)


def _wait_for(pattern: Path, seconds: float) -> list[Path]:
    """The dump files matching ``pattern`` (one per thread), once callgrind has written them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = sorted(pattern.parent.glob(pattern.name))
        if found:
            time.sleep(1.0)  # let callgrind finish writing them
            return sorted(pattern.parent.glob(pattern.name))
        time.sleep(0.2)
    raise SystemExit(f"callgrind wrote no dump to {pattern}")


def self_cost_by_object(dump: Path) -> tuple[int, dict[str, int]]:
    """The dump's total Ir and each ELF object's self cost (the cost lines of its functions, not the
    inclusive cost lines that follow a ``calls=`` line)."""
    names: dict[str, str] = {}
    by_object: collections.Counter[str] = collections.Counter()
    total = 0
    current = "?"
    after_call = False
    pattern = re.compile(r"\((\d+)\)(?: (.*))?")
    with dump.open() as lines:
        for line in lines:
            if line[:1].isdigit() or line[:1] in "+-*":
                if after_call:
                    after_call = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    by_object[current] += int(parts[1])
            elif line.startswith("ob="):
                m = pattern.match(line[3:].strip())
                if m:
                    if m.group(2):
                        names[m.group(1)] = m.group(2)
                    current = names.get(m.group(1), "?")
                else:
                    current = line[3:].strip()
            elif line.startswith("cob="):
                m = pattern.match(line[4:].strip())
                if m and m.group(2):
                    names[m.group(1)] = m.group(2)
            elif line.startswith("calls="):
                after_call = True
            elif line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
    return total, dict(by_object)


async def _measure(tree: Path, work: Path, requests: int) -> tuple[list[int], dict[str, int], int]:
    data_dir = work / "data"
    port = bench.free_port()
    out = work / "callgrind.out"
    env = dict(os.environ, PYTHONPATH=str(tree / "src"), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    args = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.%p", "--dump-instr=no", "--separate-threads=yes",
            sys.executable, "-m", "kubeloop.cli", "apiserver", "--port", str(port), "--data-dir", str(data_dir)]
    if bench.PIN:
        args = ["taskset", "-c", "0", *args]
    proc = _spawn(args, env)
    server = bench.Server.__new__(bench.Server)
    server.proc, server.port, server.data_dir = proc, port, data_dir
    try:
        ctx = await _ready(server)
        token = server.token()
        conns = [await bench.Conn.open(port, ctx, token) for _ in range(CLIENTS)]
        names = iter(range(10**9))

        async def creates(conn: bench.Conn, count: int) -> None:
            for _ in range(count):
                status, _body = await conn.request(
                    "POST", "/api/v1/namespaces/default/configmaps", bench.configmap(f"c{next(names)}")
                )
                assert status == 201, status

        await asyncio.gather(*(creates(c, WARM_UP) for c in conns))
        pid = str(proc.pid)
        # The server is valgrind's own process (taskset execs it): the pid callgrind_control names.
        _callgrind_control("--zero", pid)
        per_client = requests // CLIENTS
        await asyncio.gather(*(creates(c, per_client) for c in conns))
        _remove_dumps(work)
        _callgrind_control("--dump", pid)
        dumps = _wait_for(out.with_name(f"callgrind.out.{pid}*"), 120)
        for c in conns:
            c.close()
    finally:
        server.stop()
    # One dump per thread (callgrind.out.PID-01 is the main thread: the event loop).
    threads = []
    objects: collections.Counter[str] = collections.Counter()
    for dump in dumps:
        total, by_object = self_cost_by_object(dump)
        threads.append(total)
        objects.update(by_object)
        if KEEP is not None:
            KEEP.mkdir(parents=True, exist_ok=True)
            shutil.copy(dump, KEEP / f"{work.name}-{dump.name.rsplit('-', 1)[-1]}.callgrind")
    return threads, dict(objects), per_client * CLIENTS


def _short(name: str) -> str:
    base = Path(name).name
    return re.sub(r"\.cpython-\d+-[^.]+\.so$", ".so", base)


async def main(trees: list[Path], requests: int, rounds: int, objects: bool) -> None:
    if bench.PIN:
        os.sched_setaffinity(0, {1})
    work = Path(tempfile.mkdtemp(prefix="kubeloop-serving-ir-"))
    results: dict[Path, list[tuple[list[int], dict[str, int], int]]] = {t: [] for t in trees}
    try:
        with _frozen(trees) as frozen:
            for r in range(rounds):
                for tree in trees if r % 2 == 0 else trees[::-1]:
                    run_dir = work / f"{r}-{trees.index(tree)}"
                    run_dir.mkdir()
                    threads, by_object, n = await _measure(frozen[tree], run_dir, requests)
                    results[tree].append((threads, by_object, n))
                    print(f"round {r + 1} {tree}: {_line(threads, n)} ({n} creates)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for tree, rows in results.items():
        def median(values: list[float]) -> float:
            return sorted(values)[len(values) // 2]

        loop = median([threads[0] / n for threads, _, n in rows])
        rest = median([sum(threads[1:]) / n for threads, _, n in rows])
        whole = median([sum(threads) / n for threads, _, n in rows])
        print(f"{tree}: medians over {len(rows)} run(s), Ir per create: process {whole:,.0f}, "
              f"event-loop thread {loop:,.0f}, other threads {rest:,.0f}")
        if objects:
            threads, by_object, n = rows[0]
            merged: collections.Counter[str] = collections.Counter()
            for name, cost in by_object.items():
                merged[_short(name)] += cost
            total = sum(threads)
            for name, cost in merged.most_common(14):
                print(f"    {name:<44} {cost / n:>10,.0f}  ({cost / total:5.1%})")


def _line(threads: list[int], n: int) -> str:
    return (f"process {sum(threads) / n:,.0f} Ir per create = event-loop thread {threads[0] / n:,.0f} "
            f"+ other threads {sum(threads[1:]) / n:,.0f}")


class _frozen:
    """Every tree's src/ frozen (benchmarks/instructions.py's frozen_src), for the whole run."""

    def __init__(self, trees: list[Path]) -> None:
        self._trees = trees
        self._stack: list[object] = []

    def __enter__(self) -> dict[Path, Path]:
        copies = {}
        for tree in self._trees:
            manager = frozen_src(tree)
            copies[tree] = manager.__enter__()
            self._stack.append(manager)
        return copies

    def __exit__(self, *exc: object) -> None:
        for manager in reversed(self._stack):
            manager.__exit__(None, None, None)  # type: ignore[attr-defined]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", type=Path, help="a checkout to serve from (repeat to compare)")
    parser.add_argument("--requests", type=int, default=REQUESTS, help=f"creates counted (a multiple of {CLIENTS})")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--objects", action="store_true", help="split each tree's first run by ELF object")
    parser.add_argument("--keep", type=Path, help="copy each run's callgrind dump into this directory")
    arguments = parser.parse_args()
    KEEP = arguments.keep
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    chosen = [t.resolve() for t in arguments.tree] if arguments.tree else [Path(__file__).resolve().parent.parent]
    import uvloop

    uvloop.run(main(chosen, arguments.requests, arguments.rounds, arguments.objects))
