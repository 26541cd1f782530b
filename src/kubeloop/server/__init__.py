"""kubeloop.server: the Kubernetes-compatible API server as a plain ASGI app.

:func:`create_app` builds an :class:`App` over a :class:`~kubeloop.store.Store`. Seams for the
other parts of the server: ``app.kinds`` (the served :class:`~kubeloop.api.KindRegistry`),
``app.admission`` (:class:`Admission` plugins), ``app.validators``, ``app.add_route``,
``app.ready``; :func:`parse_request_info` gives authorization the same view of a request.
"""

from kubeloop.server._admission import Admission, AdmissionAttributes, NamespaceLifecycle
from kubeloop.server._app import SYSTEM_NAMESPACES, App, create_app
from kubeloop.server._http import MAX_BODY_BYTES, Request
from kubeloop.server._requestinfo import RequestInfo, parse_request_info
from kubeloop.server._state import ServerState, collection_prefix, object_key

__all__ = [
    "MAX_BODY_BYTES",
    "SYSTEM_NAMESPACES",
    "Admission",
    "AdmissionAttributes",
    "App",
    "NamespaceLifecycle",
    "Request",
    "RequestInfo",
    "ServerState",
    "collection_prefix",
    "create_app",
    "object_key",
    "parse_request_info",
]
