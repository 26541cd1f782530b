"""``GET /api/v1/namespaces/NS/pods/NAME/log``: a container's log, as upstream 1.32 serves it.

The order of upstream's checks (``pkg/registry/core/pod/rest/log.go`` ``LogREST.Get``, then the kubelet's
``server.getContainerLogs`` and ``Kubelet.validateContainerLogStatus``, ``pkg/kubelet/kubelet_pods.go``):

1. The options (:mod:`._pod_log_options`): 400 when one does not decode, 422 when they are invalid.
2. The pod (404), the container (:func:`._kubelet_access.validate_container`, 400).
3. A pod with no node yet: 204 No Content and no body (``LogLocation`` returns no location and
   ``StreamObject`` answers ``StatusNoContent``); ``kubectl logs`` then prints nothing.
4. The node (404) and its kubelet; no kubelet answering: a 500 ``Get "https://IP:10250/containerLogs/NS/
   NAME/C": dial tcp IP:10250: connect: connection refused``.
5. The kubelet reads the container's status (``status.containerStatuses``, then the init and ephemeral
   ones) and answers 400 (``GenericHttpResponseChecker`` turns the kubelet's 400 into a BadRequest whose
   message is the kubelet's text) with ``container "C" in pod "P" is not available`` (no status yet);
   with ``previous``: ``previous terminated container "C" in pod "P" not found`` unless
   ``lastState.terminated`` has a container ID; a container that terminated with no ID and no earlier
   run: ``... is terminated``; a waiting one: ``... is waiting to start: REASON`` (``ErrImagePull`` and
   ``ImagePullBackOff`` have their own wording); no state at all: ``... is waiting to start - no logs yet``.
6. The log itself: ``text/plain``, 200. kubeloop's simulated kubelet runs no process, so every log is
   empty, whatever ``tailLines``, ``limitBytes``, ``timestamps`` or the since fields ask for.

``follow=true`` on a running container keeps the response open (chunked, as the kubelet's flushed stream)
until that container stops (its status shows another state or another container ID), the pod is deleted
or replaced, the client goes away, or the store closes. It waits on a store watch of the pod from the
revision it read, never on a timer. Following a container that is not running ends at once, as the
kubelet's reader stops at the end of a stopped container's log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson

from kubeloop.api import BadRequest, ResourceInfo
from kubeloop.server._http import Receive, Request, Send, send_bytes
from kubeloop.server._kubelet_access import kubelet_of, method_not_allowed, read_pod, validate_container
from kubeloop.server._pod_log_options import parse_pod_log_options
from kubeloop.server._rest import get_object
from kubeloop.server._state import ServerState, object_key
from kubeloop.store import Compacted, StoreEvent

__all__ = ["container_log_status", "serve_pod_log"]

_TEXT = "text/plain"
_STREAM_HEADERS = [(b"content-type", b"text/plain"), (b"cache-control", b"no-cache, private")]


def _status_of(pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for entry in status.get(key) or ():
            if isinstance(entry, dict) and entry.get("name") == container:
                return entry
    return None


def container_log_status(pod: dict[str, Any], container: str, previous: bool) -> str:
    """The container ID whose log the kubelet reads, or its 400 (see the module docstring, step 5)."""
    pod_name = (pod.get("metadata") or {}).get("name", "")
    quoted = f'container "{container}" in pod "{pod_name}"'
    entry = _status_of(pod, container)
    if entry is None:
        raise BadRequest(f"{quoted} is not available")
    last = (entry.get("lastState") or {}).get("terminated")
    state = entry.get("state") or {}
    waiting, running, terminated = state.get("waiting"), state.get("running"), state.get("terminated")
    if previous:
        if not last or not last.get("containerID"):
            raise BadRequest(f"previous terminated {quoted} not found")
        return str(last["containerID"])
    if running is not None:
        return str(entry.get("containerID") or "")
    if terminated is not None:
        if terminated.get("containerID"):
            return str(terminated["containerID"])
        if last and last.get("containerID"):
            return str(last["containerID"])
        raise BadRequest(f"{quoted} is terminated")
    if last is not None:
        if not last.get("containerID"):
            raise BadRequest(f"{quoted} is terminated")
        return str(last["containerID"])
    if waiting is not None:
        reason = str(waiting.get("reason") or "")
        if reason == "ErrImagePull":
            raise BadRequest(f"{quoted} is waiting to start: image can't be pulled")
        if reason == "ImagePullBackOff":
            raise BadRequest(f"{quoted} is waiting to start: trying and failing to pull image")
        raise BadRequest(f"{quoted} is waiting to start: {reason}")
    raise BadRequest(f"{quoted} is waiting to start - no logs yet")


def _runs(pod: dict[str, Any] | None, uid: str, container: str, container_id: str) -> bool:
    """Whether ``pod`` (None: deleted) still runs ``container`` as ``container_id``."""
    if pod is None or (pod.get("metadata") or {}).get("uid") != uid:
        return False
    entry = _status_of(pod, container)
    return bool(entry and "running" in (entry.get("state") or {}) and entry.get("containerID") == container_id)


async def serve_pod_log(state: ServerState, info: ResourceInfo, request: Request, namespace: str, name: str,
                        send: Send) -> None:
    if request.method != "GET":  # the log route has GET alone: go-restful's 405 for the rest
        raise method_not_allowed()
    options = parse_pod_log_options(request.query, name)
    pod = await read_pod(state, namespace, name)
    container = validate_container(pod, options.container)
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        await send({"type": "http.response.start", "status": 204, "headers": [_STREAM_HEADERS[1]]})
        await send({"type": "http.response.body", "body": b""})
        return
    kubelet = await kubelet_of(state, node_name)
    if not kubelet.answers:
        url = kubelet.url(f"/containerLogs/{namespace}/{name}/{container}")
        raise kubelet.dial_error(f'Get "{url}": {{dial}}')
    container_id = container_log_status(pod, container, options.previous)
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    if not options.follow or options.previous or not _runs(pod, uid, container, container_id):
        await send_bytes(send, 200, b"", content_type=_TEXT)
        return
    # Read again with the revision to watch from: the pod read above may be older than the watch's start.
    kv = await get_object(state, info, namespace, name)
    current: dict[str, Any] = orjson.loads(kv.value)
    if not _runs(current, uid, container, container_id):
        await send_bytes(send, 200, b"", content_type=_TEXT)
        return
    await send({"type": "http.response.start", "status": 200, "headers": list(_STREAM_HEADERS)})
    try:
        await _follow(state, object_key(info, namespace, name), kv.mod_revision, request._receive,
                      lambda obj: _runs(obj, uid, container, container_id))
    finally:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _follow(state: ServerState, key: str, after: int, receive: Receive,
                  runs: Callable[[dict[str, Any]], bool]) -> None:
    """Return once ``key`` is deleted or ``runs(pod)`` is false for a change of it after revision ``after``,
    the client disconnects, or the store closes."""
    watch = state.store.watch(key, after=after)

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    client = asyncio.ensure_future(disconnected())
    batch: asyncio.Future[list[StoreEvent]] | None = None
    try:
        while True:
            batch = asyncio.ensure_future(watch.next_batch())
            done, _ = await asyncio.wait({batch, client}, return_when=asyncio.FIRST_COMPLETED)
            if client in done:
                return
            try:
                events = batch.result()
            except Compacted:  # the pod's history is gone: as a kubelet restart, the stream ends
                return
            if not events:  # the store closed
                return
            for event in events:
                if event.kv.key != key:  # another pod whose name starts with this one's
                    continue
                if event.type == "DELETE" or not runs(orjson.loads(event.kv.value)):
                    return
    finally:
        watch.close()
        for task in (batch, client):
            if task is not None and not task.done():
                task.cancel()
        pending = [t for t in (batch, client) if t is not None]
        await asyncio.wait(pending)
        for task in pending:
            if not task.cancelled():
                task.exception()
