"""kubectl-style resource names resolved through discovery: ``deploy``, ``deployments.apps``, ``sts``, ``ns``.

:func:`resolve_resource` accepts what ``kubectl delete`` accepts as the KIND of ``KIND/NAME``: the
plural, the singular, a short name, or the kind (any case), optionally qualified with a group
(``deployments.apps``) or with version and group (``deployments.v1.apps``). Only what the server's
discovery announces is known, so custom resources work as soon as their CRD is served. When a
bare name matches resources in several groups, the core group wins, then the first group in
discovery order (kubectl's RESTMapper priority). No match is a :class:`~kubeloop.api.NotFound`
with kubectl's message.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubeloop.api import NotFound, ResourceInfo

__all__ = ["resolve_resource", "split_target"]


def split_target(target: str) -> tuple[str, str]:
    """``deploy/web`` -> (``deploy``, ``web``); a malformed target is a ``ValueError``."""
    kind, sep, name = target.partition("/")
    if not sep or not kind or not name or "/" in name:
        raise ValueError(f"expected KIND/NAME (for example deployment/web), got {target!r}")
    return kind, name


def _names(info: ResourceInfo) -> set[str]:
    names = {info.plural.lower(), info.kind.lower(), *(s.lower() for s in info.short_names)}
    if info.singular:
        names.add(info.singular.lower())
    return names


def resolve_resource(resources: Sequence[ResourceInfo], kind: str) -> ResourceInfo:
    """The resource ``kind`` names among ``resources`` (preferred versions first)."""
    wanted = kind.lower()
    candidates: list[tuple[ResourceInfo, str, str]] = []  # (info, name part, qualifier)
    for info in resources:
        names = _names(info)
        if wanted in names:
            candidates.append((info, wanted, ""))
            continue
        for name in names:
            if wanted.startswith(name + "."):
                qualifier = wanted[len(name) + 1:]
                accepted = (info.group, f"{info.version}.{info.group}") if info.group else (info.version,)
                if qualifier in accepted:
                    candidates.append((info, name, qualifier))
    if not candidates:
        raise NotFound(f'the server doesn\'t have a resource type "{kind}"', details={})
    qualified = [c for c in candidates if c[2]]
    pool = qualified or candidates
    for info, _, _ in pool:
        if info.group == "":
            return info
    return pool[0][0]
