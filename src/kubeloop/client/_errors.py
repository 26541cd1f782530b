"""Client-side errors, all inside the one ``ApiError`` tree (or ours alone), never a third-party one.

* :class:`ConnectionFailed` (a ``ServiceUnavailable``, 503): the request never got an HTTP answer:
  connection refused or reset, TLS handshake failure, timeout, protocol error. Callers that already
  retry 503 with backoff therefore retry these too.
* :class:`ConfigError`: the kubeconfig (or in-cluster service account) cannot be used: missing
  file or context, unreadable certificate, failing exec credential plugin.

:func:`map_transport_error` is the single place where httpx and ssl exceptions are translated.
"""

from __future__ import annotations

import ssl

import httpx

from kubeloop.api import ServiceUnavailable

__all__ = ["ConfigError", "ConnectionFailed", "map_transport_error"]


class ConnectionFailed(ServiceUnavailable):
    """No HTTP response was received (connect, TLS, read or write failure, timeout)."""

    reason_default = "ServiceUnavailable"


class ConfigError(Exception):
    """The client configuration (kubeconfig, service account, credential plugin) cannot be used."""


def map_transport_error(exc: BaseException, *, method: str, url: str) -> ConnectionFailed:
    """Translate an httpx/ssl/OS error raised while talking to ``url`` into :class:`ConnectionFailed`."""
    if isinstance(exc, httpx.TimeoutException):
        what = "timed out"
    elif isinstance(exc, ssl.SSLError) or "SSL" in type(exc).__name__ or "CERTIFICATE" in str(exc):
        what = "TLS failure"
    elif isinstance(exc, httpx.ConnectError):
        what = "connection failed"
    else:
        what = "transport failure"
    detail = str(exc) or type(exc).__name__
    return ConnectionFailed(f"{method} {url}: {what}: {detail}")
