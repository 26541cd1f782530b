"""The API server as one plain ASGI app: :func:`create_app` and :class:`App`.

Routing is by :func:`~kubeloop.server._requestinfo.request_info` (parsed once per request, shared
with authorization); extension routes (``app.add_route``) are consulted first,
so OpenAPI, aggregated discovery and review endpoints mount without touching this module. Every
failure is answered with a ``Status`` (the ``ApiError`` tree); anything unexpected is a 500
InternalError, never a dropped connection. The app is a complete server over a ``Store``:
on startup (ASGI lifespan, or lazily on the first request) it creates the system namespaces and the
system PriorityClasses, and starts the CRD controller, which registers custom kinds into ``app.kinds`` at run time.

Seams for other parts: ``app.kinds`` (the :class:`KindRegistry` served), ``app.admission`` (a list
of :class:`Admission` plugins), ``app.validators`` (extra validation per (group, kind): a callable of the
object, the stored object on update or None, and the request's warnings list, returning field errors),
``app.add_route(prefix, handler)``, ``app.ready`` (``/readyz``), ``app.state`` (everything shared).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from kubeloop.api import (
    PROTOBUF_MEDIA_TYPE,
    ApiError,
    InternalError,
    KindRegistry,
    MethodNotAllowed,
    NotFound,
    ResourceInfo,
    ServiceUnavailable,
    SystemClock,
    decode_protobuf_object,
)
from kubeloop.api import Clock as ClockProtocol
from kubeloop.server._admission import Admission, AdmissionChain, NamespaceLifecycle
from kubeloop.server._admission_policy import ValidatingAdmissionPolicy
from kubeloop.server._compression import send_body
from kubeloop.server._crd import CrdController
from kubeloop.server._default_ingress_class import DefaultIngressClass
from kubeloop.server._default_tolerations import DefaultTolerationSeconds
from kubeloop.server._discovery import (
    VERSION_INFO,
    api_group,
    api_group_list,
    api_resource_list,
    api_versions,
)
from kubeloop.server._discovery_aggregated import aggregated_discovery, content_type, negotiate_discovery
from kubeloop.server._eviction import PodSubresources, is_pod_subresource_post
from kubeloop.server._handlers import BodyDecoder, ResourceHandlers
from kubeloop.server._hpa_v1 import V1_PREFIX, AutoscalingV1, is_v1_hpa_request
from kubeloop.server._http import (
    ASGIApp,
    Receive,
    Request,
    Scope,
    Send,
    encode_body,
    send_bytes,
    send_error,
    send_json,
    warnings_of,
)
from kubeloop.server._kubernetes_service import ensure_kubernetes_service
from kubeloop.server._limit_ranger import LimitRanger
from kubeloop.server._metrics import FOLD_AT, STATUS_KEY, RequestMetrics, ResponseObserver
from kubeloop.server._openapi import OpenAPIDocuments
from kubeloop.server._prefix_changes import PrefixChanges
from kubeloop.server._priority_admission import Priority
from kubeloop.server._priority_class import ensure_system_priority_classes
from kubeloop.server._protection import DeletionProtection
from kubeloop.server._quota_admission import ResourceQuotaAdmission
from kubeloop.server._requestinfo import SCOPE_KEY, request_info
from kubeloop.server._rest import WriteRequest, create_object
from kubeloop.server._service_account_admission import ServiceAccountAdmission
from kubeloop.server._service_account_tokens import TOKEN_PATH, ServiceAccountTokens, TokenRequests
from kubeloop.server._state import ServerState, Validator, namespace_key
from kubeloop.server._webhook_admission import MutatingWebhooks, ValidatingWebhooks
from kubeloop.store import Store, StoreClosed

__all__ = ["SYSTEM_NAMESPACES", "App", "create_app"]

log = logging.getLogger("kubeloop.server")

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_NOT_FOUND = "the server could not find the requested resource"
_POD_SUBRESOURCE_PREFIX = "/api/v1/namespaces/"
# The POSTs served beside the REST handlers: pods/eviction, pods/binding, serviceaccounts/token.
_POD_SUBRESOURCE_ENDINGS = ("/eviction", "/binding", "/token")


class App:
    """The ASGI API server. Build it with :func:`create_app`."""

    def __init__(
        self,
        state: ServerState,
        *,
        server_address: str = "127.0.0.1:6443",
        service_account_key_file: Path | None = None,
    ) -> None:
        self.state = state
        self.server_address = server_address
        self.ready: bool | Callable[[], bool] = True
        # (prefix, prefix + "/", handler, when)
        self._routes: list[tuple[str, str, ASGIApp, Callable[[Request], bool] | None]] = []
        self._route_prefixes: tuple[str, ...] = ()  # every route's prefix: most paths match none
        self._handlers = ResourceHandlers(state)
        # What GET /metrics answers; the handlers count watches there, and the app each request it answers.
        self.metrics = state.request_metrics = RequestMetrics(state.kinds, state.store)
        self._noted = self.metrics.answered
        self._note = self._noted.append
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        self.crd_controller = CrdController(state)
        state.custom_schema = self.crd_controller.schema
        self.openapi = OpenAPIDocuments(state.kinds, custom_schemas=self.crd_controller)
        self.add_route("/openapi/v3", self.openapi)
        # kubectl validates a `kind: List` on the client, against /openapi/v2 (see _openapi_v2), whose
        # modules are imported on its first request: start-up never needs them.
        self._openapi_v2: Any = None
        self.add_route("/openapi/v2", self._serve_openapi_v2)
        # POST .../pods/NAME/{eviction,binding}: checked before the routes, as the first route that
        # could serve those paths (OpenAPI's cannot), and only for paths with those endings.
        self._pod_subresources = PodSubresources(state, decoders=self.decoders)
        self.service_account_tokens = ServiceAccountTokens(state, key_file=service_account_key_file)
        self._token_requests = TokenRequests(self.service_account_tokens)
        # kubectl's typed commands (create <generator>, auth can-i/whoami) send protobuf bodies and
        # accept JSON answers (apimachinery reference, section 0 surprise 3 and section 12).
        self.decoders[PROTOBUF_MEDIA_TYPE] = _decode_protobuf
        self._handlers.printer_columns = self.crd_controller.printer_columns
        # autoscaling/v1 HorizontalPodAutoscalers: converted to and from the stored v2 objects (_hpa_v1).
        hpa_v1 = state.kinds.get("autoscaling", "v1", "horizontalpodautoscalers")
        if hpa_v1 is not None:
            self.add_route(V1_PREFIX, AutoscalingV1(self, hpa_v1, self.decoders),
                           when=lambda request: is_v1_hpa_request(request.path))

    # -- seams -------------------------------------------------------------------------------------
    @property
    def kinds(self) -> KindRegistry:
        return self.state.kinds

    @property
    def registry(self) -> KindRegistry:
        return self.state.kinds

    @property
    def admission(self) -> list[Admission]:
        return self.state.admission

    @property
    def validators(self) -> dict[tuple[str, str], Validator]:
        return self.state.validators

    @property
    def decoders(self) -> dict[str, BodyDecoder]:
        """Extra request body media types: ``decoders[media_type] = fn(body, info) -> dict``."""
        return self._handlers.decoders

    async def _serve_openapi_v2(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._openapi_v2 is None:
            from kubeloop.server._openapi_v2 import OpenAPIV2Document

            self._openapi_v2 = OpenAPIV2Document(self.state.kinds, custom_schemas=self.crd_controller)
        await self._openapi_v2(scope, receive, send)

    def add_route(self, prefix: str, handler: ASGIApp, *, when: Callable[[Request], bool] | None = None) -> None:
        """Serve ``prefix`` and everything below it with ``handler`` (an ASGI app); ``when`` narrows it."""
        prefix = prefix.rstrip("/") or "/"
        self._routes.append((prefix, prefix + "/", handler, when))
        self._route_prefixes = (*self._route_prefixes, prefix)

    def is_ready(self) -> bool:
        return bool(self.ready() if callable(self.ready) else self.ready)

    # -- lifecycle -----------------------------------------------------------------------------------
    async def startup(self) -> None:
        """Create the system namespaces and PriorityClasses, and start the CRD controller (idempotent)."""
        if self._started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._started:
                return
            # Upstream runs its post-start hooks concurrently, one goroutine each (k8s.io/apiserver
            # pkg/server/hooks.go RunPostStartHooks), and /readyz waits for all of them: so do these two,
            # and a first start's writes share group commits instead of queuing behind each other.
            await asyncio.gather(self._system_namespaces_and_service(), self._system_priority_classes())
            if self.state.kinds.get("apiextensions.k8s.io", "v1", "customresourcedefinitions") is not None:
                await self.crd_controller.start()
            self._started = True

    async def _system_namespaces_and_service(self) -> None:
        namespaces = self.state.kinds.get("", "v1", "namespaces")
        if namespaces is not None:
            # Upstream's system-namespaces controller creates a namespace only if it cannot read it
            # (k/k pkg/controlplane/controller/systemnamespaces, createNamespaceIfNeeded): a restart
            # then costs a read each, and a first start creates them together (one group commit).
            missing = [name for name in SYSTEM_NAMESPACES if await self.state.store.get(namespace_key(name)) is None]
            await asyncio.gather(*(self._create_namespace(namespaces, name) for name in missing))
        # The kubernetes-service-controller (bootstrap controller) post-start hook: its Service lives in
        # ``default``, so after the namespaces.
        await ensure_kubernetes_service(self.state, self.server_address)

    async def _system_priority_classes(self) -> None:
        priority_classes = self.state.kinds.get("scheduling.k8s.io", "v1", "priorityclasses")
        if priority_classes is not None:
            # The scheduling/bootstrap-system-priority-classes post-start hook.
            await ensure_system_priority_classes(self.state, priority_classes)

    async def _create_namespace(self, namespaces: ResourceInfo, name: str) -> None:
        with contextlib.suppress(ApiError):  # AlreadyExists: someone else made it first
            await create_object(self.state, WriteRequest(namespaces, "", user_agent="kube-apiserver/v1.32.0"),
                                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def shutdown(self) -> None:
        if self._started:
            await self.crd_controller.stop()
            self.state.service_allocator.close()
            self._started = False

    # -- ASGI ------------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            return
        if not self._started:
            await self.startup()
        if STATUS_KEY not in scope:  # a server that does not say the status: kept from what is sent
            send = ResponseObserver(scope, send)
        try:
            request = Request(scope, receive)
            path = request.path
            stripped = path.rstrip("/") or "/"
            if stripped.endswith(_POD_SUBRESOURCE_ENDINGS) and path.startswith(_POD_SUBRESOURCE_PREFIX):
                if is_pod_subresource_post(request):
                    await self._pod_subresources(scope, receive, send)
                    return
                if TOKEN_PATH.match(stripped):
                    await self._token_requests(scope, receive, send)
                    return
            if path.startswith(self._route_prefixes):
                for prefix, below, handler, when in self._routes:
                    if (path == prefix or path.startswith(below)) and (when is None or when(request)):
                        await handler(scope, receive, send)
                        return
            path = stripped
            try:
                info = request_info(scope, request.method, path, request.query)
                if info.is_resource_request:
                    await self._handlers.handle(request, info, send)
                else:
                    await self._dispatch(request, path, send)
            except ApiError as error:
                await send_error(send, error, warnings=warnings_of(scope))
            except StoreClosed:
                # Shutting down: a client's request (a controller re-opening its watches, say) that arrives after
                # the store closed is told to come back, not handed a 500 and a traceback in the server's log.
                await send_error(send, ServiceUnavailable("the server is shutting down (its store is closed): retry "
                                                          "once it is running again"), warnings=warnings_of(scope))
            except Exception as exc:  # every failure is a Status, never a dropped connection
                log.exception("internal error serving %s %s", request.method, request.path)
                await send_error(send, InternalError(f"Internal error occurred: {exc}",
                                                     details={"causes": [{"message": str(exc)}]}),
                                 warnings=warnings_of(scope))
        finally:
            # The common case noted for the next fold, here rather than in a call: a request the routing parsed
            # (its method, path, query string and parse), neither a patch nor a dry run; the rest counted at once.
            cached = scope.get(SCOPE_KEY)
            if cached is not None and cached[0] != "PATCH" and b"dryRun" not in cached[2]:
                self._note((cached[3], scope[STATUS_KEY]))
                if len(self._noted) >= FOLD_AT:
                    self.metrics.fold()
            else:
                self.metrics.count(scope, scope[STATUS_KEY])

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _dispatch(self, request: Request, path: str, send: Send) -> None:
        """A request that is not for a resource: health, version, discovery (``path`` without a
        trailing ``/``)."""
        if path in ("/healthz", "/livez") or path.startswith(("/healthz/", "/livez/")):
            await send_bytes(send, 200, b"ok", content_type="text/plain; charset=utf-8")
            return
        if path == "/readyz" or path.startswith("/readyz/"):
            if self.is_ready():
                await send_bytes(send, 200, b"ok", content_type="text/plain; charset=utf-8")
            else:
                await send_bytes(send, 500, b"[-]kubeloop-ready failed: not ready\nreadyz check failed",
                                 content_type="text/plain; charset=utf-8")
            return
        if path == "/version":
            await send_json(send, 200, VERSION_INFO)
            return
        if path == "/metrics":
            if request.method not in ("GET", "HEAD"):
                raise MethodNotAllowed("the server does not allow this method on the requested resource", details={})
            body, media = await self.metrics.exposition(request.headers.get("accept", ""))
            await send_bytes(send, 200, body, content_type=media)
            return
        if request.method not in ("GET", "HEAD"):
            raise MethodNotAllowed("the server does not allow this method on the requested resource", details={})
        await self._discovery(request, path, send)

    async def _discovery(self, request: Request, path: str, send: Send) -> None:
        kinds = self.state.kinds
        parts = path.strip("/").split("/")
        doc: dict[str, Any] | None = None
        if path in ("/api", "/apis"):
            version = negotiate_discovery(request.headers.get("accept", ""))
            if version is not None:
                body = aggregated_discovery(kinds, legacy=path == "/api", version=version)
                media = content_type(version)
                # Aggregated discovery is written by responsewriters.WriteObjectNegotiated: compressed as
                # any other answer (a cluster with many CRDs passes the threshold).
                await send_body(send, request, 200, encode_body(body, media), content_type=media)
                return
            doc = api_versions(self.server_address) if path == "/api" else api_group_list(kinds)
        elif parts[0] == "api" and len(parts) == 2:
            doc = api_resource_list(kinds, "", parts[1])
        elif parts[0] == "apis" and len(parts) == 2:
            doc = api_group(kinds, parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            doc = api_resource_list(kinds, parts[1], parts[2])
        if doc is None:
            raise _not_found()
        media = request.negotiate()
        await send_body(send, request, 200, encode_body(doc, media), content_type=media)


def _decode_protobuf(body: bytes, info: ResourceInfo) -> dict[str, Any]:
    return decode_protobuf_object(body)


def _not_found() -> ApiError:
    return NotFound(_NOT_FOUND, details={})


def create_app(
    *,
    store: Store,
    clock: ClockProtocol | None = None,
    registry: KindRegistry | None = None,
    admission: list[Admission] | None = None,
    rng: random.Random | None = None,
    server_address: str = "127.0.0.1:6443",
    disable_admission_plugins: Collection[str] = (),
    service_account_key_file: Path | None = None,
) -> App:
    """The API server over ``store``. ``admission`` replaces the default chain (NamespaceLifecycle,
    LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds, DefaultIngressClass, deletion protection,
    the mutating admission webhooks, ValidatingAdmissionPolicy, the validating admission webhooks, ResourceQuota:
    upstream's order, kube-apiserver's ``AllOrderedPlugins``, with ResourceQuota the last validating
    plugin). ``disable_admission_plugins`` is kube-apiserver's ``--disable-admission-plugins``: upstream
    names of default plugins to leave out (envtest disables ``ServiceAccount``, as a server without the
    controller manager has no ``default`` ServiceAccounts). ``service_account_key_file`` holds the key
    that signs the tokens of ``serviceaccounts/token`` (made there on first use; without it, a fresh key
    per server)."""
    state = ServerState(
        store=store,
        clock=clock or SystemClock(),
        kinds=registry if registry is not None else KindRegistry(),
        rng=rng or random.Random(),
    )
    if admission is None:
        unknown = sorted(set(disable_admission_plugins) - set(DEFAULT_ADMISSION_PLUGINS))
        if unknown:
            raise ValueError(f"unknown admission plugin(s): {', '.join(unknown)}")
        admission = [plugin(state) for name, plugin in DEFAULT_ADMISSION_PLUGINS.items()
                     if name not in disable_admission_plugins]
    state.admission.extend(admission)
    if isinstance(state.admission, AdmissionChain):
        # The dynamic plugins (admission webhooks and policies) are planned in only while their kinds are
        # stored: the chain plans again after any write to their group.
        state.admission.follow_configurations(PrefixChanges(store, "/registry/admissionregistration.k8s.io/"))
    return App(state, server_address=server_address, service_account_key_file=service_account_key_file)


# What envtest's API server disables (controller-runtime pkg/internal/testing/controlplane/apiserver.go,
# defaultArgs: ``--disable-admission-plugins=ServiceAccount``): without the controller manager no
# namespace gets its ``default`` ServiceAccount, so pods would be refused. For a server run alone.
ENVTEST_DISABLED_ADMISSION_PLUGINS = ("ServiceAccount",)

# kube-apiserver's default-enabled plugins that kubeloop has, by upstream name, in AllOrderedPlugins
# order, and kubeloop's own deletion protection (opt-in per object) where upstream's webhooks would run.
DEFAULT_ADMISSION_PLUGINS: dict[str, Callable[[ServerState], Admission]] = {
    "NamespaceLifecycle": lambda state: NamespaceLifecycle(state.store),
    "LimitRanger": lambda state: LimitRanger(state.store),
    "ServiceAccount": ServiceAccountAdmission,
    "Priority": lambda state: Priority(state.store),
    "DefaultTolerationSeconds": lambda state: DefaultTolerationSeconds(),
    "DefaultIngressClass": lambda state: DefaultIngressClass(state.store),
    "DeletionProtection": lambda state: DeletionProtection(),
    # Upstream's dynamic admission (k8s.io/apiserver plugin/webhook and plugin/policy), in AllOrderedPlugins'
    # order: MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook, ResourceQuota
    # (the mutating webhooks run last of the mutating plugins).
    "MutatingAdmissionWebhook": MutatingWebhooks,
    "ValidatingAdmissionPolicy": ValidatingAdmissionPolicy,
    "ValidatingAdmissionWebhook": ValidatingWebhooks,
    "ResourceQuota": ResourceQuotaAdmission,
}
