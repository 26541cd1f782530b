"""The ``paths`` of an OpenAPI v3 group/version document: upstream's operations for one resource.

Per resource: the item path (get/put/patch/delete), the collection (list/post/deletecollection),
the all-namespaces list for namespaced kinds, ``/status``, ``/scale`` and ``pods/{name}/ephemeralcontainers``
(``readCoreV1NamespacedPodEphemeralcontainers`` and its replace and patch) where served, and the
one-operation subresources discovery lists, as upstream 1.32's ``api/openapi-spec/v3/api__v1_openapi.json``
has them: POST ``pods/{name}/eviction`` (``createCoreV1NamespacedPodEviction``, a policy/v1 Eviction),
POST ``pods/{name}/binding`` (``createCoreV1NamespacedPodBinding``, a v1 Binding), POST
``serviceaccounts/{name}/token`` (``createCoreV1NamespacedServiceAccountToken``, an
authentication.k8s.io/v1 TokenRequest) and PUT ``namespaces/{name}/finalize``
(``replaceCoreV1NamespaceFinalize``, the Namespace), each with its query parameters on the path and
its own kind in ``x-kubernetes-group-version-kind``; :func:`subresource_schemas` names the schemas they
reference.

Every operation carries ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind``; PUT, PATCH and
POST carry the ``fieldValidation`` query parameter kubectl looks for before it validates
server-side (cli-runtime ``query_param_verifier_v3.go``). Custom kinds list no strategic merge
patch body type, as upstream (they answer it with 415).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.server._openapi_schemas import META

__all__ = ["gv_path", "resource_paths", "subresource_schemas"]

_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
_CUSTOM_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


@dataclass(frozen=True, slots=True)
class _OneOperation:
    """A subresource served by one operation: its method, verb, and the kind it takes and answers."""

    method: str  # "post" (x-kubernetes-action "post", operationId create...) or "put" (replace...)
    schema: str | None  # the definition it takes and answers; None: the parent's
    gvk: tuple[str, str, str] | None  # (group, version, kind); None: the parent's


_ONE_OPERATION = {
    "eviction": _OneOperation("post", "io.k8s.api.policy.v1.Eviction", ("policy", "v1", "Eviction")),
    "binding": _OneOperation("post", "io.k8s.api.core.v1.Binding", ("", "v1", "Binding")),
    "token": _OneOperation(
        "post", "io.k8s.api.authentication.v1.TokenRequest", ("authentication.k8s.io", "v1", "TokenRequest")
    ),
    "finalize": _OneOperation("put", None, None),
}


# The subresources whose paths :mod:`._openapi_connect` adds.
_CONNECT = frozenset({"log", "exec", "attach", "portforward", "proxy"})


def subresource_schemas(info: ResourceInfo) -> list[str]:
    """The definitions the one-operation subresources of ``info`` reference (for ``components``)."""
    return [op.schema for sub in info.subresources if (op := _ONE_OPERATION.get(sub)) and op.schema]


def gv_path(group: str, version: str) -> str:
    """``api/v1`` for the core group, ``apis/<group>/<version>`` otherwise."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _query(name: str, description: str, *, kind: str = "string") -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": kind, "uniqueItems": True},
    }


_PRETTY = _query("pretty", "If 'true', then the output is pretty printed.")
_DRY_RUN = _query("dryRun", "When present, indicates that modifications should not be persisted.")
_FIELD_MANAGER = _query(
    "fieldManager", "fieldManager is a name associated with the actor or entity making these changes."
)
_FIELD_VALIDATION = _query(
    "fieldValidation",
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) "
    "containing unknown or duplicate fields. Valid values are: Ignore, Warn (the default) and Strict.",
)
_FORCE = _query("force", 'Force is going to "force" Apply requests.', kind="boolean")
_LIST_PARAMS = [
    _query("allowWatchBookmarks", 'requests watch events with type "BOOKMARK".', kind="boolean"),
    _query("continue", "The continue option should be set when retrieving more results from the server."),
    _query("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
    _query("labelSelector", "A selector to restrict the list of returned objects by their labels."),
    _query("limit", "limit is a maximum number of responses to return for a list call.", kind="integer"),
    _query(
        "resourceVersion",
        "resourceVersion sets a constraint on what resource versions a request may be served from.",
    ),
    _query(
        "resourceVersionMatch",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ),
    _query(
        "sendInitialEvents", "`sendInitialEvents=true` may be set together with `watch=true`.", kind="boolean"
    ),
    _query("timeoutSeconds", "Timeout for the list/watch call.", kind="integer"),
    _query("watch", "Watch for changes to the described resources.", kind="boolean"),
]


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", "uniqueItems": True},
    }


def _json_body(ref: str, types: tuple[str, ...] = ("application/json",)) -> dict[str, Any]:
    return {"content": {t: {"schema": {"$ref": ref}} for t in types}, "required": True}


def _responses(ref: str, *codes: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        code: {
            "description": {"200": "OK", "201": "Created", "202": "Accepted"}[code],
            "content": {"application/json": {"schema": {"$ref": ref}}},
        }
        for code in codes
    }
    out["401"] = {"description": "Unauthorized"}
    return out


def _camel(info: ResourceInfo) -> str:
    group = (
        "".join(part.capitalize() for part in info.group.split(".")[0].split("-")) if info.group else "Core"
    )
    return group + info.version.capitalize()


def _operation(
    action: str, op_id: str, gvk: dict[str, str], description: str, **extra: Any
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "description": description,
        "operationId": op_id,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    }
    op.update(extra)
    return op


def resource_paths(info: ResourceInfo, kind_ref: str, paths: dict[str, Any]) -> None:
    root = f"/{gv_path(info.group, info.version)}"
    scope = "Namespaced" if info.namespaced else ""
    base = f"{root}/namespaces/{{namespace}}/{info.plural}" if info.namespaced else f"{root}/{info.plural}"
    gvk = _gvk(info.group, info.version, info.kind)
    # Definition names end with the kind; the list's ends with the list kind (a CRD's listKind).
    list_ref = kind_ref.removesuffix(info.kind) + info.list_kind
    status_ref = f"#/components/schemas/{META}.Status"
    common = [_path_param("name", f"name of the {info.kind}")]
    ns = (
        [_path_param("namespace", "object name and auth scope, such as for teams and projects")]
        if info.namespaced
        else []
    )
    name = f"{_camel(info)}{scope}{info.kind}"
    patch_types = _CUSTOM_PATCH_TYPES if info.custom else _PATCH_TYPES
    verbs = set(info.verbs)

    item: dict[str, Any] = {"parameters": [*common, *ns, _PRETTY]}
    if "get" in verbs:
        item["get"] = _operation(
            "get",
            f"read{name}",
            gvk,
            f"read the specified {info.kind}",
            responses=_responses(kind_ref, "200"),
        )
    if "update" in verbs:
        item["put"] = _operation(
            "put",
            f"replace{name}",
            gvk,
            f"replace the specified {info.kind}",
            parameters=[_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION],
            requestBody=_json_body(kind_ref),
            responses=_responses(kind_ref, "200", "201"),
        )
    if "patch" in verbs:
        item["patch"] = _operation(
            "patch",
            f"patch{name}",
            gvk,
            f"partially update the specified {info.kind}",
            parameters=[_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION, _FORCE],
            requestBody=_json_body(f"#/components/schemas/{META}.Patch", patch_types),
            responses=_responses(kind_ref, "200", "201"),
        )
    if "delete" in verbs:
        item["delete"] = _operation(
            "delete",
            f"delete{name}",
            gvk,
            f"delete a {info.kind}",
            parameters=[
                _DRY_RUN,
                _query("gracePeriodSeconds", "grace period", kind="integer"),
                _query("propagationPolicy", "cascading deletion policy"),
            ],
            responses=_responses(status_ref, "200", "202"),
        )
    if len(item) > 1:  # a create-only kind (the reviews) has no item path
        paths[f"{base}/{{name}}"] = item

    collection: dict[str, Any] = {"parameters": [*ns, _PRETTY]}
    if "list" in verbs:
        collection["get"] = _operation(
            "list",
            f"list{name}",
            gvk,
            f"list or watch objects of kind {info.kind}",
            parameters=_LIST_PARAMS,
            responses=_responses(list_ref, "200"),
        )
    if "create" in verbs:
        collection["post"] = _operation(
            "post",
            f"create{name}",
            gvk,
            f"create a {info.kind}",
            parameters=[_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION],
            requestBody=_json_body(kind_ref),
            responses=_responses(kind_ref, "200", "201", "202"),
        )
    if "deletecollection" in verbs:
        collection["delete"] = _operation(
            "deletecollection",
            f"deleteCollection{name}",
            gvk,
            f"delete collection of {info.kind}",
            parameters=_LIST_PARAMS,
            responses=_responses(status_ref, "200"),
        )
    paths[base] = collection
    if info.namespaced and "list" in verbs:
        paths[f"{root}/{info.plural}"] = {
            "parameters": [_PRETTY],
            "get": _operation(
                "list",
                f"list{_camel(info)}{info.kind}ForAllNamespaces",
                gvk,
                f"list or watch objects of kind {info.kind}",
                parameters=_LIST_PARAMS,
                responses=_responses(list_ref, "200"),
            ),
        }
    for sub in info.subresources:
        if sub in ("status", "ephemeralcontainers"):  # GET, PUT and PATCH of the parent's kind
            sub_ref, sub_gvk = kind_ref, gvk
        elif sub == "scale":
            sub_ref, sub_gvk = (
                "#/components/schemas/io.k8s.api.autoscaling.v1.Scale",
                _gvk("autoscaling", "v1", "Scale"),
            )
        else:
            one = _ONE_OPERATION.get(sub)
            if one is not None:
                paths[f"{base}/{{name}}/{sub}"] = _one_operation_path(info, sub, one, name, kind_ref, gvk, ns)
            elif sub in _CONNECT:
                from kubeloop.server._openapi_connect import connect_paths  # built on the first request

                connect_paths(info, sub, base, name, ns, paths)
            continue
        label = sub.capitalize()
        paths[f"{base}/{{name}}/{sub}"] = {
            "parameters": [*common, *ns, _PRETTY],
            "get": _operation(
                "get",
                f"read{name}{label}",
                sub_gvk,
                f"read {sub} of the specified {info.kind}",
                responses=_responses(sub_ref, "200"),
            ),
            "put": _operation(
                "put",
                f"replace{name}{label}",
                sub_gvk,
                f"replace {sub} of the specified {info.kind}",
                parameters=[_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION],
                requestBody=_json_body(sub_ref),
                responses=_responses(sub_ref, "200", "201"),
            ),
            "patch": _operation(
                "patch",
                f"patch{name}{label}",
                sub_gvk,
                f"partially update {sub} of the specified {info.kind}",
                parameters=[_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION, _FORCE],
                requestBody=_json_body(f"#/components/schemas/{META}.Patch", patch_types),
                responses=_responses(sub_ref, "200", "201"),
            ),
        }


def _one_operation_path(
    info: ResourceInfo,
    sub: str,
    one: _OneOperation,
    name: str,
    kind_ref: str,
    gvk: dict[str, str],
    ns: list[dict[str, Any]],
) -> dict[str, Any]:
    """``pods/{name}/eviction`` and its kin: one operation, every query parameter on the path (upstream's
    spec lists them there when a path has a single operation), the name described by the kind it takes."""
    ref = f"#/components/schemas/{one.schema}" if one.schema else kind_ref
    sub_gvk = _gvk(*one.gvk) if one.gvk else gvk
    if one.method == "post":
        op_id, description = f"create{name}{sub.capitalize()}", f"create {sub} of a {info.kind}"
        codes: tuple[str, ...] = ("200", "201", "202")
    else:
        op_id, description = f"replace{name}{sub.capitalize()}", f"replace {sub} of the specified {info.kind}"
        codes = ("200", "201")
    return {
        "parameters": [
            _DRY_RUN,
            _FIELD_MANAGER,
            _FIELD_VALIDATION,
            _path_param("name", f"name of the {sub_gvk['kind']}"),
            *ns,
            _PRETTY,
        ],
        one.method: _operation(
            one.method, op_id, sub_gvk, description, requestBody=_json_body(ref), responses=_responses(ref, *codes)
        ),
    }
