"""What upstream's connect handler does before a connect subresource reaches its storage: the dry-run
refusal, the options decoded from the query, and admission with operation ``CONNECT``.

Upstream 1.32 (apiserver ``pkg/endpoints/handlers/rest.go`` ``ConnectResource``), in this order, before the
REST's ``Connect`` (which reads the pod, checks the container, dials the kubelet):

1. any ``dryRun`` parameter: 400 ``dryRun is not supported``;
2. the options (``getRequestOptions``): the query decoded into the subresource's options kind
   (``PodExecOptions``, ``PodAttachOptions``, ``PodPortForwardOptions``, ``PodProxyOptions``,
   ``ServiceProxyOptions``, ``NodeProxyOptions``); a proxy's subpath becomes its ``path`` (in place of any
   ``path`` parameter), with a leading slash (and the request's trailing one). A value that does not convert is 400 with the conversion's text
   (``ports`` is the only such field: ``cannot convert to []int32: strconv.ParseUint: ...``; a boolean is
   true unless it is ``0`` or ``false``, as ``Convert_Slice_string_To_bool`` reads it);
3. mutating admission, then validating admission, on attributes with operation ``CONNECT``, the options as
   the object (no old object, no operation options, never a dry run), the parent resource with the
   subresource, the request's name and namespace. So a ValidatingAdmissionPolicy or an admission webhook
   matching ``CONNECT`` on ``pods/exec`` refuses ``kubectl exec`` with its own answer (a policy's 422 Invalid,
   or 403 with ``reason: Forbidden``; a webhook's 403) before the pod is even read. Of kubeloop's built-in
   plugins none handles CONNECT, as upstream's (NamespaceLifecycle, LimitRanger, ServiceAccount, Priority,
   DefaultTolerationSeconds and ResourceQuota handle creates, updates or deletes; DenyEscalatingExec, which
   judged exec into privileged pods, was removed in 1.21 and PodSecurity does not judge CONNECT).

The options object is the versioned one a webhook receives: ``apiVersion: v1``, its ``kind``, the fields
Go's JSON encoding writes (false booleans and empty strings left out; ``command`` always, null when empty).
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import BadRequest, ResourceInfo
from kubeloop.server._admission import AdmissionAttributes, plans_for, run_plan
from kubeloop.server._discovery import CONNECT_KINDS
from kubeloop.server._http import WARNINGS_SCOPE_KEY, Request
from kubeloop.server._state import ServerState

__all__ = ["admit_connect", "connect_options"]

_BOOLEANS = ("stdin", "stdout", "stderr", "tty")


def _boolean(values: list[str]) -> bool:
    """``Convert_Slice_string_To_bool``: the first value; false only for ``0`` or ``false`` (any case)."""
    return bool(values) and values[0] != "0" and values[0].lower() != "false"


def _ports(values: list[str]) -> list[int]:
    """``Convert_Slice_string_To_Slice_int32``: repeated or comma-separated 16-bit unsigned ports."""
    ports: list[int] = []
    for value in values:
        for text in value.split(","):
            if not text.isascii() or not text.isdigit():
                raise BadRequest(f'cannot convert to []int32: strconv.ParseUint: parsing "{text}": invalid syntax')
            if int(text) > 65535:
                raise BadRequest(f'cannot convert to []int32: strconv.ParseUint: parsing "{text}": value out of range')
            ports.append(int(text))
    return ports


def _subpath(request: Request, name: str, sub: str) -> str:
    """``getRequestOptions``' subpath: what follows ``NAME/SUB`` in the path, with a leading slash, and a
    trailing one when the request's path ends with one."""
    path = str(request.scope.get("path") or "")
    marker = f"/{name}/{sub}"
    rest = path.split(marker, 1)[1] if marker in path else ""
    if rest and not rest.startswith("/"):
        rest = "/" + rest
    if path.endswith("/") and not rest.endswith("/"):
        rest += "/"
    return rest


def connect_options(info: ResourceInfo, sub: str, request: Request, name: str) -> dict[str, Any]:
    """The subresource's options object, decoded from the request (see the module docstring, step 2)."""
    query = request.query
    options: dict[str, Any] = {"kind": CONNECT_KINDS[(info.plural, sub)], "apiVersion": info.api_version}
    if sub in ("exec", "attach"):
        for key in _BOOLEANS:
            if _boolean(query.get(key) or []):
                options[key] = True
        if container := (query.get("container") or [""])[0]:
            options["container"] = container
        if sub == "exec":
            options["command"] = list(query.get("command") or []) or None
    elif sub == "portforward":
        if ports := _ports(query.get("ports") or []):
            options["ports"] = ports
    elif path := _subpath(request, name, sub):  # the proxies: the subpath replaces any path parameter
        options["path"] = path
    return options


async def admit_connect(state: ServerState, info: ResourceInfo, request: Request, namespace: str, name: str,
                        sub: str) -> None:
    """Steps 1 to 3 of the module docstring: refuse as upstream's connect handler would, else return."""
    if "dryRun" in request.query:
        raise BadRequest("dryRun is not supported")
    options = connect_options(info, sub, request, name)
    mutating, validating = plans_for(state.admission, "CONNECT", info)
    if not mutating and not validating:
        return
    warnings: list[str] = []
    request.scope[WARNINGS_SCOPE_KEY] = warnings  # sent with the answer (an admission webhook's warnings)
    attributes = AdmissionAttributes("CONNECT", info, namespace, name, sub, request.user, False, None, warnings)
    for plan in (mutating, validating):
        pending = run_plan(plan, attributes, options, None)
        if pending is not None:
            await pending
