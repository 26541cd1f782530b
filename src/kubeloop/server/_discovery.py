"""Legacy discovery documents and ``/version``, built from the live :class:`KindRegistry`.

``/api`` (APIVersions), ``/apis`` (APIGroupList, core group excluded), ``/apis/G`` (APIGroup),
``/api/v1`` and ``/apis/G/V`` (APIResourceList: every resource with its verbs, short names and
categories, then ``plural/status`` and ``plural/scale`` entries; scale is ``autoscaling/v1`` kind
``Scale``) as apimachinery reference section 2.1 lists. Create-only subresources name their own kind:
``pods/eviction`` (policy/v1 Eviction), ``pods/binding`` (v1 Binding) and ``serviceaccounts/token``
(authentication.k8s.io/v1 TokenRequest, served by :mod:`kubeloop.server._service_account_tokens`); the
connect subresources (``pods/exec``, ``attach``, ``portforward``, ``proxy``, ``services/proxy``,
``nodes/proxy``) their options kind, and ``pods/log`` and ``pods/ephemeralcontainers`` (get, patch,
update) the Pod kind. Custom kinds appear as soon as the CRD
helper registers them, so discovery always matches routing.
"""

from __future__ import annotations

import re
from typing import Any

from kubeloop.api import KindRegistry, ResourceInfo

__all__ = [
    "CONNECT_KINDS",
    "VERSION_INFO",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "version_priority",
    "versions_by_group",
]

VERSION_INFO: dict[str, str] = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0",
    "gitCommit": "70d3cc986aa8221cd1dfb1121852688902d3bf53",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T17:59:15Z",
    "goVersion": "go1.23.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}

# The connect subresources (a Connecter's methods as discovery verbs: GET get, POST create, PUT update,
# PATCH patch, DELETE delete) answer with their options kind, in the parent's group and version; pods/log
# is a getter of the Pod kind (upstream 1.32 ``/api/v1``).
_PROXY_VERBS = ["create", "delete", "get", "patch", "update"]
_SUBRESOURCE_VERBS = {"status": ["get", "patch", "update"], "scale": ["get", "patch", "update"],
                      "ephemeralcontainers": ["get", "patch", "update"],
                      "finalize": ["update"], "eviction": ["create"], "binding": ["create"], "token": ["create"],
                      "log": ["get"], "exec": ["create", "get"], "attach": ["create", "get"],
                      "portforward": ["create", "get"], "proxy": _PROXY_VERBS}
_SUBRESOURCE_KINDS = {"eviction": ("policy", "v1", "Eviction"), "binding": ("", "v1", "Binding"),
                      "token": ("authentication.k8s.io", "v1", "TokenRequest")}
CONNECT_KINDS = {("pods", "exec"): "PodExecOptions", ("pods", "attach"): "PodAttachOptions",
                  ("pods", "portforward"): "PodPortForwardOptions", ("pods", "proxy"): "PodProxyOptions",
                  ("services", "proxy"): "ServiceProxyOptions", ("nodes", "proxy"): "NodeProxyOptions"}


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def versions_by_group(kinds: KindRegistry) -> dict[str, list[str]]:
    """Every served group (the core group ``""`` too, groups in registration order) -> its versions,
    preferred first."""
    groups: dict[str, list[str]] = {}
    for group, version in kinds.group_versions():
        versions = groups.setdefault(group, [])
        if version not in versions:
            versions.append(version)
    for versions in groups.values():
        versions.sort(key=version_priority)
    return groups


_KUBE_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """apimachinery ``CompareKubeAwareVersionStrings`` as a sort key: GA before beta before alpha,
    higher numbers first; versions that are not Kubernetes-like last, alphabetically."""
    m = _KUBE_VERSION.fullmatch(version)
    if not m:
        return (3, 0, 0, version)
    stage = {"": 0, "beta": 1, "alpha": 2}[m.group(2) or ""]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), version)


def api_group_list(kinds: KindRegistry) -> dict[str, Any]:
    groups = [_group_entry(g, vs) for g, vs in versions_by_group(kinds).items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(kinds: KindRegistry, group: str) -> dict[str, Any] | None:
    versions = versions_by_group(kinds).get(group) if group else None
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def _resource_entry(info: ResourceInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": sorted(info.verbs),
    }
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)
    return entry


def _subresource_entry(info: ResourceInfo, sub: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"{info.plural}/{sub}",
        "singularName": "",
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": _SUBRESOURCE_VERBS.get(sub, ["get"]),
    }
    if sub == "scale":
        entry.update(group="autoscaling", version="v1", kind="Scale")
    elif sub in _SUBRESOURCE_KINDS:
        group, version, kind = _SUBRESOURCE_KINDS[sub]
        entry.update(group=group, version=version, kind=kind)
    elif (info.plural, sub) in CONNECT_KINDS:
        entry["kind"] = CONNECT_KINDS[(info.plural, sub)]
    return entry


def api_resource_list(kinds: KindRegistry, group: str, version: str) -> dict[str, Any] | None:
    infos = sorted(kinds.in_group_version(group, version), key=lambda i: i.plural)
    if not infos:
        return None
    resources: list[dict[str, Any]] = []
    for info in infos:
        resources.append(_resource_entry(info))
        resources.extend(_subresource_entry(info, sub) for sub in info.subresources)
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}
