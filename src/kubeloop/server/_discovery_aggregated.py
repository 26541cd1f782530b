"""Aggregated discovery (``apidiscovery.k8s.io`` v2 and v2beta1) for ``/api`` and ``/apis``.

Served only when the Accept header lists it; kubectl decides by the response Content-Type, which must
be exactly ``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`` (client-go
``discovery/discovery_client.go`` ``ContentTypeIsGVK``); otherwise the legacy documents are served.
The first version listed for a group is taken as preferred (client-go ``aggregated_discovery.go``),
and every resource carries ``responseKind`` (entries without it are dropped by clients).
Shapes: k8s-api ``apidiscovery/v2/types.go``.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.server._discovery import _subresource_entry, versions_by_group
from kubeloop.server._http import parse_accept

__all__ = ["aggregated_discovery", "content_type", "negotiate_discovery"]

_GROUP_VERSIONS = ("v2", "v2beta1")


def negotiate_discovery(accept: str) -> str | None:
    """The aggregated discovery version the client asked for first (``v2``/``v2beta1``), or None for legacy."""
    for media in parse_accept(accept):
        params = media.params
        if media.is_json_like and not params:
            return None
        if (
            params.get("g") == "apidiscovery.k8s.io"
            and params.get("as") == "APIGroupDiscoveryList"
            and params.get("v") in _GROUP_VERSIONS
        ):
            return params["v"]
    return None


def content_type(version: str) -> str:
    return f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"


def _resource(info: ResourceInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": info.plural,
        "responseKind": {"group": info.group, "version": info.version, "kind": info.kind},
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": info.singular,
        "verbs": list(info.verbs),
    }
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)
    subs = [_subresource(info, sub) for sub in info.subresources]
    if subs:
        entry["subresources"] = subs
    return entry


def _subresource(info: ResourceInfo, sub: str) -> dict[str, Any]:
    """The legacy discovery entry of ``info``'s ``sub`` (one table of verbs and kinds), reshaped."""
    legacy = _subresource_entry(info, sub)
    kind = {"group": legacy.get("group", info.group), "version": legacy.get("version", info.version),
            "kind": legacy["kind"]}
    return {"subresource": sub, "responseKind": kind, "verbs": legacy["verbs"]}


def aggregated_discovery(registry: KindRegistry, *, legacy: bool, version: str) -> dict[str, Any]:
    """The ``APIGroupDiscoveryList`` for ``/api`` (``legacy=True``: the core group) or ``/apis``."""
    by_group = versions_by_group(registry)
    groups = {"": by_group.get("", [])} if legacy else {g: vs for g, vs in by_group.items() if g}
    items = []
    for group, versions in groups.items():
        item_versions = [
            {
                "version": v,
                "resources": [_resource(i) for i in sorted(registry.in_group_version(group, v), key=lambda i: i.plural)],
                "freshness": "Current",
            }
            for v in versions
        ]
        items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": item_versions})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }
