"""``kubeloop controller-manager --kubeconfig F``: the built-in controllers, as their own process.

Contract: connects (with ``--wait-for-kubeconfig``, once the kubeconfig file exists) to the API
server the kubeconfig points to through :class:`kubeloop.client.Client` (retrying while the server
is still starting, up to ``--connect-timeout``), proves it can read
(a one-item list of namespaces, which exercises authentication and RBAC), then prints
:data:`READY_LINE` on stdout. ``kubeloop up`` waits for that line before ``/readyz`` answers 200.
It runs until SIGTERM or SIGINT (exit 0) or, with ``--exit-with-parent``, until its stdin closes
(so it never outlives a ``kubeloop up`` that was killed). An unusable kubeconfig, a refused
credential or no server within the timeout exit 1 with a one-line reason.

Once connected it runs the built-in controllers of :data:`kubeloop.controllers.BUILTIN_CONTROLLERS`
under a :class:`kubeloop.runtime.Manager` and prints the ready line only after they have synced.

``--namespace-deletion-grace-period`` is upstream's ``namespaceDeletionGracePeriod`` (5 s: the wait
before a deleted namespace is emptied, so creations admitted just before the deletion become visible;
``kubeloop up`` keeps it, so a Terminating namespace lists its content for those seconds as on any
cluster). Against kubeloop's own API server 0 is safe: it commits a create only while the namespace is
still at the revision admission judged, so no creation lands after the deletion. Against any other
API server keep the default.

``--terminated-pod-gc-threshold`` is kube-controller-manager's flag of that name (12500): how many
terminated pods (phase Succeeded or Failed) may exist before the pod garbage collector deletes the
oldest; 0 turns that step off (:mod:`kubeloop.controllers._pod_gc`). ``kubeloop up`` runs it with the default.

Importing this module (the ``kubeloop`` command group does, for the command's options) imports neither
asyncio nor anything of the client: ``kubeloop up`` forks its TLS child before it imports asyncio
(start-up round 10), and the functions that run import what they use.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kubeloop.cli._startup import gc_paused

if TYPE_CHECKING:
    from kubeloop.api import ResourceInfo
    from kubeloop.client import Client
    from kubeloop.runtime import Manager, Runnable

__all__ = ["READY_LINE", "controller_manager", "run_controller_manager", "skip_unused_imports"]

READY_LINE = "kubeloop controller-manager: ready"
NAMESPACE_DELETION_GRACE_PERIOD = 5.0  # k/k pkg/controller/namespace/namespace_controller.go
TERMINATED_POD_THRESHOLD = 12500  # k/k cmd/kube-controller-manager (PodGCController defaults)
# How often start-up checks whether every controller has synced: ``/readyz`` waits for the ready line,
# so a coarse poll would add half its period to every start (a check is a few attribute reads).
SYNC_POLL_SECONDS = 0.002


@click.command("controller-manager")
@click.option(
    "--kubeconfig",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Kubeconfig of the cluster to manage (any Kubernetes API server).",
)
@click.option(
    "--connect-timeout", default=30.0, show_default=True, type=float, help="Seconds to wait for the API server."
)
@click.option(
    "--namespace-deletion-grace-period",
    default=NAMESPACE_DELETION_GRACE_PERIOD,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds a deleted namespace waits before it is emptied (upstream's namespaceDeletionGracePeriod).",
)
@click.option(
    "--terminated-pod-gc-threshold",
    default=TERMINATED_POD_THRESHOLD,
    show_default=True,
    type=click.IntRange(min=0),
    help="Terminated pods that may exist before the pod garbage collector deletes the oldest; 0 never.",
)
@click.option("--exit-with-parent", is_flag=True, hidden=True, help="Exit when stdin closes.")
@click.option("--wait-for-kubeconfig", is_flag=True, hidden=True, help="Wait for KUBECONFIG to be written.")
def controller_manager(
    kubeconfig: Path,
    connect_timeout: float,
    namespace_deletion_grace_period: float,
    terminated_pod_gc_threshold: int,
    exit_with_parent: bool,
    wait_for_kubeconfig: bool,
) -> None:
    """Run kubeloop's built-in controllers against the cluster KUBECONFIG points to."""
    try:
        run_controller_manager(
            kubeconfig,
            connect_timeout=connect_timeout,
            namespace_deletion_grace_period=namespace_deletion_grace_period,
            terminated_pod_gc_threshold=terminated_pod_gc_threshold,
            exit_with_parent=exit_with_parent,
            wait_for_kubeconfig=wait_for_kubeconfig,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def run_controller_manager(
    kubeconfig: Path,
    *,
    connect_timeout: float = 30.0,
    namespace_deletion_grace_period: float = NAMESPACE_DELETION_GRACE_PERIOD,
    terminated_pod_gc_threshold: int = TERMINATED_POD_THRESHOLD,
    exit_with_parent: bool,
    wait_for_kubeconfig: bool,
) -> None:
    """The controller manager in this process, until stopped; a ``ValueError`` is the one-line reason
    it could not run. ``kubeloop up`` calls this in a child forked from itself (see ``_child``).
    Start-up, until the ready line, runs with the cyclic garbage collector paused
    (:func:`~kubeloop.cli._startup.gc_paused`)."""
    skip_unused_imports()
    import uvloop

    with gc_paused() as resume_gc:
        uvloop.run(
            _run(
                kubeconfig,
                connect_timeout=connect_timeout,
                namespace_deletion_grace_period=namespace_deletion_grace_period,
                terminated_pod_gc_threshold=terminated_pod_gc_threshold,
                exit_with_parent=exit_with_parent,
                wait_for_kubeconfig=wait_for_kubeconfig,
                on_ready=resume_gc,
            )
        )


def skip_unused_imports() -> None:
    """Keep out of this process optional imports that nothing in it uses (about 0.2 s of start-up).

    httpcore imports ``trio`` whenever it is installed, though this process runs on asyncio, and ``h2``
    though the client speaks HTTP/1.1; httpx imports its own command-line tool (click, rich,
    pygments) whenever those are installed. A ``None``
    entry in ``sys.modules`` makes ``import`` raise ``ImportError``, which both libraries handle as
    "not installed". Only the controller-manager process does this: it runs no user code.
    """
    for name in ("trio", "httpx._main", "h2"):
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


async def _run(
    kubeconfig: Path,
    *,
    connect_timeout: float,
    namespace_deletion_grace_period: float,
    terminated_pod_gc_threshold: int = TERMINATED_POD_THRESHOLD,
    exit_with_parent: bool,
    wait_for_kubeconfig: bool,
    on_ready: Callable[[], None],
) -> None:
    import asyncio

    from kubeloop.api import ApiError
    from kubeloop.client import ConfigError, ConnectionFailed

    loop = asyncio.get_running_loop()
    deadline = loop.time() + connect_timeout
    if wait_for_kubeconfig:
        # Started by ``kubeloop up`` before the server has written our kubeconfig, so our imports overlap
        # its own. Meanwhile, load the controllers, so that starting them does not pay for it later.
        # (Not httpcore: the client sends through its own transport and never imports it.)
        for module in ("kubeloop.runtime", "kubeloop.controllers"):
            with contextlib.suppress(ImportError):
                importlib.import_module(module)
        await asyncio.to_thread(_wait_for_file, kubeconfig, connect_timeout)
    try:
        client = _client(kubeconfig)
    except ConfigError as exc:
        raise ValueError(f"cannot use kubeconfig {kubeconfig}: {exc}") from None
    namespaces = _namespaces()
    async with client:
        # Built before the server answers (no request is made): under ``kubeloop up`` this overlaps the
        # server's own start instead of following it.
        manager, controllers = _builtin_controllers(client, namespace_deletion_grace_period, root_ca(kubeconfig),
                                                    terminated_pod_gc_threshold=terminated_pod_gc_threshold)
        while True:
            try:
                await client.list(namespaces, limit=1)
                break
            except ConnectionFailed as exc:
                if loop.time() > deadline:
                    raise ValueError(f"no API server reachable within {connect_timeout:g}s: {exc.message}") from None
                await asyncio.sleep(0.02)
            except ApiError as exc:
                raise ValueError(f"the API server refused the controller manager: {exc.message}") from None
        await _run_builtin_controllers(manager, controllers, exit_with_parent=exit_with_parent, on_ready=on_ready)


def _builtin_controllers(
    client: Client, namespace_deletion_grace_period: float, ca: str = "", *,
    terminated_pod_gc_threshold: int = TERMINATED_POD_THRESHOLD,
) -> tuple[Manager, dict[str, Runnable]]:
    """A manager with the registry's built-in controllers, not started; the root CA publisher publishes ``ca``."""
    from kubeloop.controllers import (
        NamespaceController,
        PodGarbageCollector,
        RootCACertPublisher,
        add_builtin_controllers,
    )
    from kubeloop.runtime import Manager

    # Runnables other than runtime Controllers are cancelled only after this timeout.
    manager = Manager(client, graceful_shutdown_timeout=1.0)
    controllers = add_builtin_controllers(manager)
    namespace_controller = controllers.get("namespace")
    if isinstance(namespace_controller, NamespaceController):
        namespace_controller.deletion_grace_period = namespace_deletion_grace_period
    publisher = controllers.get("root-ca-cert-publisher")
    if isinstance(publisher, RootCACertPublisher):
        publisher.root_ca = ca
    pod_gc = controllers.get("pod-garbage-collector")
    if isinstance(pod_gc, PodGarbageCollector):
        pod_gc.terminated_pod_threshold = terminated_pod_gc_threshold
    return manager, dict(controllers)


def root_ca(kubeconfig: Path) -> str:
    """The CA (PEM) the kubeconfig's current cluster is trusted with, ``""`` when it names none.

    Upstream's controller manager publishes its ``--root-ca-file``, else the CA data of its own client
    configuration (``startRootCACertPublisher``); kubeloop's has no such flag and takes the latter."""
    import base64

    from kubeloop.cli._kubeconfig import read_kubeconfig

    own = read_kubeconfig(kubeconfig)
    if own is not None:
        return own.ca_pem.decode()
    import yaml

    try:
        conf = yaml.safe_load(kubeconfig.read_text()) or {}
        contexts = {c.get("name"): c.get("context") or {} for c in conf.get("contexts") or ()}
        cluster_name = contexts.get(conf.get("current-context"), {}).get("cluster")
        cluster = next((c.get("cluster") or {} for c in conf.get("clusters") or () if c.get("name") == cluster_name), {})
        if data := cluster.get("certificate-authority-data"):
            return base64.b64decode(data).decode()
        if path := cluster.get("certificate-authority"):
            return (kubeconfig.parent / Path(path).expanduser()).read_text()
    except (OSError, ValueError, AttributeError, TypeError, yaml.YAMLError):
        pass
    return ""


async def _run_builtin_controllers(
    manager: Manager, controllers: dict[str, Runnable], *, exit_with_parent: bool, on_ready: Callable[[], None]
) -> None:
    """Run the manager; print READY_LINE (then call ``on_ready``) once it and every controller have synced."""
    import asyncio

    from kubeloop.controllers import has_synced

    running = asyncio.ensure_future(manager.run())
    stopping = asyncio.ensure_future(_wait_for_stop(exit_with_parent=exit_with_parent))
    try:
        while not (manager.informers.has_synced() and all(has_synced(c) for c in controllers.values())):
            if running.done():
                running.result()
            if stopping.done():
                return
            await asyncio.sleep(SYNC_POLL_SECONDS)
        print(READY_LINE, flush=True)
        on_ready()
        await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if running.done():
            running.result()
    finally:
        for task in (running, stopping):
            task.cancel()
        await asyncio.gather(running, stopping, return_exceptions=True)


def _client(kubeconfig: Path) -> Client:
    """A client for ``kubeconfig``. One that ``kubeloop up`` wrote (with its CA in ``pki/ca.crt`` beside
    it) is read directly, the same server, CA and token without loading a general kubeconfig parser
    (lightkube's, about 0.1 s of start-up); any other goes through :meth:`Client.from_kubeconfig`."""
    from kubeloop.cli._kubeconfig import read_kubeconfig
    from kubeloop.client import Client

    own = read_kubeconfig(kubeconfig)
    ca_file = kubeconfig.parent / "pki" / "ca.crt"
    with contextlib.suppress(OSError):
        if own is not None and ca_file.read_bytes() == own.ca_pem:
            return Client.from_url(own.server, token=own.token, ca_file=str(ca_file))
    return Client.from_kubeconfig(str(kubeconfig))


def _wait_for_file(path: Path, timeout: float) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise ValueError(f"{path} was not written within {timeout:g}s")
        time.sleep(0.005)


def _namespaces() -> ResourceInfo:
    from kubeloop.api import BUILTIN_RESOURCES

    for info in BUILTIN_RESOURCES:
        if info.group == "" and info.plural == "namespaces":
            return info
    raise ValueError("namespaces are not a built-in resource")


async def _wait_for_stop(*, exit_with_parent: bool) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if exit_with_parent:
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

        async def parent_gone() -> None:
            while await reader.read(4096):
                pass
            stop.set()

        watcher = asyncio.create_task(parent_gone())
        try:
            await stop.wait()
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
    else:
        await stop.wait()
