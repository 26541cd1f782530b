"""OpenAPI v3 paths of ``pods/log`` and the connect subresources, shaped as upstream 1.32's
``api/openapi-spec/v3/api__v1_openapi.json`` has them (descriptions are kubeloop's own words):

- ``.../pods/{name}/log``: one GET, ``readCoreV1NamespacedPodLog``, action ``get``, the Pod kind, a string
  answer (``text/plain`` among its media types); the ``PodLogOptions`` fields as query parameters.
- ``exec``, ``attach``, ``portforward``: GET and POST, ``connectCoreV1{Get,Post}NamespacedPod<Sub>``,
  action ``connect``, the options kind (``PodExecOptions``...), a string answer of any media type
  (``*/*``); the options' fields as query parameters, the name described by the options kind.
- ``proxy`` (pods, services, nodes): every proxied method (DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT),
  ``connectCoreV1<Method><Scope><Kind>Proxy``, on ``.../{name}/proxy`` and ``.../{name}/proxy/{path}``
  (``...ProxyWithPath``), with a ``path`` query parameter (and a ``path`` path parameter on the second).
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.server._discovery import CONNECT_KINDS

__all__ = ["connect_paths"]

_STREAMS = [("stderr", "boolean", "redirect the standard error stream of the process"),
            ("stdin", "boolean", "redirect the standard input stream of the process"),
            ("stdout", "boolean", "redirect the standard output stream of the process"),
            ("tty", "boolean", "allocate a terminal for the process")]
_QUERY: dict[str, list[tuple[str, str, str]]] = {
    "log": [("container", "string", "the container whose log to return; the only one when the pod has one"),
            ("follow", "boolean", "keep streaming the log while the container runs"),
            ("insecureSkipTLSVerifyBackend", "boolean", "do not verify the kubelet's serving certificate"),
            ("limitBytes", "integer", "stop after this many bytes"),
            ("pretty", "string", "If 'true', then the output is pretty printed."),
            ("previous", "boolean", "the log of the previous, terminated run of the container"),
            ("sinceSeconds", "integer", "only the lines of the last this many seconds"),
            ("stream", "string", "the stream to return (alpha: PodLogsQuerySplitStreams)"),
            ("tailLines", "integer", "only this many lines from the end"),
            ("timestamps", "boolean", "prefix every line with its RFC 3339 timestamp")],
    "exec": [("command", "string", "the command to run, one argument per parameter, not in a shell"),
             ("container", "string", "the container to run it in; the only one when the pod has one"), *_STREAMS],
    "attach": [("container", "string", "the container to attach to; the only one when the pod has one"),
               *_STREAMS],
    "portforward": [("ports", "integer", "the ports to forward (needed over WebSockets)")],
}
_PROXY_METHODS = ("delete", "get", "head", "options", "patch", "post", "put")


def _param(name: str, where: str, kind: str, description: str) -> dict[str, Any]:
    param: dict[str, Any] = {"name": name, "in": where, "description": description,
                             "schema": {"type": kind, "uniqueItems": True}}
    if where == "path":
        param["required"] = True
    return param


def _string_answer(*media: str) -> dict[str, Any]:
    return {"200": {"description": "OK", "content": {m: {"schema": {"type": "string"}} for m in media}},
            "401": {"description": "Unauthorized"}}


def connect_paths(info: ResourceInfo, sub: str, base: str, name: str, ns: list[dict[str, Any]],
                  paths: dict[str, Any]) -> None:
    """Add ``info``'s ``sub`` paths under ``base`` (the collection path); ``name`` is the operation
    name's middle (``CoreV1NamespacedPod``), ``ns`` the namespace parameter when namespaced."""
    gvk = {"group": info.group, "kind": info.kind, "version": info.version}
    if sub == "log":
        paths[f"{base}/{{name}}/log"] = {
            "parameters": [*(_param(q[0], "query", q[1], q[2]) for q in _QUERY["log"]),
                           _param("name", "path", "string", f"name of the {info.kind}"), *ns],
            "get": {"description": f"read log of the specified {info.kind}", "operationId": f"read{name}Log",
                    "responses": _string_answer("application/json", "application/vnd.kubernetes.protobuf",
                                                "application/yaml", "text/plain"),
                    "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk},
        }
        return
    options_kind = CONNECT_KINDS.get((info.plural, sub))
    if options_kind is None:
        return
    options_gvk = {**gvk, "kind": options_kind}
    label = sub.capitalize()  # connectCoreV1GetNamespacedPodPortforward
    named = _param("name", "path", "string", f"name of the {options_kind}")

    def operation(method: str, suffix: str = "") -> dict[str, Any]:
        verb = method.capitalize()
        return {"description": f"connect {method.upper()} requests to {sub} of {info.kind}",
                "operationId": f"connect{name.replace('CoreV1', f'CoreV1{verb}', 1)}{label}{suffix}",
                "responses": _string_answer("*/*"), "x-kubernetes-action": "connect",
                "x-kubernetes-group-version-kind": options_gvk}

    if sub != "proxy":
        query = [_param(q[0], "query", q[1], q[2]) for q in _QUERY[sub]]
        paths[f"{base}/{{name}}/{sub}"] = {"parameters": [*query, named, *ns],
                                           "get": operation("get"), "post": operation("post")}
        return
    target = f"proxy request to {info.kind}"
    path_query = _param("path", "query", "string", f"the URL path of the {target}")
    paths[f"{base}/{{name}}/proxy"] = {"parameters": [named, *ns, path_query],
                                       **{m: operation(m) for m in _PROXY_METHODS}}
    paths[f"{base}/{{name}}/proxy/{{path}}"] = {
        "parameters": [named, *ns, _param("path", "path", "string", f"the URL path of the {target}")],
        **{m: operation(m, "WithPath") for m in _PROXY_METHODS}}
