"""Running the embedded control plane: what ``kubeloop up`` and ``kubeloop apiserver`` do.

Start-up order (progress lines on ``echo``; DESIGN "Command-line contract"):

1. lock the data directory (one server per directory) and bind the listening socket, so a busy
   port fails at once with a one-line reason; then, when the TLS material is missing (a first start),
   fork the child that makes it (``_tls_child``: about 40 ms of CPU, most of it importing
   ``cryptography``, moved off this process onto the core its start leaves idle);
2. fork the controller manager process before this one starts its event loop (``_child``: it
   starts warm and its imports overlap ours; it waits for its kubeconfig, then retries until the
   server answers); then start the event loop, and handle SIGTERM/SIGINT from here on;
3. on a worker thread, the server's modules (``kubeloop.server``), then the files: the token file (on a
   second thread) while the CA is made (once the TLS child, if any, has exited: then ``ensure_ca`` and
   ``ensure_tls`` read what it made, and make only what it did not), then the kubeconfig files, which need only those two
   (``DIR/controller-manager.kubeconfig`` first, which the controller manager waits for, then
   ``DIR/kubeconfig`` for the admin; on the second thread), while the serving certificate is made. Each
   file is fsynced before its rename and its directory after (milliseconds each on a disk): these
   threads' waits overlap the CPU work of the others and of step 4. Everything is written before the
   first request is served and anything reports ready;
4. open the SQLite store (importing uvicorn and the HTTP protocol meanwhile, while the store's
   thread waits on SQLite's fsyncs), build the API app, and create the bootstrap objects (system
   namespaces, default RBAC) through the app itself, while step 3 makes the TLS material (a first start's
   certificates and the bootstrap's commits are both disk-bound); once the token file is written, put
   the app behind authentication, impersonation and RBAC (with escalation prevention);
5. tune the garbage collector for serving (:func:`_tune_gc`), then serve HTTPS with uvicorn
   (uvloop, httptools) on the bound socket.

Steps 1 and 2 run with the cyclic garbage collector paused (:func:`~kubeloop.cli._startup.gc_paused`):
they import a great deal and free almost nothing, so the collections they would trigger walk live
objects for nothing, before the fork, in the one process both processes' start waits for. It is back
on right after the fork (the controller manager keeps it paused until it is ready), so nothing this
process frees during its start-up is left behind when step 5 freezes what start-up built.

``GET /readyz`` is 500 (upstream's failed-check answer) until the server serves and, when there is a
controller manager, until it reported ready; then it is 200. SIGTERM or SIGINT stop the controller
manager and the server, close the store, and return normally (exit 0); so does the HTTPS server
stopping on its own. A controller manager that exits is restarted with backoff. Every start-up
failure is a :class:`StartupError` with a one-line reason.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gc
import signal
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kubeloop._files import make_directory
from kubeloop.cli._startup import gc_paused

if TYPE_CHECKING:
    import asyncio

    from kubeloop.cli._bootstrap import ASGIApp
    from kubeloop.cli._child import ControllerManager, ForkedProcess
    from kubeloop.cli._tls_child import TlsChild
    from kubeloop.server import App, TlsMaterial, User
    from kubeloop.store import Store

__all__ = ["ServeOptions", "StartupError", "run"]

Echo = Callable[[str], None]
KUBECONFIG = "kubeconfig"
CM_KUBECONFIG = "controller-manager.kubeconfig"
DATABASE = "kubeloop.db"


class StartupError(Exception):
    """The server cannot start; the message is the one-line reason shown to the user."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    data_dir: Path
    address: str = "127.0.0.1"
    port: int = 6443
    controllers: bool = True


def run(options: ServeOptions, *, echo: Echo) -> None:
    """Serve until SIGTERM/SIGINT. Raises :class:`StartupError` when start-up fails."""
    with gc_paused() as resume_gc:
        _run(options, echo=echo, resume_gc=resume_gc)


def _run(options: ServeOptions, *, echo: Echo, resume_gc: Callable[[], None]) -> None:
    data_dir = options.data_dir.resolve()
    try:
        make_directory(data_dir)  # durably: the files made in it must not lose their directory to a power cut
    except OSError as exc:
        raise StartupError(f"cannot create data directory {data_dir}: {exc.strerror or exc}") from None
    lock = _lock(data_dir)
    try:
        sock = _bind(options.address, options.port)
    except BaseException:
        lock.close()
        raise
    first_start = not (data_dir / DATABASE).exists()
    echo(f"{'Creating' if first_start else 'Starting'} kubeloop in {data_dir}")
    from kubeloop.cli._tls_child import fork_tls_material

    # First, while the second core is idle: a child that makes missing TLS material (step 3 waits for it).
    tls_child = fork_tls_material(data_dir, address=options.address, close_in_child=(sock,))
    try:
        _run_forked(options, data_dir, lock, sock, tls_child, echo=echo, resume_gc=resume_gc)
    finally:
        if tls_child is not None:
            tls_child.wait()  # a start that failed early leaves no child behind


def _run_forked(
    options: ServeOptions,
    data_dir: Path,
    lock: IO[bytes],
    sock: socket.socket,
    tls_child: TlsChild | None,
    *,
    echo: Echo,
    resume_gc: Callable[[], None],
) -> None:
    forked: ForkedProcess | None = None
    if options.controllers:
        from kubeloop.cli._child import fork_controller_manager

        # The controller manager starts first, before this process has an event loop or threads, so
        # it is forked warm and its imports overlap ours; it waits for its kubeconfig, which is
        # (re)written by _serve_locked with this start's port.
        (data_dir / CM_KUBECONFIG).unlink(missing_ok=True)
        forked = fork_controller_manager(data_dir / CM_KUBECONFIG, close_in_child=(lock, sock))
    # Collecting again from here on: this process's own start-up garbage stays collectable (it is frozen
    # with everything else once serving, see _tune_gc); the controller manager keeps it paused to ready.
    resume_gc()
    import uvloop

    try:
        uvloop.run(_serve(options, data_dir, sock, forked, tls_child, echo=echo))
    finally:
        sock.close()
        lock.close()
    echo("Stopped")


def _lock(data_dir: Path) -> IO[bytes]:
    handle = (data_dir / "lock").open("wb")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise StartupError(f"another kubeloop server is already using {data_dir}") from None
    return handle


def _bind(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(
                f"port {port} on {address} is already in use; stop whatever uses it, or pick another port "
                "with --port (--port 0 picks a free one)"
            ) from None
        raise StartupError(f"cannot listen on {address}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


async def _serve(
    options: ServeOptions,
    data_dir: Path,
    sock: socket.socket,
    forked: ForkedProcess | None,
    tls_child: TlsChild | None,
    *,
    echo: Echo,
) -> None:
    import asyncio

    # Signals are handled from here on, so a stop during start-up is a clean stop too.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    readiness = _Readiness(controllers=options.controllers)
    manager: ControllerManager | None = None
    if options.controllers:
        from kubeloop.cli._child import ControllerManager

        manager = ControllerManager(
            data_dir / CM_KUBECONFIG, echo=echo, on_ready=readiness.set_controllers, first=forked
        )
        manager.start()
    try:
        await _serve_locked(options, data_dir, sock, readiness, manager, stop, tls_child, echo=echo)
    finally:
        if manager is not None:
            await manager.stop()


async def _serve_locked(
    options: ServeOptions,
    data_dir: Path,
    sock: socket.socket,
    readiness: _Readiness,
    manager: ControllerManager | None,
    stop: asyncio.Event,
    tls_child: TlsChild | None,
    *,
    echo: Echo,
) -> None:
    import asyncio

    from kubeloop.api import ApiError
    from kubeloop.cli._kubeconfig import server_url, write_kubeconfig

    url = server_url(options.address, sock.getsockname()[1])
    kubeconfig = data_dir / KUBECONFIG

    loop = asyncio.get_running_loop()
    tokens_written: asyncio.Future[None] = loop.create_future()

    def prepare_files() -> TlsMaterial:
        """The server's modules, then the token file, the TLS material and both kubeconfigs, on worker
        threads: each file is fsynced before its rename and its directory after (milliseconds each on a
        disk), and those waits, like the store's, overlap the CPU work of the other threads (a first
        start's certificates, the main thread's store, serving imports, app and bootstrap), instead of
        following every import (step 3). A second thread writes the token file while this one makes the
        CA, then the kubeconfigs (the controller manager's first, which it waits for), which need only
        the CA and the tokens, while this one makes the serving certificate."""
        from kubeloop.server import (
            ADMIN_USER,
            CONTROLLER_MANAGER_USER,
            ensure_ca,
            ensure_tls,
            ensure_token_file,
        )

        def write_tokens() -> dict[str, str]:
            written = ensure_token_file(data_dir / "tokens.csv")
            loop.call_soon_threadsafe(_resolve, tokens_written)
            return written

        def write_kubeconfigs(ca_pem: bytes, tokens: Mapping[str, str]) -> None:
            write_kubeconfig(data_dir / CM_KUBECONFIG, server=url, ca_pem=ca_pem, user=CONTROLLER_MANAGER_USER,
                             token=tokens[CONTROLLER_MANAGER_USER])
            write_kubeconfig(kubeconfig, server=url, ca_pem=ca_pem, user=ADMIN_USER, token=tokens[ADMIN_USER])

        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kubeloop-files") as pool:
            tokens = pool.submit(write_tokens)
            if tls_child is not None:
                tls_child.wait()  # then ensure_ca and ensure_tls read what it made, or make what it did not
            ca_pem = ensure_ca(data_dir)
            kubeconfigs = pool.submit(write_kubeconfigs, ca_pem, tokens.result())
            tls = ensure_tls(data_dir, address=options.address)  # the CA is there: the serving certificate
            kubeconfigs.result()
        return tls

    writing = asyncio.ensure_future(asyncio.to_thread(prepare_files))
    try:
        store = await _open_store_importing_serving(data_dir / DATABASE)
    except BaseException:
        await asyncio.gather(writing, return_exceptions=True)
        raise
    core: App | None = None
    try:

        async def load_tokens() -> Mapping[str, User]:
            either: set[asyncio.Future[Any]] = {tokens_written, writing}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if not tokens_written.done():
                await writing  # the writer failed before the token file was in place: its error
            from kubeloop.server import load_token_file

            return load_token_file(data_dir / "tokens.csv")

        try:
            # The app is built and bootstrapped while the writer makes the TLS material and kubeconfigs;
            # nothing is served before both are done.
            core, app = await _build_app(
                store,
                tokens=load_tokens,
                readiness=readiness,
                server_address=url.removeprefix("https://"),
                controllers=options.controllers,
                service_account_key_file=data_dir / "pki" / "sa.key",
            )
            tls = await writing  # every file in place before the first request is answered
        except ApiError as exc:
            raise StartupError(exc.message) from None
        except RuntimeError as exc:
            raise StartupError(str(exc)) from None
        _tune_gc()
        server = _uvicorn_server(app, tls.cert, tls.key)
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.002)
        if serving.done():
            serving.result()
            raise StartupError("the HTTPS server stopped during start-up")
        readiness.set_serving()
        loop.call_soon(_load_builtin_schemas)
        echo(f"Serving the Kubernetes API at {url}")
        if manager is None:
            _announce(echo, url, kubeconfig)
        else:
            readiness.on_ready = lambda: _announce(echo, url, kubeconfig)
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        echo("Shutting down")
        if manager is not None:
            await manager.stop()
        await _shutdown(server, serving, store)
    finally:
        await asyncio.gather(writing, return_exceptions=True)  # a start-up that failed leaves no writer behind
        tokens_written.cancel()
        if core is not None:
            await core.shutdown()
        await store.close()


def _load_builtin_schemas() -> None:
    """Parse the built-in kinds' schemas (:func:`kubeloop.api.definitions`, about 8 ms of CPU), which every write
    of a built-in kind needs, once serving has begun: a first start's bootstrap has parsed them already,
    and on a restart, which writes nothing before it serves, the server is idle until the controller
    manager (still importing) connects, whose first sync would otherwise pay for them in its first write
    (start-up round 9). The same parse, at a moment when the loop has nothing else to do."""
    from kubeloop.api import definitions

    definitions()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _open_store(path: Path) -> Store:
    from kubeloop.store import SqliteStore

    try:
        return await SqliteStore.open(path)
    except Exception as exc:  # sqlite3 and OS errors: say which file, in one line
        raise StartupError(f"cannot open the store {path}: {exc}") from None


async def _open_store_importing_serving(path: Path) -> Store:
    """Open the store and, while its thread loads the database (SQLite's fsyncs, on a first start the
    schema's), import the HTTPS server on this one: the import would otherwise come after, with the
    store thread idle. (The server's own modules are meanwhile imported by the thread that writes the
    data directory's files, see step 3.)"""
    import asyncio

    opening = asyncio.ensure_future(_open_store(path))
    try:
        await asyncio.sleep(0)  # the store's thread has its load job from here on
        _import_serving()
    except BaseException:
        opened = (await asyncio.gather(opening, return_exceptions=True))[0]
        if not isinstance(opened, BaseException):
            await opened.close()
        raise
    return await opening


def _import_serving() -> None:
    import uvicorn  # noqa: F401

    import kubeloop.cli._serving  # noqa: F401


async def _shutdown(server: Any, serving: asyncio.Task[None], store: Store) -> None:
    """Stop accepting, let requests in flight finish, then end watches by closing the store."""
    import asyncio
    import logging

    # Clients that keep idle TLS connections open would otherwise make uvicorn log an ERROR.
    logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)
    server.should_exit = True
    done, _ = await asyncio.wait({serving}, timeout=0.5)
    if not done:
        await store.close()  # watch streams end when the store closes
    await serving


def _announce(echo: Echo, url: str, kubeconfig: Path) -> None:
    echo(f"kubeloop is ready at {url}")
    echo(f"export KUBECONFIG={kubeconfig}")


class _Readiness:
    """What ``/readyz`` waits for: the server serving and, when there is one, the controller manager."""

    def __init__(self, *, controllers: bool) -> None:
        self.serving = False
        self.controllers = not controllers
        self.on_ready: Callable[[], None] | None = None

    @property
    def ready(self) -> bool:
        return self.serving and self.controllers

    def set_serving(self) -> None:
        self.serving = True
        self._maybe_announce()

    def set_controllers(self, ready: bool) -> None:
        self.controllers = ready
        self._maybe_announce()

    def _maybe_announce(self) -> None:
        if self.ready and self.on_ready is not None:
            callback, self.on_ready = self.on_ready, None
            callback()



# Allocations (net of frees) between young-generation collections; CPython's default is 700.
GC_YOUNG_THRESHOLD = 10_000


def _tune_gc() -> None:
    """Garbage collection for a serving process, set once start-up is done.

    Under load every request in flight holds a few dozen young containers (its coroutines, frames,
    scope and object dicts): with 64 requests in flight the young generation never has fewer than
    about 4,000 objects, and at CPython's default threshold the collector walks all of them every
    few dozen requests (about 7 µs per create). Request objects die by reference counting; a higher
    threshold only makes collections rarer. What start-up built (modules, the app, the bootstrap
    objects) lives as long as the process: freezing it keeps full collections from walking it again
    and again (no collection first: start-up leaves no cyclic garbage, and it would cost start-up).
    """
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


def _uvicorn_server(app: Any, cert: Path, key: Path) -> Any:
    import uvicorn

    from kubeloop.cli._serving import uvicorn_config

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            # kubeloop installs its own handlers (clean exit 0); uvicorn's would re-raise the signal.
            yield

    return Server(uvicorn_config(app, cert=cert, key=key))


async def _build_app(
    store: Store,
    *,
    tokens: Callable[[], Awaitable[Mapping[str, User]]],
    readiness: _Readiness,
    server_address: str,
    controllers: bool = True,
    service_account_key_file: Path | None = None,
) -> tuple[App, ASGIApp]:
    """The API app (its ``/readyz`` follows ``readiness``), bootstrapped, behind the security chain, which
    authenticates the bearer tokens ``tokens()`` gives (awaited once the bootstrap is done)."""
    from kubeloop.api import SystemClock
    from kubeloop.cli._bootstrap import bootstrap
    from kubeloop.server import (
        ENVTEST_DISABLED_ADMISSION_PLUGINS,
        CachedTokenAuthenticator,
        RbacEscalationCheck,
        create_app,
        secure,
        store_rbac_authorizer,
    )

    # Without the controller manager no namespace gets its ``default`` ServiceAccount, so, as envtest
    # does (controller-runtime pkg/internal/testing/controlplane/apiserver.go, defaultArgs), the
    # ServiceAccount admission plugin is disabled; with it, the server admits pods as a real cluster does.
    disabled = () if controllers else ENVTEST_DISABLED_ADMISSION_PLUGINS
    core = create_app(store=store, clock=SystemClock(), server_address=server_address,
                      disable_admission_plugins=disabled, service_account_key_file=service_account_key_file)
    core.ready = lambda: readiness.ready
    authorizer = store_rbac_authorizer(store)
    core.admission.append(RbacEscalationCheck(authorizer))
    await core.startup()
    await bootstrap(core)
    # kube-apiserver caches its token authenticators' successes for 10 s (pkg/kubeapiserver/authenticator/config.go):
    # a ServiceAccount token's ES256 signature and bound-object reads are paid once per token per 10 s.
    accounts = core.service_account_tokens
    cached = CachedTokenAuthenticator(accounts.authenticate, audiences=accounts.audiences, clock=core.state.clock)
    return core, secure(core, tokens=await tokens(), authorizer=authorizer, token_authenticator=cached)
