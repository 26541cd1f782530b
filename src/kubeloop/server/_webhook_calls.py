"""One call of an admission webhook: the AdmissionReview sent, the answer checked.

As upstream (k8s.io/apiserver ``pkg/admission/plugin/webhook/request/admissionreview.go``
``CreateAdmissionObjects`` / ``VerifyAdmissionResponse``, ``pkg/util/webhook/client.go``):

- the review is ``admission.k8s.io/v1`` (or ``v1beta1`` when the webhook lists only that), POSTed as JSON
  to ``clientConfig.url`` with ``?timeout=<timeoutSeconds>s``, and the call is abandoned after
  ``timeoutSeconds``; a ``caBundle`` is the only trust for the server's certificate (without one, the
  system's roots);
- the answer must be a 200 with a review of the version sent, a ``response`` whose ``uid`` is the
  request's; a validating webhook may not return ``patch``/``patchType``, a mutating one returns both or
  neither.

Every failure is :class:`CallFailed` with upstream's reason text (``failed to call webhook: Post "URL":
...`` or ``received invalid webhook response: ...``); the caller applies the failure policy.

A ``clientConfig.service`` reference cannot be called: kubeloop runs no pod network, so nothing behind a
Service answers. Such a call fails with a reason that says so (upstream would dial the Service); with
``failurePolicy: Ignore`` the request goes on without it.

The HTTP client is httpx (kubeloop's client transport), imported on the first call: a server whose
clusters define no webhook never loads it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import ssl
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["CallFailed", "call_webhook"]

log = logging.getLogger("kubeloop.server.webhooks")

_REVIEW = "AdmissionReview"
_GENERIC_MESSAGES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    415: "the server responded with the status code 415 but did not return more information",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be processing the request",
}
_contexts: dict[str, ssl.SSLContext] = {}


class CallFailed(Exception):
    """The webhook could not be called, or answered something that is not a usable review."""


def _ssl_context(ca_bundle: Any) -> ssl.SSLContext | bool:
    if not ca_bundle:
        return True
    context = _contexts.get(str(ca_bundle))
    if context is None:
        try:
            pem = base64.b64decode(str(ca_bundle), validate=True).decode()
            context = ssl.create_default_context(cadata=pem)
        except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
            raise CallFailed(f"could not get REST client: unable to load root certificates: {exc}") from None
        if len(_contexts) >= 64:
            _contexts.clear()
        _contexts[str(ca_bundle)] = context
    return context


def _url(config: Mapping[str, Any], timeout: int) -> str:
    url = config.get("url")
    if isinstance(url, str):
        return f"{url}?timeout={timeout}s"
    service = config.get("service") if isinstance(config.get("service"), Mapping) else {}
    assert isinstance(service, Mapping)
    path = str(service.get("path") or "")
    return (f"https://{service.get('name', '')}.{service.get('namespace', '')}.svc:{service.get('port', 443)}"
            f"{path}?timeout={timeout}s")


def _server_message(status: int, body: bytes) -> str:
    """What client-go's REST client makes of a non-2xx answer: a Status's message, else its generic text."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status" and decoded.get("message"):
        return str(decoded["message"])
    if status in _GENERIC_MESSAGES:
        return _GENERIC_MESSAGES[status]
    if status >= 500:
        text = body.decode(errors="replace").strip()
        return f"an error on the server ({text!r}) has prevented the request from succeeding".replace("'", '"')
    return f"the server responded with the status code {status} but did not return more information"


def _check(review: Any, uid: str, api_version: str, mutating: bool) -> dict[str, Any]:
    """VerifyAdmissionResponse."""
    if not isinstance(review, dict):
        raise CallFailed("received invalid webhook response: webhook response was absent")
    got = f"{review.get('apiVersion', '')}, Kind={review.get('kind', '')}"
    response = review.get("response")
    if not isinstance(response, dict):
        raise CallFailed("received invalid webhook response: webhook response was absent")
    if response.get("uid") != uid:
        raise CallFailed(f'received invalid webhook response: expected response.uid="{uid}", got "{response.get("uid", "")}"')
    if review.get("apiVersion") != api_version or review.get("kind") != _REVIEW:
        raise CallFailed(f"received invalid webhook response: expected webhook response of {api_version}, "
                         f"Kind={_REVIEW}, got {got}")
    patch, patch_type = response.get("patch"), response.get("patchType")
    if mutating:
        if patch and patch_type is None:
            raise CallFailed("received invalid webhook response: webhook returned response.patch but not response.patchType")
        if not patch and patch_type is not None:
            raise CallFailed("received invalid webhook response: webhook returned response.patchType but not response.patch")
        if patch_type is not None and not patch_type:
            raise CallFailed('received invalid webhook response: webhook returned invalid response.patchType of ""')
    else:
        if patch:
            raise CallFailed("received invalid webhook response: validating webhook may not return response.patch")
        if patch_type is not None:
            raise CallFailed("received invalid webhook response: validating webhook may not return response.patchType")
    return response


def _connection_text(exc: Exception, url: str) -> str:
    """A transport error as Go's net/http would word the main cases."""
    import httpx

    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        host = url.split("/", 3)[2]
        causes: list[BaseException] = []
        cause: BaseException | None = exc
        while cause is not None and len(causes) < 8:  # what the transport's error was raised from
            causes.append(cause)
            cause = cause.__cause__ or cause.__context__
        if "CERTIFICATE_VERIFY_FAILED" in text or any(isinstance(c, ssl.SSLCertVerificationError) for c in causes):
            return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        if "refused" in text.lower() or any(isinstance(c, ConnectionRefusedError) for c in causes) \
                or "All connection attempts failed" in text:
            return f"dial tcp {host}: connect: connection refused"
        return f"dial tcp {host}: {text}"
    return text


async def call_webhook(config: Mapping[str, Any], review: dict[str, Any], *, timeout: int, mutating: bool) -> dict[str, Any]:
    """POST ``review`` to the webhook of ``config`` (its ``clientConfig``); the checked ``response``."""
    url = _url(config, timeout)
    if not isinstance(config.get("url"), str):
        log.warning("admission webhook at %s: kubeloop runs no pod network, so a Service reference cannot be "
                    "called (use clientConfig.url)", url)
        raise CallFailed(f'failed to call webhook: Post "{url}": kubeloop cannot reach the pods behind a Service '
                         "(it runs no pod network): give the webhook a clientConfig.url")
    import httpx  # the first call pays for it, start-up never does

    verify = _ssl_context(config.get("caBundle"))
    body = orjson.dumps(review)
    try:
        async with asyncio.timeout(timeout), httpx.AsyncClient(verify=verify, timeout=None) as client:
            answer = await client.post(url, content=body, headers={
                "Content-Type": "application/json", "Accept": "application/json, */*"})
    except TimeoutError:
        raise CallFailed(f'failed to call webhook: Post "{url}": context deadline exceeded') from None
    except httpx.HTTPError as exc:
        raise CallFailed(f'failed to call webhook: Post "{url}": {_connection_text(exc, url)}') from None
    if answer.status_code != 200:
        raise CallFailed(f"failed to call webhook: {_server_message(answer.status_code, answer.content)}")
    try:
        decoded = orjson.loads(answer.content)
    except orjson.JSONDecodeError as exc:
        raise CallFailed(f"failed to call webhook: couldn't get version/kind; json parse error: {exc}") from None
    request = review["request"]
    return _check(decoded, request["uid"], review["apiVersion"], mutating)
