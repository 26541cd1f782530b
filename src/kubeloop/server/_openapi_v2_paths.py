"""The ``paths`` of the swagger 2.0 document: the OpenAPI v3 operations of :mod:`._openapi_paths`, in v2 form.

The operations are the same facts (operationId, ``x-kubernetes-action``,
``x-kubernetes-group-version-kind``, the ``fieldValidation`` parameter cli-runtime's v2 verifier,
``query_param_verifier.go``, looks for on PATCH); only their shape changes, as swagger 2.0 has it
(upstream's ``api/openapi-spec/swagger.json``):

- a parameter's ``schema: {type, uniqueItems}`` moves onto the parameter itself;
- a ``requestBody`` becomes the ``body`` parameter (``in: body``, ``required``, its schema), and its
  media types become ``consumes`` (``*/*`` for every body but a patch's, as upstream);
- a response's ``content`` becomes its ``schema``, and the media types it names ``produces``;
- every ``#/components/schemas/X`` reference becomes ``#/definitions/X``.

The v3 tree is not modified.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.server._openapi_schemas import DEFINITIONS

__all__ = ["swagger2_paths"]

_COMPONENTS = "#/components/schemas/"
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")


def _ref(schema: Mapping[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return {"$ref": DEFINITIONS + ref.removeprefix(_COMPONENTS)}
    return dict(schema)


def _parameter(param: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in param.items() if key != "schema"}
    out.update(param.get("schema") or {})
    return out


def _operation(op: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {key: value for key, value in op.items() if key not in ("requestBody", "responses")}
    params = [_parameter(p) for p in op.get("parameters") or ()]
    body = op.get("requestBody")
    if isinstance(body, Mapping):
        content: Mapping[str, Any] = body.get("content") or {}
        first: Mapping[str, Any] = next(iter(content.values()), {})
        schema = first.get("schema") or {}
        params.insert(0, {"name": "body", "in": "body", "required": True, "schema": _ref(schema)})
        out["consumes"] = list(content) if op.get("x-kubernetes-action") == "patch" else ["*/*"]
    if params:
        out["parameters"] = params
    produces: list[str] = []
    responses: dict[str, Any] = {}
    for code, response in (op.get("responses") or {}).items():
        converted = {"description": response.get("description", "")}
        for media, media_body in (response.get("content") or {}).items():
            if media not in produces:
                produces.append(media)
            converted["schema"] = _ref(media_body.get("schema") or {})
        responses[code] = converted
    out["responses"] = responses
    if produces:
        out["produces"] = produces
    out["schemes"] = ["https"]
    return out


def swagger2_paths(paths: Mapping[str, Any]) -> dict[str, Any]:
    """The swagger 2.0 form of OpenAPI v3 ``paths`` built by :func:`~._openapi_paths.resource_paths`."""
    out: dict[str, Any] = {}
    for path, item in paths.items():
        converted: dict[str, Any] = {}
        for method in _METHODS:
            if isinstance(item.get(method), Mapping):
                converted[method] = _operation(item[method])
        if item.get("parameters"):
            converted["parameters"] = [_parameter(p) for p in item["parameters"]]
        out[path] = converted
    return out
