"""``Client``: an async client for any Kubernetes API server, over one ``httpx.AsyncBaseTransport``.

Objects are plain JSON dicts; a resource is named by a :class:`~kubeloop.api.ResourceInfo`, so
custom resources work exactly like built-ins. The transport is a URL's (kubeconfig, in-cluster, or
explicit: :class:`~kubeloop.client._transport.HTTP11Transport`) or an ASGI app's reached in-process
(:meth:`Client.from_asgi`): the same seam, ``handle_async_request``. Each request is an
``httpx.Request`` handed straight to it, with the ``httpx.Auth`` flow run around it.

Contract:
* Every non-2xx answer raises the matching ``kubeloop.api`` error, rebuilt from the server's
  ``Status`` by ``error_from_status``; no exception from httpx or ssl escapes: a request that got
  no answer raises :class:`~kubeloop.client.ConnectionFailed` (a ``ServiceUnavailable``).
* A 429 or 5xx answer carrying ``Retry-After: N`` is retried after N seconds (on the injected
  clock), up to ``max_retries`` times (client-go ``rest/request.go`` ``checkWait``, default 10);
  without the header, or when retries run out, the error is raised with ``retry_after_seconds``.
* Namespace: ``None`` means :attr:`Client.default_namespace` (for writes, the object's own
  ``metadata.namespace`` first); :data:`NAMESPACE_ALL` (``""``) lists or watches every namespace.
  The namespace is ignored for cluster-scoped kinds.
* :meth:`Client.watch` is an async generator: break out of it or ``aclose()`` it to close the
  stream; cancelling the consumer closes it too.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import gc
import ssl
from collections.abc import AsyncGenerator, Mapping
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlencode

import httpx
import orjson

from kubeloop.api import (
    ApiError,
    Clock,
    Expired,
    ResourceInfo,
    SystemClock,
    error_from_status,
)
from kubeloop.client._asgi import ASGIApp, StreamingASGITransport
from kubeloop.client._auth import BearerToken
from kubeloop.client._errors import ConfigError, map_transport_error
from kubeloop.client._kubeconfig import load_kubeconfig
from kubeloop.client._listjson import loads as pieced_loads
from kubeloop.client._transport import HTTP11Transport, ResponseBody
from kubeloop.client._watch import WatchDecoder, WatchEvent

__all__ = ["NAMESPACE_ALL", "Client", "PatchType"]

NAMESPACE_ALL = ""
PatchType = Literal["json", "merge", "strategic", "apply"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
USER_AGENT = "kubeloop/0.1.0"
DEFAULT_TIMEOUT = 30.0
# HTTP/1.1 needs a connection per request in flight; a controller with many concurrent requests
# would otherwise close and re-handshake TLS connections all the time, so every open connection may
# stay idle. Watches hold one each, hence the headroom.
MAX_CONNECTIONS = 128
KEEPALIVE_EXPIRY = 30.0
# Decoding a large list allocates millions of small dicts; the cyclic GC would scan them again and
# again while they are built (they cannot form cycles), which can double the decode time. Once built,
# they are moved straight to the oldest GC generation (gc.freeze + unfreeze: no scan) rather than left
# young, where the next collection would walk all of them at once (about 50 ms for 5,000 pods).
LARGE_BODY = 1 << 20
_TIMEOUT: Mapping[str, float | None] = {
    "connect": DEFAULT_TIMEOUT, "read": DEFAULT_TIMEOUT, "write": DEFAULT_TIMEOUT, "pool": DEFAULT_TIMEOUT,
}
_TRANSPORT_ERRORS = (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, ssl.SSLError, OSError)


class Client:
    """The client over one ``httpx.AsyncBaseTransport`` (a URL's, or an in-process ASGI app's).

    Requests are ``httpx.Request`` objects handed straight to the transport, with ``auth`` (an
    ``httpx.Auth``: bearer token, token file, exec plugin) run around each one as httpx runs it; no
    redirects are followed and no cookies kept, as upstream clients do.
    """

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport,
        *,
        base_url: str,
        auth: httpx.Auth | None = None,
        default_namespace: str = "default",
        clock: Clock | None = None,
        max_retries: int = 10,
    ) -> None:
        self._transport = transport
        self._base_url = base_url.rstrip("/")
        self._auth = auth
        self.default_namespace = default_namespace
        self._clock = clock or SystemClock()
        self._max_retries = max_retries

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(
        cls, path: str | None = None, *, context: str | None = None, clock: Clock | None = None
    ) -> Client:
        """From a kubeconfig file (``None``: ``$KUBECONFIG``, in-cluster, ``~/.kube/config``)."""
        conn = load_kubeconfig(path, context=context, clock=clock)
        return cls(
            _url_transport(conn.verify), base_url=conn.server, auth=conn.auth,
            default_namespace=conn.namespace, clock=clock,
        )  # fmt: skip

    @classmethod
    def from_asgi(
        cls,
        app: ASGIApp,
        *,
        token: str | None = None,
        base_url: str = "https://kubeloop.local",
        default_namespace: str = "default",
        clock: Clock | None = None,
    ) -> Client:
        """Reach an ASGI app (e.g. ``kubeloop.server.create_app(...)``) in-process, streaming watches."""
        return cls(
            StreamingASGITransport(app), base_url=base_url, auth=BearerToken(token) if token else None,
            default_namespace=default_namespace, clock=clock,
        )  # fmt: skip

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        token: str | None = None,
        ca_file: str | None = None,
        verify: bool = True,
        default_namespace: str = "default",
        clock: Clock | None = None,
    ) -> Client:
        try:
            context: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file and verify else verify
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load CA file {ca_file}: {exc}") from None
        return cls(
            _url_transport(context), base_url=url, auth=BearerToken(token) if token else None,
            default_namespace=default_namespace, clock=clock,
        )  # fmt: skip

    @property
    def transport(self) -> httpx.AsyncBaseTransport:
        """The one seam every request goes through."""
        return self._transport

    @property
    def auth(self) -> httpx.Auth | None:
        return self._auth

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def clock(self) -> Clock:
        """The clock ``Retry-After`` waits run on."""
        return self._clock

    @property
    def max_retries(self) -> int:
        return self._max_retries

    async def close(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- reads ----------------------------------------------------------------------------------

    async def get(
        self, resource: ResourceInfo, name: str, *, namespace: str | None = None, subresource: str | None = None
    ) -> dict[str, Any]:
        return await self._json("GET", self._path(resource, self._ns(resource, namespace), name, subresource))

    async def list(
        self,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        """One page: the raw ``<Kind>List`` (``metadata.continue`` set when more remain)."""
        params = _params(
            labelSelector=label_selector, fieldSelector=field_selector, limit=limit,
            resourceVersion=resource_version, **{"continue": continue_token},
        )
        page = await self._json("GET", self._path(resource, self._ns(resource, namespace)), params=params)
        _type_items(page, resource)
        return page

    async def list_all(
        self,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """Every item across pages, and the list's ``resourceVersion`` (one snapshot).

        If a continue token expires mid-way (410), the list is retried once without paging, like
        client-go's pager (``tools/pager/pager.go`` falls back to a full list).
        """
        items: builtins.list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                page = await self.list(
                    resource, namespace=namespace, label_selector=label_selector,
                    field_selector=field_selector, limit=page_size, continue_token=token,
                )
            except Expired:
                if token is None:
                    raise
                page = await self.list(
                    resource, namespace=namespace, label_selector=label_selector, field_selector=field_selector
                )
                return list(page.get("items") or []), _list_rv(page)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return items, _list_rv(page)

    async def watch(
        self,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Stream changes; ``ERROR`` events raise (410 ``Expired``/``Gone``: relist). Ends when the server ends it."""
        params = _params(
            watch="true", resourceVersion=resource_version, labelSelector=label_selector,
            fieldSelector=field_selector, timeoutSeconds=timeout_seconds,
            allowWatchBookmarks="true" if allow_bookmarks else None,
        )
        path = self._path(resource, self._ns(resource, namespace))
        timeout = {**_TIMEOUT, "read": None if timeout_seconds is None else timeout_seconds + 60.0}
        response = await self._open(self._request("GET", path, params, None, "", timeout), path)
        decoder = WatchDecoder()
        chunks = response.aiter_bytes()
        try:
            try:
                async for chunk in chunks:
                    for event in decoder.feed(chunk):
                        yield event
                for event in decoder.finish():
                    yield event
            except _TRANSPORT_ERRORS as exc:
                raise map_transport_error(exc, method="WATCH", url=path) from None
        finally:
            await response.aclose()
            # If the consumer stopped early, httpx's chain of body generators is still suspended;
            # run it to its end now (the stream is closed, so this is quick) rather than leaving it
            # to the event loop's async-generator finalizer, which would spawn a task per layer.
            with contextlib.suppress(Exception):
                async for _ in chunks:
                    pass

    # -- writes ---------------------------------------------------------------------------------

    async def create(
        self,
        resource: ResourceInfo,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """POST ``obj``; with ``subresource`` (``binding``, ``eviction``) to ``.../NAME/subresource``."""
        ns = self._ns(resource, namespace, obj)
        path = self._path(resource, ns, _name_of(obj), subresource) if subresource else self._path(resource, ns)
        return await self._json(
            "POST", path, body=obj,
            params=_params(dryRun="All" if dry_run else None, fieldManager=field_manager),
        )

    async def update(
        self,
        resource: ResourceInfo,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """PUT the whole object; its ``metadata.resourceVersion`` makes it conditional (409 if stale)."""
        ns = self._ns(resource, namespace, obj)
        return await self._json(
            "PUT", self._path(resource, ns, _name_of(obj), subresource), body=obj,
            params=_params(dryRun="All" if dry_run else None, fieldManager=field_manager),
        )

    async def patch(
        self,
        resource: ResourceInfo,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> dict[str, Any]:
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"patch_type must be one of {', '.join(PATCH_CONTENT_TYPES)}") from None
        params = _params(
            dryRun="All" if dry_run else None, fieldManager=field_manager,
            force=None if force is None else ("true" if force else "false"),
        )
        return await self._json(
            "PATCH", self._path(resource, self._ns(resource, namespace), name, subresource),
            body=patch, content_type=content_type, params=params,
        )

    async def apply(
        self,
        resource: ResourceInfo,
        obj: Mapping[str, Any],
        *,
        field_manager: str,
        namespace: str | None = None,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Server-side apply ``obj`` (the fields this manager owns); creates the object if missing."""
        return await self.patch(
            resource, _name_of(obj), obj, namespace=self._ns(resource, namespace, obj), patch_type="apply",
            subresource=subresource, dry_run=dry_run, field_manager=field_manager, force=force or None,
        )

    async def scale(
        self, resource: ResourceInfo, name: str, replicas: int, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Set ``spec.replicas`` through the ``/scale`` subresource (as ``kubectl scale`` does)."""
        return await self.patch(
            resource, name, {"spec": {"replicas": replicas}}, namespace=namespace, subresource="scale"
        )

    async def delete(
        self,
        resource: ResourceInfo,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """DELETE with ``DeleteOptions``; returns the object (still terminating, or deleted) or a ``Status``."""
        options = _delete_options(propagation_policy, grace_period_seconds, preconditions, dry_run)
        return await self._json(
            "DELETE", self._path(resource, self._ns(resource, namespace), name), body=options
        )

    async def delete_collection(
        self,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """DELETECOLLECTION (``DELETE`` on the collection path); returns the ``<Kind>List`` of what it deleted.

        Each matching object is deleted as one DELETE with these options would delete it (graceful
        pods and objects with finalizers stay, terminating). Servers answer 405 for resources
        without the ``deletecollection`` verb (raised as ``MethodNotAllowed``).
        """
        options = _delete_options(propagation_policy, grace_period_seconds, None, dry_run)
        params = _params(labelSelector=label_selector, fieldSelector=field_selector)
        deleted = await self._json(
            "DELETE", self._path(resource, self._ns(resource, namespace)), params=params, body=options
        )
        _type_items(deleted, resource)  # a built-in kind's items come without kind/apiVersion, as a list's
        return deleted

    # -- plumbing -------------------------------------------------------------------------------

    def _ns(self, resource: ResourceInfo, namespace: str | None, obj: Mapping[str, Any] | None = None) -> str | None:
        if not resource.namespaced:
            return None
        if namespace is not None:
            return namespace
        if obj is not None:
            own = (obj.get("metadata") or {}).get("namespace")
            if own:
                return str(own)
        return self.default_namespace

    @staticmethod
    def _path(resource: ResourceInfo, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
        path = resource.base_path(namespace or None)
        if name is not None:
            if not name or "/" in name:
                raise ValueError(f"invalid object name {name!r}")
            path += f"/{name}"
            if sub:
                path += f"/{sub}"
        return path

    async def _json(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "",
    ) -> dict[str, Any]:
        """The decoded JSON object answering a request (``accept``: an Accept header other than JSON's)."""
        response, raw = await self._send(
            method, path, params=params, body=body, content_type=content_type, accept=accept
        )
        try:
            data = _loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            raise ApiError(
                f"{method} {path}: the server answered {response.status_code} with a body that is not JSON",
                code=response.status_code,
            ) from None
        if not isinstance(data, dict):
            raise ApiError(f"{method} {path}: expected a JSON object", code=response.status_code)
        return data

    async def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "",
    ) -> tuple[httpx.Response, bytes | bytearray]:
        """The answer to a request and its whole body; a 4xx/5xx answer raises (after Retry-After retries)."""
        request = self._request(method, path, params, body, content_type, _TIMEOUT, accept=accept)
        response = await self._open(request, path)
        try:
            return response, await _read(response)
        except _TRANSPORT_ERRORS as exc:
            raise map_transport_error(exc, method=method, url=path) from None

    def _request(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None,
        body: Any,
        content_type: str,
        timeout: Mapping[str, float | None],
        *,
        accept: str = "",
    ) -> httpx.Request:
        headers = _HEADERS if body is None else [*_HEADERS, (b"Content-Type", content_type.encode())]
        if accept:
            headers = [(b"Accept", accept.encode()), *headers[1:]]  # Accept is _HEADERS[0]
        content = orjson.dumps(body) if body is not None else None
        url = _url(self._base_url + path + ("?" + urlencode(params) if params else ""))
        return httpx.Request(method, url, headers=headers, content=content, extensions={"timeout": timeout})

    async def _open(self, request: httpx.Request, path: str) -> httpx.Response:
        """Send ``request`` (again after ``Retry-After``); the response of a success, its body unread."""
        attempt = 0
        while True:
            try:
                response = await self._handle(request)
                if response.status_code < 400:
                    return response
                raw = await _read(response)
            except _TRANSPORT_ERRORS as exc:
                raise map_transport_error(exc, method=request.method, url=path) from None
            retry_after = _retry_after(response)
            retryable = response.status_code == 429 or response.status_code >= 500
            if retry_after is not None and retryable and attempt < self._max_retries:
                attempt += 1
                await self._clock.sleep(retry_after)
                continue
            raise _error(response.status_code, raw, retry_after)

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the transport, running the auth flow around it (httpx's ``Auth`` contract)."""
        if self._auth is None:
            return await self._transport.handle_async_request(request)
        flow = self._auth.async_auth_flow(request)
        try:
            request = await flow.__anext__()
            while True:
                response = await self._transport.handle_async_request(request)
                try:
                    request = await flow.asend(response)
                except StopAsyncIteration:
                    return response
                except BaseException:
                    await response.aclose()
                    raise
                await response.aclose()
        finally:
            await flow.aclose()


def _url_transport(verify: ssl.SSLContext | bool) -> HTTP11Transport:
    """The lean HTTP/1.1 transport (``_transport``) with the kubeconfig's TLS context."""
    context = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify=verify)
    return HTTP11Transport(ssl_context=context, max_connections=MAX_CONNECTIONS, keepalive_expiry=KEEPALIVE_EXPIRY)


@functools.lru_cache(maxsize=512)
def _url(url: str) -> httpx.URL:
    """Parsed URLs, reused: a controller sends to the same few collection paths over and over."""
    return httpx.URL(url)


async def _read(response: httpx.Response) -> bytes | bytearray:
    """The whole body, and the response closed. Without a Content-Encoding the transport's chunks
    are the body as sent, so httpx's decoder chain is skipped; a large body of known length is
    received straight into one buffer by the HTTP/1.1 transport (no chunk copies, no join)."""
    if "content-encoding" in response.headers:
        try:
            return await response.aread()
        finally:
            await response.aclose()
    stream = response.stream
    assert isinstance(stream, httpx.AsyncByteStream)
    try:
        if isinstance(stream, ResponseBody):
            whole = await stream.read_whole()
            if whole is not None:
                return whole
        chunks = [chunk async for chunk in stream]
    finally:
        await stream.aclose()
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _loads(raw: bytes | bytearray) -> Any:
    """``orjson.loads(raw)``; a large body with the cyclic GC paused, a large list's items in pieces
    (``_listjson``: the same value, without orjson's per-call scratch memory for a big document)."""
    if len(raw) < LARGE_BODY:
        return orjson.loads(raw)
    if not gc.isenabled():
        return pieced_loads(raw)
    gc.disable()
    try:
        return pieced_loads(raw)
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.enable()


# gzip as client-go asks for it: an API server compresses large answers (over 128 KiB) only when asked,
# which saves the bytes over a slow link; the body is decoded by httpx's decoders (``_read``).
_HEADERS = [
    (b"Accept", b"application/json"),
    (b"Accept-Encoding", b"gzip"),
    (b"User-Agent", USER_AGENT.encode()),
]


def _params(**values: Any) -> dict[str, str]:
    return {k: str(v) for k, v in values.items() if v is not None and v != ""}


def _delete_options(
    propagation_policy: str | None,
    grace_period_seconds: int | None,
    preconditions: dict[str, Any] | None,
    dry_run: bool,
) -> dict[str, Any]:
    """The ``DeleteOptions`` body shared by DELETE and DELETECOLLECTION (unset options left out)."""
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if preconditions:
        options["preconditions"] = preconditions
    if dry_run:
        options["dryRun"] = ["All"]
    return options


def _name_of(obj: Mapping[str, Any]) -> str:
    name = (obj.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("the object has no metadata.name")
    return name


def _list_rv(page: Mapping[str, Any]) -> str:
    return str((page.get("metadata") or {}).get("resourceVersion") or "")


def _retry_after(response: httpx.Response) -> int | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = int(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _error(code: int, raw: bytes | bytearray, retry_after: int | None) -> ApiError:
    status: Any
    try:
        status = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        status = raw.decode("utf-8", errors="replace")[:500]
    error = error_from_status(status, code)
    if retry_after is not None and error.retry_after_seconds is None:
        error.details["retryAfterSeconds"] = retry_after
    return error


def _type_items(page: dict[str, Any], resource: ResourceInfo) -> None:
    """Give each item of a ``<Kind>List`` the list's apiVersion and its kind without ``List``.

    kube-apiserver omits both on the items of a built-in kind's list (kubernetes#3030); client-go's
    unstructured decoding sets them the same way (``unstructuredJSONScheme.decodeToList``: only
    on an item that has neither), and cached objects are easier to use with them. A page without a
    ``...List`` kind falls back to the listed resource's.
    """
    list_kind = page.get("kind")
    api_version = page.get("apiVersion")
    if isinstance(list_kind, str) and list_kind.endswith("List") and isinstance(api_version, str) and api_version:
        kind = list_kind[: -len("List")]
    else:
        api_version, kind = resource.api_version, resource.kind
    for item in page.get("items") or ():
        if isinstance(item, dict) and "kind" not in item and "apiVersion" not in item:
            item["apiVersion"] = api_version
            item["kind"] = kind

