"""API server benchmark: ``python benchmarks/apiserver.py`` prints one table of ratios.

Every figure is kubeloop divided by a baseline measured in the same run on the same machine, so the
numbers travel between machines better than absolute rates do (method in docs/performance.md):

1. GET one object, 32 concurrent keep-alive HTTPS clients: kubeloop requests/s divided by a bare ASGI
   endpoint that returns the same bytes under the same uvicorn settings (goal >= 0.5).
2. Durable creates, 64 concurrent clients: kubeloop creates/s divided by raw SQLite one-row-per-commit
   inserts/s with WAL and ``synchronous=FULL`` (goal >= 1.5).
3. Watch fan-out: 100 watchers on one resource while 1,000 objects are written; checks every watcher
   got every event in order, reports delivery lag p50/p99 (create sent -> event received).
4. ``kubeloop up`` to ``/readyz`` 200 divided by ``python -c "import kubernetes"`` (goal < 1).

Servers run as subprocesses; the load generator is this process (uvloop, raw asyncio TLS sockets, so the
client costs as little as possible). Traffic goes only to 127.0.0.1. Each part is bounded in time.

Both databases of the durable-create comparison (kubeloop's and the raw SQLite one) live in one temporary
directory under ``--dir`` (default: the system temporary directory), whose filesystem is printed, so both
pay the same fsync. Before timing start-up, kubeloop's bytecode is compiled (``compileall``), as
``pip install`` does; ``import kubernetes`` has its bytecode from its installation too (``--no-compile``
measures without, e.g. for an editable install under ``PYTHONDONTWRITEBYTECODE``). The build measured is
printed first: the pure-Python package, or the compiled one (``KUBELOOP_COMPILE=1 pip install .``). The
servers import kubeloop from where this process does; ``--compiled`` first builds the compiled build
into a copy of ``src/`` (a C compiler and mypy needed, a few minutes) and measures that.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import itertools
import os
import shutil
import socket
import sqlite3
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import yaml

ROUNDS = 3
GET_SECONDS = 2.0
CREATE_SECONDS = 2.0
SQLITE_SECONDS = 1.5
WATCHERS = 100
WATCH_OBJECTS = 1000
STARTUP_RUNS = 5


# ---------------------------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# With two or more cores, servers run on CPU 0 and this load generator on CPU 1, so a server figure is
# one core's worth, and both sides of every ratio get the same core.
PIN = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None


class Server:
    def __init__(self, args: list[str], port: int, *, data_dir: Path | None = None, pin: bool = True) -> None:
        self.port = port
        self.data_dir = data_dir
        if pin and PIN:
            args = ["taskset", "-c", "0", *args]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)

    @classmethod
    def kubeloop(cls, data_dir: Path, *, command: str = "apiserver") -> Server:
        port = free_port()
        args = [sys.executable, "-m", "kubeloop.cli", command, "--port", str(port), "--data-dir", str(data_dir)]
        # ``kubeloop up`` is two processes meant to use two cores: time it unpinned.
        return cls(args, port, data_dir=data_dir, pin=command == "apiserver")

    def token(self) -> str:
        assert self.data_dir is not None
        doc = yaml.safe_load((self.data_dir / "kubeconfig").read_text())
        return str(doc["users"][0]["user"]["token"])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def serve_bare(body_file: str, cert: str, key: str, port: int) -> None:
    """The baseline server: an ASGI endpoint that returns fixed bytes, served exactly as kubeloop serves
    (``kubeloop.cli._cluster._uvicorn_server``: the same uvicorn settings and protocol class, uvloop)."""
    import uvloop

    from kubeloop.cli._cluster import _bind, _uvicorn_server

    body = Path(body_file).read_bytes()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    server = _uvicorn_server(app, Path(cert), Path(key))
    uvloop.run(server.serve(sockets=[_bind("127.0.0.1", port)]))


# ---------------------------------------------------------------------------------------------- client


class Conn:
    """One keep-alive HTTP/1.1 connection over TLS, with just enough parsing for these answers."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str | None) -> None:
        self.reader, self.writer = reader, writer
        self.auth = f"Authorization: Bearer {token}\r\n".encode() if token else b""

    @classmethod
    async def open(cls, port: int, ctx: ssl.SSLContext, token: str | None) -> Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="localhost")
        return cls(reader, writer, token)

    def close(self) -> None:
        self.writer.close()

    def send(self, method: str, path: str, body: bytes = b"") -> None:
        head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n".encode() + self.auth
        if body:
            head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        self.writer.write(head + b"\r\n" + body)

    async def head(self) -> tuple[int, dict[bytes, bytes]]:
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.split(b"\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        return int(lines[0][9:12]), headers

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        self.send(method, path, body)
        status, headers = await self.head()
        if b"content-length" in headers:
            return status, await self.reader.readexactly(int(headers[b"content-length"]))
        data = b""
        while chunk := await self.chunk():
            data += chunk
        return status, data

    async def chunk(self) -> bytes:
        size = int((await self.reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
        data = await self.reader.readexactly(size + 2)
        return data[:-2]


def client_context(ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))


async def wait_ready(port: int, ctx: ssl.SSLContext, timeout: float = 60) -> None:
    """Poll ``GET /readyz`` every 3 ms until 200, over one keep-alive connection (a new one only after
    a failure), so that the polling does not load the starting server with a TLS handshake each time."""
    deadline = time.monotonic() + timeout
    conn: Conn | None = None
    try:
        while True:
            try:
                if conn is None:
                    conn = await Conn.open(port, ctx, None)
                status, _ = await conn.request("GET", "/readyz")
                if status == 200:
                    return
            except (OSError, asyncio.IncompleteReadError, ssl.SSLError, ValueError):
                if conn is not None:
                    conn.close()
                conn = None
            if time.monotonic() > deadline:
                raise RuntimeError(f"server on port {port} not ready in {timeout}s")
            await asyncio.sleep(0.003)
    finally:
        if conn is not None:
            conn.close()


async def kubeloop_ready(server: Server) -> ssl.SSLContext:
    """Wait for a kubeloop server's CA to appear, then for ``/readyz`` 200; returns a verifying context."""
    assert server.data_dir is not None
    ca = server.data_dir / "pki" / "ca.crt"
    deadline = time.monotonic() + 60
    while not (ca.exists() and (server.data_dir / "kubeconfig").exists()):
        if server.proc.poll() is not None or time.monotonic() > deadline:
            detail = server.proc.stderr.read().decode() if server.proc.stderr else ""
            raise RuntimeError(f"kubeloop did not start: {detail}")
        await asyncio.sleep(0.002)
    ctx = client_context(ca)
    await wait_ready(server.port, ctx)
    return ctx


async def closed_loop(
    port: int, ctx: ssl.SSLContext, token: str | None, clients: int, seconds: float,
    step: Callable[[Conn, int], Awaitable[None]],
) -> float:
    """``clients`` connections each running ``step`` back to back for ``seconds``; returns steps/s."""
    conns = [await Conn.open(port, ctx, token) for _ in range(clients)]
    done = 0
    stop_at = time.monotonic() + seconds

    async def worker(conn: Conn, index: int) -> None:
        nonlocal done
        i = 0
        while time.monotonic() < stop_at:
            await step(conn, index * 10_000_000 + i)
            i += 1
            done += 1

    started = time.monotonic()
    await asyncio.gather(*(worker(c, n) for n, c in enumerate(conns)))
    elapsed = time.monotonic() - started
    for c in conns:
        c.close()
    return done / elapsed


# ---------------------------------------------------------------------------------------------- benchmarks


def configmap(name: str, **data: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {"k": "v" * 512}})


async def bench_get(tmp: Path) -> dict[str, Any]:
    server = Server.kubeloop(tmp / "get")
    bare: Server | None = None
    try:
        ctx = await kubeloop_ready(server)
        token = server.token()
        conn = await Conn.open(server.port, ctx, token)
        path = "/api/v1/namespaces/default/configmaps/bench"
        status, _ = await conn.request("POST", "/api/v1/namespaces/default/configmaps", configmap("bench"))
        assert status == 201, status
        status, body = await conn.request("GET", path)
        assert status == 200, status
        conn.close()
        (tmp / "body.json").write_bytes(body)
        port = free_port()
        pki = tmp / "get" / "pki"
        bare = Server(
            [sys.executable, __file__, "_bare", str(tmp / "body.json"), str(pki / "apiserver.crt"),
             str(pki / "apiserver.key"), str(port)], port,
        )  # fmt: skip
        await wait_ready(port, ctx)

        async def get(c: Conn, _: int) -> None:
            code, _body = await c.request("GET", path)
            assert code == 200, code

        # Alternate short rounds so that both sides see the same background load; report medians.
        pairs = []
        for _ in range(ROUNDS):
            ours = await closed_loop(server.port, ctx, token, 32, GET_SECONDS, get)
            theirs = await closed_loop(port, ctx, None, 32, GET_SECONDS, get)
            pairs.append((ours, theirs))
    finally:
        server.stop()
        if bare is not None:
            bare.stop()
    return _medians(pairs) | {"bytes": len(body)}


def _medians(pairs: list[tuple[float, float]]) -> dict[str, float]:
    return {
        "kubeloop": statistics.median(p[0] for p in pairs),
        "baseline": statistics.median(p[1] for p in pairs),
        "ratio": statistics.median(p[0] / p[1] for p in pairs),
    }


def sqlite_inserts_per_second(path: Path, seconds: float) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, key TEXT, value BLOB)")
    value = configmap("x")
    n = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        db.execute("BEGIN")
        db.execute("INSERT INTO t (key, value) VALUES (?, ?)", (f"/registry/core/configmaps/default/x{n}", value))
        db.execute("COMMIT")
        n += 1
    elapsed = time.monotonic() - started
    db.close()
    return n / elapsed


async def bench_create(tmp: Path) -> dict[str, Any]:
    server = Server.kubeloop(tmp / "create")
    try:
        ctx = await kubeloop_ready(server)
        token = server.token()

        names = itertools.count()

        async def create(c: Conn, _: int) -> None:
            name = f"c{next(names)}"
            code, _body = await c.request("POST", "/api/v1/namespaces/default/configmaps", configmap(name))
            assert code == 201, code

        pairs = []
        for n in range(ROUNDS):
            theirs = sqlite_inserts_per_second(tmp / f"raw{n}.db", SQLITE_SECONDS)
            ours = await closed_loop(server.port, ctx, token, 64, CREATE_SECONDS, create)
            pairs.append((ours, theirs))
    finally:
        server.stop()
    return _medians(pairs)


async def bench_watch(tmp: Path) -> dict[str, Any]:
    server = Server.kubeloop(tmp / "watch")
    try:
        ctx = await kubeloop_ready(server)
        token = server.token()
        conn = await Conn.open(server.port, ctx, token)
        _status, body = await conn.request("GET", "/api/v1/namespaces/default/configmaps")
        rv = orjson.loads(body)["metadata"]["resourceVersion"]
        conn.close()
        received: list[list[tuple[str, int, float]]] = [[] for _ in range(WATCHERS)]
        sent_at: dict[str, float] = {}

        async def watch(index: int, ready: asyncio.Event) -> None:
            c = await Conn.open(server.port, ctx, token)
            c.send("GET", f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=120")
            status, _ = await c.head()
            assert status == 200, status
            ready.set()
            buffer = b""
            got = received[index]
            while len(got) < WATCH_OBJECTS:
                buffer += await c.chunk()
                *lines, buffer = buffer.split(b"\n")
                now = time.monotonic()
                for line in lines:
                    if line:
                        event = orjson.loads(line)
                        meta = event["object"]["metadata"]
                        got.append((meta["name"], int(meta["resourceVersion"]), now))
            c.close()

        readies = [asyncio.Event() for _ in range(WATCHERS)]
        watchers = [asyncio.create_task(watch(i, readies[i])) for i in range(WATCHERS)]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 60)
        writers = [await Conn.open(server.port, ctx, token) for _ in range(16)]

        async def write(c: Conn, start: int) -> None:
            for i in range(start, WATCH_OBJECTS, len(writers)):
                name = f"w{i}"
                sent_at[name] = time.monotonic()
                code, _body = await c.request("POST", "/api/v1/namespaces/default/configmaps", configmap(name))
                assert code == 201, code

        started = time.monotonic()
        await asyncio.gather(*(write(c, n) for n, c in enumerate(writers)))
        await asyncio.wait_for(asyncio.gather(*watchers), 120)
        elapsed = time.monotonic() - started
        for c in writers:
            c.close()
    finally:
        server.stop()
    complete = all(len(r) == WATCH_OBJECTS and len({n for n, _, _ in r}) == WATCH_OBJECTS for r in received)
    in_order = all(all(a[1] < b[1] for a, b in itertools.pairwise(r)) for r in received)
    lags = sorted((t - sent_at[name]) * 1000 for r in received for name, _, t in r)
    return {
        "complete": complete,
        "in_order": in_order,
        "events": sum(len(r) for r in received),
        "seconds": elapsed,
        "p50": lags[len(lags) // 2],
        "p99": lags[int(len(lags) * 0.99)],
    }


def import_kubernetes_seconds() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import kubernetes"], check=True)
    return time.monotonic() - started


async def bench_startup(tmp: Path) -> dict[str, Any]:
    """Pairs of (``import kubernetes``, a first start, a restart of it), the order within a pair alternated
    like the other rows' rounds, so that both sides of each ratio see the same moment's machine; the
    ratios are the medians of the pairs' ratios."""

    async def up_to_ready(data_dir: Path) -> float:
        started = time.monotonic()
        server = Server.kubeloop(data_dir, command="up")
        try:
            await kubeloop_ready(server)
            return time.monotonic() - started
        finally:
            server.stop()

    imports: list[float] = []
    first: list[float] = []
    again: list[float] = []
    for i in range(STARTUP_RUNS):
        if i % 2 == 0:
            imports.append(import_kubernetes_seconds())
        first.append(await up_to_ready(tmp / f"start{i}"))
        again.append(await up_to_ready(tmp / f"start{i}"))
        if i % 2 == 1:
            imports.append(import_kubernetes_seconds())
    return {
        "import": statistics.median(imports),
        "first": statistics.median(first),
        "restart": statistics.median(again),
        "first_ratio": statistics.median(f / b for f, b in zip(first, imports, strict=True)),
        "restart_ratio": statistics.median(r / b for r, b in zip(again, imports, strict=True)),
    }


def filesystem_of(path: Path) -> str:
    """``TYPE on DEVICE`` of the mount holding ``path`` (from /proc/mounts; "unknown" elsewhere)."""
    best = ("", "unknown", "unknown")
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            device, mount, fstype, *_ = line.split()
            if (str(path) + "/").startswith(mount.rstrip("/") + "/") and len(mount) >= len(best[0]):
                best = (mount, fstype, device)
    return f"{best[1]} on {best[2]}"


def kubeloop_source() -> Path:
    """The kubeloop package the servers import: the compiled copy after :func:`use_compiled_copy`."""
    copy = os.environ.get("KUBELOOP_BENCH_COPY")
    if copy:
        return Path(copy) / "kubeloop"
    import kubeloop

    return Path(kubeloop.__file__).parent


def build_description() -> str:
    from kubeloop import _build

    return _build.describe(kubeloop_source())


def use_compiled_copy(tmp: Path) -> None:
    """Build the compiled build (``KUBELOOP_COMPILE=1``, setup.py) into a copy of this checkout's sources
    and make every server this benchmark starts import it."""
    root = Path(__file__).resolve().parent.parent
    work = tmp / "compiled"
    work.mkdir()
    for name in ("setup.py", "pyproject.toml"):
        shutil.copy2(root / name, work / name)
    shutil.copytree(root / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    print("compiling the request path with mypyc (a few minutes) ...", file=sys.stderr)
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=work, check=True,
                   env={**os.environ, "KUBELOOP_COMPILE": "1"}, stdout=subprocess.DEVNULL)
    src = str(work / "src")
    os.environ["KUBELOOP_BENCH_COPY"] = src
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))


def compile_bytecode() -> None:
    compileall.compile_dir(kubeloop_source(), quiet=1)


def main(directory: Path | None, *, compile_first: bool, compiled: bool) -> None:
    import uvloop

    if PIN:
        os.sched_setaffinity(0, {1})

    results: list[tuple[str, str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="kubeloop-bench-", dir=directory) as tmp_name:
        tmp = Path(tmp_name)
        fs = filesystem_of(tmp.resolve())
        print(f"data directories: {tmp} ({fs}); load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
        if compiled:
            use_compiled_copy(tmp)
        print(f"kubeloop build: {build_description()} ({kubeloop_source()})", file=sys.stderr)
        if fs.split()[0] in ("tmpfs", "ramfs"):
            print("warning: a memory filesystem makes fsync free; use --dir on a disk", file=sys.stderr)
        print("running: GET one object (32 keep-alive clients) ...", file=sys.stderr)
        g = uvloop.run(bench_get(tmp))
        results.append(("GET one object, 32 clients", f"{g['kubeloop']:,.0f} req/s", f"{g['baseline']:,.0f} req/s (bare ASGI, same bytes)", f"{g['ratio']:.2f}", ">= 0.5"))
        print("running: durable creates (64 clients) ...", file=sys.stderr)
        c = uvloop.run(bench_create(tmp))
        results.append(("durable creates, 64 clients", f"{c['kubeloop']:,.0f} creates/s", f"{c['baseline']:,.0f} inserts/s (SQLite FULL, 1 row/commit)", f"{c['ratio']:.2f}", ">= 1.5"))
        print(f"running: watch fan-out ({WATCHERS} watchers, {WATCH_OBJECTS} objects) ...", file=sys.stderr)
        w = uvloop.run(bench_watch(tmp))
        ok = "all events, in order" if w["complete"] and w["in_order"] else "MISSING OR OUT OF ORDER"
        results.append((f"watch fan-out, {WATCHERS} watchers x {WATCH_OBJECTS} objects", f"lag p50 {w['p50']:.0f} ms, p99 {w['p99']:.0f} ms", f"{w['events']:,} events in {w['seconds']:.1f} s", ok, "every event, in order"))
        print("running: kubeloop up to /readyz ...", file=sys.stderr)
        if PIN:
            os.sched_setaffinity(0, range(os.cpu_count() or 1))  # start-up is timed on every core
        if compile_first:
            compile_bytecode()
        s = uvloop.run(bench_startup(tmp))
        results.append(("kubeloop up -> /readyz (first start)", f"{s['first']:.2f} s", f"{s['import']:.2f} s (import kubernetes)", f"{s['first_ratio']:.2f}", "< 1"))
        results.append(("kubeloop up -> /readyz (restart)", f"{s['restart']:.2f} s", f"{s['import']:.2f} s (import kubernetes)", f"{s['restart_ratio']:.2f}", "< 1"))
    header = ("benchmark", "kubeloop", "baseline", "ratio", "goal")
    widths = [max(len(row[i]) for row in [header, *results]) for i in range(5)]
    for row in [header, tuple("-" * w for w in widths), *results]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_bare":
        serve_bare(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--dir", type=Path, help="where the data directories go (a disk-backed filesystem)")
        parser.add_argument("--no-compile", action="store_true", help="do not compile kubeloop's bytecode first")
        parser.add_argument("--compiled", action="store_true",
                            help="measure the compiled build (KUBELOOP_COMPILE=1), built first into a copy of src/")
        args = parser.parse_args()
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        main(args.dir, compile_first=not args.no_compile, compiled=args.compiled)
