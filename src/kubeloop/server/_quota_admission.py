"""The ResourceQuota admission plugin: a write that would pass a namespace's quota is refused, else charged.

Upstream: ``staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota`` (``admission.go``,
``controller.go``: ``Evaluate``, ``checkQuotas``, ``CheckRequest``), enabled by default and the last
validating plugin of kube-apiserver's order. What an object costs is
:mod:`kubeloop.api._quota_evaluators` (shared with the resource quota controller).

- **What it looks at**: CREATE and UPDATE of a namespaced resource, not a subresource, not events
  (``DefaultIgnoredResources``) nor a Namespace; the write must be one its evaluator handles (pods:
  CREATE; services and claims: CREATE and UPDATE; anything else: CREATE, counted as
  ``count/<resource>[.<group>]``). A namespace without ResourceQuotas costs a dict lookup.
- **Checking** (``CheckRequest``), against each quota in name order whose ``status.hard`` names
  something the evaluator tracks and whose scopes match: a pod must state the cpu/memory the quota
  tracks (403 ``failed quota: q: must specify limits.cpu for: app``); the quota must have a
  ``status.used`` entry for each of them (403 ``status unknown for quota: q, resources: pods``: a quota
  the controller has not counted yet refuses what it tracks); the usage (on UPDATE, the increase over
  the stored object, never negative) must keep ``used`` within ``hard`` (403 ``exceeded quota: q,
  requested: pods=1, used: pods=2, limited: pods=2``).
- **Charging** (``checkQuotas``): each quota whose ``used`` grew is written through ``/status`` with a
  compare-and-swap on the ``resourceVersion`` that was checked, before the object itself is stored.
  A lost race re-reads the quotas and checks again, three times, then fails with the 409 of the last
  attempt. Checks of one namespace run one at a time (upstream queues them per namespace), so the
  plugin does not race itself. A dry run is checked and never charged. A write that fails after it was
  charged leaves the charge until the controller recounts (as upstream).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import Any

from kubeloop.api import Conflict, ResourceInfo
from kubeloop.api._quota_evaluators import handles as evaluator_handles
from kubeloop.api._quota_evaluators import matching_resources, pod_constraints, quota_matches, usage
from kubeloop.api._quota_math import (
    ResourceList,
    add,
    equals,
    is_negative,
    less_than_or_equal,
    mask,
    parse_list,
    remove_zeros,
    render,
    subtract_non_negative,
)
from kubeloop.server._admission import AdmissionAttributes, Operation, ValidatingPlugin
from kubeloop.server._namespaced_objects import Entry, NamespacedObjects
from kubeloop.server._priority_admission import _forbidden
from kubeloop.server._rest import WriteRequest, update_object
from kubeloop.server._state import ServerState

__all__ = ["ResourceQuotaAdmission"]

PREFIX = "/registry/core/resourcequotas/"
_RETRIES = 3
_USER_AGENT = "kube-apiserver/v1.32.0"
_IGNORED = frozenset({("", "events"), ("", "namespaces"), ("events.k8s.io", "events")})


def _pretty(resources: ResourceList) -> str:
    """prettyPrint: ``name=value`` by name, comma-separated."""
    return ",".join(f"{name}={resources[name].text()}" for name in sorted(resources))


class ResourceQuotaAdmission(ValidatingPlugin):
    """Refuses writes past a namespace's ResourceQuotas and charges the quotas for the ones it admits."""

    def __init__(self, state: ServerState) -> None:
        self._state = state
        self.quotas = NamespacedObjects(state.store, PREFIX)
        # namespace -> (lock, number of checks holding or awaiting it): one check per namespace at a time.
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    def handles(self, operation: Operation, resource: ResourceInfo) -> bool:
        return (resource.namespaced and (resource.group, resource.plural) not in _IGNORED
                and resource.group != "authorization.k8s.io"
                and evaluator_handles(resource.group, resource.plural, operation))

    def validate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        if attributes.subresource or obj is None or not attributes.namespace:
            return None
        quotas = self.quotas.current(attributes.namespace)
        if quotas is not None and not quotas:
            return None  # the common case: no quota in the namespace
        return self._admit(attributes, obj, old)

    async def _admit(self, attributes: AdmissionAttributes, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        namespace = attributes.namespace
        entry = self._locks.get(namespace)
        if entry is None:
            entry = self._locks[namespace] = (asyncio.Lock(), [0])
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                await self._check_and_charge(attributes, obj, old)
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[namespace]

    async def _check_and_charge(
        self, attributes: AdmissionAttributes, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        last: Conflict | None = None
        for _ in range(_RETRIES + 1):
            quotas = self.quotas.current(attributes.namespace)
            if quotas is None:
                quotas = await self.quotas.load(attributes.namespace)
            charged = self._check(attributes, obj, old, quotas)
            if not charged or attributes.dry_run:
                return
            try:
                for name, (revision, quota, used) in charged.items():
                    await self._charge(attributes.namespace, name, revision, quota, used)
                return
            except Conflict as error:  # someone else wrote a quota: check against the new versions
                last = error
        assert last is not None
        raise last

    def _check(self, attributes: AdmissionAttributes, obj: dict[str, Any], old: dict[str, Any] | None,
               quotas: dict[str, Entry]) -> dict[str, tuple[int, dict[str, Any], ResourceList]]:
        """CheckRequest: the new ``used`` of each quota this write charges, or a 403."""
        group, plural = attributes.resource.group, attributes.resource.plural
        interesting: list[tuple[str, int, dict[str, Any]]] = []
        for name in sorted(quotas):
            revision, quota = quotas[name]
            if not quota_matches(quota, group, plural, obj):
                continue
            status = quota.get("status") or {}
            hard = status.get("hard") or {}
            restricted = matching_resources(group, plural, hard)
            if plural == "pods" and group == "" and (missing := pod_constraints(restricted, obj)) is not None:
                raise _forbidden(attributes, obj, f"failed quota: {name}: {missing}")
            used = status.get("used") or {}
            if any(resource not in used for resource in restricted):
                raise _forbidden(attributes, obj, f"status unknown for quota: {name}, resources: "
                                                  f"{','.join(sorted(restricted))}")
            interesting.append((name, revision, quota))
        now = self._state.clock.now()
        delta = usage(group, plural, obj, now)
        if negative := is_negative(delta):
            raise _forbidden(attributes, obj, f"quota usage is negative for resource(s): {','.join(negative)}")
        if attributes.operation == "UPDATE" and old is not None and (old.get("metadata") or {}).get("resourceVersion"):
            delta = subtract_non_negative(delta, usage(group, plural, old, now))
        delta = remove_zeros(delta)
        if not delta or not interesting:
            return {}
        charged: dict[str, tuple[int, dict[str, Any], ResourceList]] = {}
        for name, revision, quota in interesting:
            status = quota.get("status") or {}
            hard, used = parse_list(status.get("hard")), parse_list(status.get("used"))
            requested = mask(delta, hard)
            new_used = add(used, requested)
            allowed, exceeded = less_than_or_equal(mask(new_used, requested), hard)
            if not allowed:
                raise _forbidden(attributes, obj, f"exceeded quota: {name}, requested: {_pretty(mask(requested, exceeded))}"
                                                  f", used: {_pretty(mask(used, exceeded))}"
                                                  f", limited: {_pretty(mask(hard, exceeded))}")
            if not equals(new_used, used):
                charged[name] = (revision, quota, new_used)
        return charged

    async def _charge(self, namespace: str, name: str, revision: int, quota: Mapping[str, Any],
                      used: ResourceList) -> None:
        """UpdateQuotaStatus: the quota's ``status.used`` through ``/status``, conditional on ``revision``."""
        info = self._state.kinds.get("", "v1", "resourcequotas")
        assert info is not None
        status = dict(quota.get("status") or {})
        status["used"] = render(used)
        body = {**quota, "metadata": {**(quota.get("metadata") or {}), "resourceVersion": str(revision)},
                "status": status}

        async def transform(_current: Any) -> dict[str, Any]:
            return body

        request = WriteRequest(info, namespace, name, subresource="status", user_agent=_USER_AGENT)
        await update_object(self._state, request, transform, conditional=True)
