"""kubeloop.client: an async client for any Kubernetes API server.

``Client`` speaks JSON through one ``httpx.AsyncBaseTransport``: to a URL (kubeconfig, in-cluster
service account, explicit URL) over its lean HTTP/1.1 transport (keep-alive pool, TLS from the
kubeconfig, streamed watches), or to an ASGI app in-process. Errors are the ``kubeloop.api`` tree; transport
failures are :class:`ConnectionFailed` (a ``ServiceUnavailable``); configuration problems are
:class:`ConfigError`. :func:`retry_on_conflict` is client-go's ``retry.RetryOnConflict``.
"""

from kubeloop.client._client import NAMESPACE_ALL, Client, PatchType
from kubeloop.client._discovery import Discovery, discover_resources, with_verbs
from kubeloop.client._errors import ConfigError, ConnectionFailed
from kubeloop.client._kubeconfig import ClusterConnection, in_cluster_connection, load_kubeconfig
from kubeloop.client._retry import DEFAULT_BACKOFF, DEFAULT_RETRY, Backoff, retry_on_conflict
from kubeloop.client._transport import HTTP11Transport
from kubeloop.client._watch import WatchEvent

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_RETRY",
    "NAMESPACE_ALL",
    "Backoff",
    "Client",
    "ClusterConnection",
    "ConfigError",
    "ConnectionFailed",
    "Discovery",
    "HTTP11Transport",
    "PatchType",
    "WatchEvent",
    "discover_resources",
    "in_cluster_connection",
    "load_kubeconfig",
    "retry_on_conflict",
    "with_verbs",
]
