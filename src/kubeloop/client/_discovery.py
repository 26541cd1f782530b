"""Discovery through a :class:`~kubeloop.client.Client`: which resources a server serves.

:func:`discover_resources` asks ``/api`` and ``/apis`` together for aggregated discovery
(``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``: every group, version and resource in two
answers), as client-go does since Kubernetes 1.30 (``discovery_client.go``, ``AcceptV2``), and falls
back to the legacy documents ``/api/v1`` and ``/apis/G/V`` when a server answers with the legacy
``APIVersions``/``APIGroupList`` (apimachinery reference section 2.1). It returns one
:class:`~kubeloop.api.ResourceInfo` per served resource and version, with the verbs, short names,
categories and scope the server announced, custom resources included. Subresources
(``pods/status``) are left out. In an aggregated answer the first version of a group is its
preferred one, and a version whose ``freshness`` is ``Stale`` counts as failed (client-go
``aggregated_discovery.go``).

Like client-go's ``ServerGroupsAndResources``, a group/version whose document cannot be read does
not fail the whole call: it is reported in :attr:`Discovery.failed` (``"group/version" -> reason``)
and :meth:`Discovery.failure_message` renders client-go's ``ErrGroupDiscoveryFailed`` text. Only a
failure to read ``/api`` or ``/apis`` themselves raises (the ``ApiError`` tree).

:attr:`Discovery.preferred` keeps, per group, only the server's preferred version
(``ServerPreferredResources``), which is what controllers that act on "every kind" watch, so one
object is never seen twice through two versions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubeloop.api import ApiError, ResourceInfo

if TYPE_CHECKING:
    from kubeloop.client._client import Client

__all__ = ["Discovery", "discover_resources", "with_verbs"]


@dataclass(frozen=True)
class Discovery:
    """Every served resource, each version (``resources``); the preferred version only (``preferred``)."""

    resources: tuple[ResourceInfo, ...]
    preferred: tuple[ResourceInfo, ...]
    failed: dict[str, str] = field(default_factory=dict)

    def failure_message(self) -> str:
        """client-go ``ErrGroupDiscoveryFailed.Error()``."""
        parts = [f"{gv}: {reason}" for gv, reason in sorted(self.failed.items())]
        return "unable to retrieve the complete list of server APIs: " + ", ".join(parts)

    def by_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        """The resource serving ``kind`` at exactly ``api_version`` (a RESTMapper lookup)."""
        group, _, version = api_version.rpartition("/")
        for info in self.resources:
            if info.group == group and info.version == version and info.kind == kind:
                return info
        return None


def _resources(group: str, version: str, doc: dict[str, Any]) -> list[ResourceInfo]:
    out: list[ResourceInfo] = []
    for entry in doc.get("resources") or ():
        name = str(entry.get("name") or "")
        if not name or "/" in name:
            continue
        out.append(ResourceInfo(
            group=str(entry.get("group") or group),
            version=str(entry.get("version") or version),
            kind=str(entry.get("kind") or ""),
            plural=name,
            singular=str(entry.get("singularName") or ""),
            namespaced=bool(entry.get("namespaced")),
            short_names=tuple(entry.get("shortNames") or ()),
            categories=tuple(entry.get("categories") or ()),
            verbs=tuple(entry.get("verbs") or ()),
        ))  # fmt: skip
    return out


# client-go's AcceptV2: aggregated discovery v2, then v2beta1, then the legacy documents.
_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)


def _aggregated(doc: dict[str, Any]) -> bool:
    return doc.get("kind") == "APIGroupDiscoveryList"


def _from_aggregated(docs: Iterable[dict[str, Any]]) -> Discovery:
    resources: list[ResourceInfo] = []
    preferred: list[ResourceInfo] = []
    failed: dict[str, str] = {}
    for doc in docs:
        for item in doc.get("items") or ():
            group = str((item.get("metadata") or {}).get("name") or "")
            for i, entry in enumerate(item.get("versions") or ()):
                version = str(entry.get("version") or "")
                gv = f"{group}/{version}" if group else version
                if entry.get("freshness") == "Stale":
                    failed[gv] = f"stale GroupVersion discovery: {gv}"  # client-go StaleGroupVersionError
                    continue
                found = [
                    ResourceInfo(
                        group=str(kind.get("group") or group),
                        version=str(kind.get("version") or version),
                        kind=str(kind.get("kind") or ""),
                        plural=str(r.get("resource") or ""),
                        singular=str(r.get("singularResource") or ""),
                        namespaced=r.get("scope") == "Namespaced",
                        short_names=tuple(r.get("shortNames") or ()),
                        categories=tuple(r.get("categories") or ()),
                        verbs=tuple(r.get("verbs") or ()),
                    )
                    for r in entry.get("resources") or ()
                    if (kind := r.get("responseKind")) and r.get("resource")  # client-go drops entries without it
                ]
                resources.extend(found)
                if i == 0:
                    preferred.extend(found)
    return Discovery(tuple(resources), tuple(preferred), failed)


async def discover_resources(client: Client) -> Discovery:
    """Read the server's discovery (``/api`` with ``/apis``; then, from a server without aggregated
    discovery, the group/versions in parallel)."""
    apis = asyncio.ensure_future(client._json("GET", "/apis", accept=_ACCEPT))
    try:
        core = await client._json("GET", "/api", accept=_ACCEPT)
    except BaseException:
        apis.cancel()
        await asyncio.gather(apis, return_exceptions=True)
        raise
    groups = await apis
    if _aggregated(core) and _aggregated(groups):
        return _from_aggregated((core, groups))
    if _aggregated(core):  # only one root answered aggregated: read it again, legacy
        core = await client._json("GET", "/api")
    if _aggregated(groups):
        groups = await client._json("GET", "/apis")
    # (group, version, path, preferred)
    targets: list[tuple[str, str, str, bool]] = []
    for i, version in enumerate(core.get("versions") or ()):
        targets.append(("", str(version), f"/api/{version}", i == 0))
    for group in groups.get("groups") or ():
        name = str(group.get("name") or "")
        preferred_version = str((group.get("preferredVersion") or {}).get("version") or "")
        for entry in group.get("versions") or ():
            version = str(entry.get("version") or "")
            targets.append((name, version, f"/apis/{name}/{version}", version == preferred_version))

    async def read(path: str) -> dict[str, Any] | ApiError:
        try:
            return await client._json("GET", path)
        except ApiError as err:
            return err

    docs = await asyncio.gather(*(read(path) for _, _, path, _ in targets))
    resources: list[ResourceInfo] = []
    preferred: list[ResourceInfo] = []
    failed: dict[str, str] = {}
    for (group, version, _, is_preferred), doc in zip(targets, docs, strict=True):
        gv = f"{group}/{version}" if group else version
        if isinstance(doc, ApiError):
            failed[gv] = doc.message
            continue
        found = _resources(group, version, doc)
        resources.extend(found)
        if is_preferred:
            preferred.extend(found)
    return Discovery(tuple(resources), tuple(preferred), failed)


def with_verbs(resources: Iterable[ResourceInfo], *verbs: str) -> list[ResourceInfo]:
    """``discovery.FilteredBy(SupportsAllVerbs{verbs})``."""
    return [r for r in resources if all(v in r.verbs for v in verbs)]
