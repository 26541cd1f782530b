"""The disruption controller: PodDisruptionBudget status from the pods that are actually healthy.

Mirrors ``pkg/controller/disruption/disruption.go`` (``trySync`` / ``failSafe``):

- The budget's pods are the pods of its namespace its selector matches (an empty selector matches
  all of them in policy/v1; no selector matches none).
- ``expectedPods`` and ``desiredHealthy``: with an integer ``minAvailable``, the number of pods and
  that integer; with a percentage ``minAvailable`` or any ``maxUnavailable``, the sum of
  ``spec.replicas`` of the pods' controllers with percentages rounded up: a Deployment for pods of
  its ReplicaSets, a ReplicaSet, a StatefulSet (from the informer caches), and any other controller
  through its ``/scale`` subresource (``getScaleController``: the kind is resolved by discovery,
  the Scale's uid must be the reference's). A pod without a controller, or whose controller cannot
  be found or has no scale subresource, makes the status uncomputable.
- ``currentHealthy`` counts pods that are Ready and not being deleted, minus pods the eviction API
  recorded in ``disruptedPods`` in the last 2 minutes (``DeletionTimeout``); older entries are dropped
  and those pods count again. Health comes from the pods' Ready condition, never from a spec.
- ``disruptionsAllowed = max(0, currentHealthy - desiredHealthy)`` when ``expectedPods > 0``, else 0;
  condition ``DisruptionAllowed`` True ``SufficientPods`` or False ``InsufficientPods``.
- Fail safe: when the status cannot be computed, ``disruptionsAllowed`` becomes 0 and the condition
  False with reason ``SyncFailed`` and the error as message, so the eviction API refuses.
- ``observedGeneration`` is the generation acted on; the status is written only when it changes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kubeloop.api import (
    ApiError,
    NotFound,
    ResourceInfo,
    controller_of,
    copy_json,
    label_selector_from_dict,
    parse_time,
    split_api_version,
)
from kubeloop.client import discover_resources
from kubeloop.controllers._scheduler_resources import PDBS, PODS
from kubeloop.controllers._workload_kinds import DEPLOYMENTS, REPLICASETS, STATEFULSETS
from kubeloop.controllers._workload_pods import is_pod_ready
from kubeloop.runtime import Builder, EnqueueMapped, Manager, Request, Result, set_condition

__all__ = ["DELETION_TIMEOUT", "DisruptionController", "SyncFailed"]

DELETION_TIMEOUT = 120.0


class SyncFailed(Exception):
    """The budget's status cannot be computed from what is observed."""


def _scaled(value: Any, total: int, *, what: str) -> int:
    """intstr.GetScaledValueFromIntOrPercent with round-up."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            return math.ceil(int(value[:-1]) * total / 100)
        except ValueError:
            pass
    raise SyncFailed(f"invalid value for {what}: {value!r}")


class DisruptionController:
    """Keeps each PodDisruptionBudget's status honest. Build it on a manager before it runs."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.pdbs = manager.informer(PDBS)
        self.pods = manager.informer(PODS)
        self.owners = {info.kind: (info, manager.informer(info))
                       for info in (REPLICASETS, DEPLOYMENTS, STATEFULSETS)}
        self._scalable: dict[tuple[str, str], ResourceInfo] = {}  # (apiVersion, kind) -> resource
        builder = Builder(manager).named("disruption").for_(PDBS).watches(PODS, EnqueueMapped(self._budgets_of_pod))
        for info, _ in self.owners.values():
            builder = builder.watches(info, EnqueueMapped(self._budgets_in_namespace))
        self.controller = builder.build(self)

    def _budgets_in_namespace(self, obj: Mapping[str, Any]) -> list[Request]:
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        return [Request.for_object(p) for p in self.pdbs.cache.list(namespace=namespace)]

    def _budgets_of_pod(self, pod: Mapping[str, Any]) -> list[Request]:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return [Request.for_object(p) for p in self.pdbs.cache.list(namespace=(pod.get("metadata") or {}).get(
            "namespace") or "") if self._selects(p, labels)]

    @staticmethod
    def _selects(pdb: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
        selector = (pdb.get("spec") or {}).get("selector")
        if selector is None:
            return False
        try:
            return label_selector_from_dict(selector).matches(labels)
        except Exception:
            return False

    async def reconcile(self, request: Request) -> Result | None:
        pdb = self.pdbs.cache.get_by_name(request.name, request.namespace)
        if pdb is None:
            return None
        now = self.clock.now()
        pods = [p for p in self.pods.cache.list(namespace=request.namespace)
                if self._selects(pdb, (p.get("metadata") or {}).get("labels") or {})]
        try:
            status, wake = await self._compute(pdb, pods, now)
        except SyncFailed as error:
            status, wake = self._fail_safe(pdb, str(error)), None
        await self._write(pdb, status)
        return Result(requeue_after=max(0.001, wake - now)) if wake is not None else None

    async def _expected(self, pdb: Mapping[str, Any], pods: list[dict[str, Any]]) -> tuple[int, int]:
        spec = pdb.get("spec") or {}
        max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
        if max_unavailable is None and (min_available is None or isinstance(min_available, int)):
            return len(pods), int(min_available or 0)
        expected = await self._scale_of(pods)
        if max_unavailable is not None:
            return expected, max(0, expected - _scaled(max_unavailable, expected, what="maxUnavailable"))
        return expected, _scaled(min_available, expected, what="minAvailable")

    async def _scale_of(self, pods: list[dict[str, Any]]) -> int:
        """getExpectedScale: the replicas of each distinct controller of the pods."""
        scales: dict[str, int] = {}
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                raise SyncFailed(f'found no controller ref for pod "{pod["metadata"].get("name")}"')
            if str(ref.get("uid")) in scales:
                continue
            namespace = pod["metadata"].get("namespace") or ""
            owner = self._owner(ref, namespace)
            if owner is not None and owner[0] == "ReplicaSet":
                parent = controller_of(owner[1])
                if parent is not None and parent.get("kind") == "Deployment":
                    owner = self._owner(parent, namespace) or owner
            if owner is not None:
                replicas = (owner[1].get("spec") or {}).get("replicas")
                scales[str(owner[1]["metadata"].get("uid"))] = 1 if replicas is None else int(replicas)
                continue
            if str(ref.get("kind") or "") in self.owners:
                raise SyncFailed(f'found no controllers for pod "{pod["metadata"].get("name")}"')
            scales[str(ref.get("uid"))] = await self._scale_subresource(ref, namespace, pod)
        return sum(scales.values())

    async def _scale_subresource(self, ref: Mapping[str, Any], namespace: str, pod: Mapping[str, Any]) -> int:
        """``getScaleController``: ``spec.replicas`` of the controller's Scale, if its uid matches."""
        missing = SyncFailed(f'found no controllers for pod "{pod["metadata"].get("name")}"')
        key = (str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
        info = self._scalable.get(key)
        try:
            if info is None:
                # Discovery on a miss only (a CRD may have appeared); found kinds are remembered.
                discovered = await discover_resources(self.client)
                info = discovered.by_kind(*key)
                if info is None or (info.verbs and "get" not in info.verbs):
                    raise missing
                self._scalable[key] = info
            scale = await self.client.get(info, str(ref.get("name") or ""),
                                          namespace=namespace if info.namespaced else None, subresource="scale")
        except ApiError as error:
            raise SyncFailed(f"{missing}: {error.message or error}") from error
        if (scale.get("metadata") or {}).get("uid") != ref.get("uid"):
            raise missing
        return int((scale.get("spec") or {}).get("replicas") or 0)

    def _owner(self, ref: Mapping[str, Any], namespace: str) -> tuple[str, dict[str, Any]] | None:
        kind = str(ref.get("kind") or "")
        group, _ = split_api_version(str(ref.get("apiVersion") or ""))
        entry = self.owners.get(kind)
        if entry is None or entry[0].group != group:
            return None
        obj = entry[1].cache.get_by_name(str(ref.get("name") or ""), namespace)
        if obj is None or obj["metadata"].get("uid") != ref.get("uid"):
            return None
        return kind, obj

    async def _compute(self, pdb: Mapping[str, Any], pods: list[dict[str, Any]], now: float) -> tuple[dict[str, Any], float | None]:
        expected, desired = await self._expected(pdb, pods)
        by_name = {p["metadata"]["name"]: p for p in pods}
        disrupted: dict[str, str] = {}
        wake: float | None = None
        for name, stamp in ((pdb.get("status") or {}).get("disruptedPods") or {}).items():
            pod = by_name.get(name)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                continue  # the eviction went through
            expires = parse_time(stamp) + DELETION_TIMEOUT
            if expires <= now:
                continue  # never deleted: it counts again (upstream logs a "NotDeleted" warning)
            disrupted[name] = stamp
            wake = expires if wake is None else min(wake, expires)
        healthy = sum(1 for p in pods if is_pod_ready(p) and not p["metadata"].get("deletionTimestamp")
                      and p["metadata"]["name"] not in disrupted)
        allowed = max(0, healthy - desired) if expected > 0 else 0
        status = self._base(pdb)
        status.update(currentHealthy=healthy, desiredHealthy=desired, expectedPods=expected,
                      disruptionsAllowed=allowed)
        if disrupted:
            status["disruptedPods"] = disrupted
        else:
            status.pop("disruptedPods", None)
        sufficient = allowed > 0
        set_condition(status["conditions"], type="DisruptionAllowed", status="True" if sufficient else "False",
                      reason="SufficientPods" if sufficient else "InsufficientPods", message="",
                      observed_generation=pdb["metadata"].get("generation"), clock=self.clock)
        return status, wake

    def _base(self, pdb: Mapping[str, Any]) -> dict[str, Any]:
        status: dict[str, Any] = copy_json(dict(pdb.get("status") or {}))
        status["observedGeneration"] = pdb["metadata"].get("generation")
        status["conditions"] = list(status.get("conditions") or [])
        return status

    def _fail_safe(self, pdb: Mapping[str, Any], message: str) -> dict[str, Any]:
        # failSafe keeps observedGeneration as it was: the status was not computed for this generation.
        status: dict[str, Any] = copy_json(dict(pdb.get("status") or {}))
        status["conditions"] = list(status.get("conditions") or [])
        status["disruptionsAllowed"] = 0
        set_condition(status["conditions"], type="DisruptionAllowed", status="False", reason="SyncFailed",
                      message=message, observed_generation=status.get("observedGeneration"), clock=self.clock)
        return status

    async def _write(self, pdb: Mapping[str, Any], status: dict[str, Any]) -> None:
        if status == pdb.get("status"):
            return
        try:
            await self.client.update(PDBS, {**pdb, "status": status}, namespace=pdb["metadata"].get("namespace"),
                                     subresource="status")
        except NotFound:
            pass

