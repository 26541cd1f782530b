"""The horizontal-pod-autoscaler controller, without a metrics API: upstream's min/max enforcement.

Upstream: k/k ``pkg/controller/podautoscaler/horizontal.go`` (release 1.32), ``reconcileAutoscaler``. kubeloop
serves no ``metrics.k8s.io`` or custom metrics API, so this controller does what upstream's does on a
cluster without one. Every HorizontalPodAutoscaler is reconciled when it changes and again every
``resync`` seconds (upstream's ``--horizontal-pod-autoscaler-sync-period``, 15 s) on the injected clock:

1. The target is resolved from ``scaleTargetRef`` (its apiVersion's group and kind, through discovery, as
   upstream's RESTMapper; any kind with a ``/scale`` subresource) and its Scale read. Failing that: a
   FailedGetScale warning Event and condition AbleToScale False FailedGetScale ("the HPA controller was
   unable to get the target's current scale: <error>"); else AbleToScale True SucceededGetScale.
2. With the Scale's ``spec.replicas`` as current: 0 while ``minReplicas`` is not 0 means scaling is
   disabled (ScalingActive False ScalingDisabled, desired 0, nothing scaled); above ``maxReplicas`` the
   target is scaled to the maximum ("Current number of replicas above Spec.MaxReplicas"), below
   ``minReplicas`` to the minimum ("... below Spec.MinReplicas"): a SuccessfulRescale Event ("New size: N;
   reason: ..."), AbleToScale True SucceededRescale, ``lastScaleTime`` now. These two clamps bypass the
   behavior's stabilization windows and rate policies, as upstream's do (only metric-based
   recommendations are normalized by them).
3. Otherwise the metrics are computed: the Scale's selector is required (SelectorRequired / InvalidSelector),
   then each metric fails to be read (no metrics API): a FailedGet<Type>Metric warning Event, condition
   ScalingActive False with that reason ("the HPA was unable to compute the replica count: <error>"), a
   FailedComputeMetricsReplicas warning ("invalid metrics (N invalid out of N), first error is: ..."),
   status ``currentReplicas`` and one empty entry per metric in ``currentMetrics``; nothing is scaled.

ScalingLimited is set upstream only where a metric-based recommendation is normalized (``normalizeDesiredReplicas``
and its behavior variant), so it never appears without metrics. The status is written (``/status``) only when
it changed (``updateStatusIfNeeded``); a condition's
``lastTransitionTime`` moves only when its status does. Not modelled: the ambiguous-selector check
(pods selected by two HPAs), which needs the pod informer.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from kubeloop.api import ApiError, Conflict, NotFound, ResourceInfo, format_time, parse_label_selector
from kubeloop.api._selectors import go_label_selector_string
from kubeloop.client import Discovery, discover_resources
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.runtime import Controller, Event, Manager, Request, Result, Watch

__all__ = ["HPAS", "HorizontalPodAutoscalerController", "MetricsSource", "NoMetricsApi"]

HPAS = builtin("autoscaling", "horizontalpodautoscalers")
RESYNC_SECONDS = 15.0
_V2 = "autoscaling/v2"
_METRIC_TYPES = ("Resource", "ContainerResource", "Pods", "Object", "External")
_KIND = "HorizontalPodAutoscaler"


class MetricsSource(Protocol):
    """Where a metric's value would come from; kubeloop has none, so only the failure is asked for."""

    def failure(self, metric: Mapping[str, Any], namespace: str, selector: str) -> tuple[str, str]:
        """``(reason, error)`` of reading ``metric``: the condition reason upstream gives the failure of
        its source type (``FailedGetResourceMetric``...) and the error text its event and condition carry."""
        ...


def _name_at(metric: Mapping[str, Any], *path: str) -> str:
    value: Any = metric
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return str(value or "")


_RESOURCE_API = ("unable to fetch metrics from resource metrics API: the server could not find the requested "
                 "resource (get pods.metrics.k8s.io)")
_CUSTOM_API = "unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"


class NoMetricsApi:
    """No ``metrics.k8s.io``, ``custom.metrics.k8s.io`` or ``external.metrics.k8s.io`` API is served: each metric
    fails as upstream's metrics clients fail on a cluster without one (``replica_calculator.go`` and
    ``metrics/client.go`` wrap the client's error)."""

    def failure(self, metric: Mapping[str, Any], namespace: str, selector: str) -> tuple[str, str]:
        kind = str(metric.get("type") or "")
        if kind in ("Resource", "ContainerResource"):
            name = _name_at(metric, "resource" if kind == "Resource" else "containerResource", "name")
            reason = "FailedGetResourceMetric" if kind == "Resource" else "FailedGetContainerResourceMetric"
            return reason, f"failed to get {name} utilization: unable to get metrics for resource {name}: {_RESOURCE_API}"
        if kind == "Pods":
            return "FailedGetPodsMetric", f"unable to get metric {_name_at(metric, 'pods', 'metric', 'name')}: {_CUSTOM_API}"
        if kind == "Object":
            ref = metric.get("object") or {}
            described = ref.get("describedObject") or {} if isinstance(ref, Mapping) else {}
            return "FailedGetObjectMetric", (f"unable to get metric {_name_at(metric, 'object', 'metric', 'name')}: "
                                             f"{described.get('kind') or ''} on {namespace} "
                                             f"{described.get('name') or ''}/{_CUSTOM_API}")
        name = _name_at(metric, "external", "metric", "name")
        source = metric.get("external") or {}
        chosen = (source.get("metric") or {}).get("selector") if isinstance(source, Mapping) else None
        shown = go_label_selector_string(chosen) if isinstance(chosen, Mapping) else "nil"  # %+v of *LabelSelector
        return "FailedGetExternalMetric", (
            f"unable to get external metric {namespace}/{name}/{shown}: unable to fetch metrics from external "
            f"metrics API: the server could not find the requested resource (get {name}.external.metrics.k8s.io)")


def _compute_error(metric: Mapping[str, Any], error: str) -> str:
    """``computeReplicasForMetric``'s wrapping of a source's error, per metric type."""
    kind = str(metric.get("type") or "")
    if kind == "Resource":
        return f"failed to get {_name_at(metric, 'resource', 'name')} resource metric value: {error}"
    if kind == "ContainerResource":
        return f"failed to get {_name_at(metric, 'containerResource', 'container')} container metric value: {error}"
    if kind == "Pods":
        return f"failed to get pods metric value: {error}"
    if kind == "Object":
        return f"failed to get object metric value: {error}"
    return f"failed to get {_name_at(metric, 'external', 'metric', 'name')} external metric value: {error}"


class _EnqueueAfterResync:
    """``enqueueHPA``: an HPA's every event queues it ``delay`` seconds later (``AddRateLimited`` on the
    fixed-interval limiter), a key already waiting keeping its earlier time; so a new HPA is first
    synced one period after it appears, and the controller's own status write brings no extra sync."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.controller: Controller | None = None

    def requests(self, event: Event) -> Iterable[Request]:
        if self.controller is not None and event.type != "delete":
            self.controller.queue.add_after(Request.for_object(event.object), self.delay)
        return ()


def _set_condition(status: dict[str, Any], kind: str, value: str, reason: str, message: str, now: str) -> None:
    """``setConditionInList``: the condition replaced in place (appended when new), its transition time
    moved only when its status changes."""
    conditions = status.setdefault("conditions", [])
    for condition in conditions:
        if condition.get("type") == kind:
            break
    else:
        condition = {"type": kind}
        conditions.append(condition)
    if condition.get("status") != value:
        condition["lastTransitionTime"] = now
    condition.update(status=value, reason=reason, message=message)


class HorizontalPodAutoscalerController:
    """Build it on a manager and add :attr:`controller` and :attr:`events` (the factory does)."""

    name = "horizontal-pod-autoscaler"

    def __init__(self, manager: Manager, *, metrics: MetricsSource | None = None,
                 resync: float = RESYNC_SECONDS) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.metrics: MetricsSource = metrics if metrics is not None else NoMetricsApi()
        self.resync = resync
        self.hpas = manager.informer(HPAS)
        self.events = EventSink(manager.client, component=self.name, clock=manager.clock)
        self._discovery: Discovery | None = None
        enqueue = _EnqueueAfterResync(resync)
        self.controller = Controller(self.name, self.reconcile, watches=[Watch(self.hpas, enqueue)],
                                     clock=manager.clock, metrics=manager.metrics)  # fmt: skip
        enqueue.controller = self.controller

    def _now(self) -> str:
        return format_time(self.clock.now())

    def _event(self, hpa: Mapping[str, Any], kind: str, reason: str, message: str) -> None:
        self.events.emit(hpa, "Warning" if kind == "Warning" else "Normal", reason, message,
                         api_version=_V2, kind=_KIND)

    async def _mappings(self, api_version: str, kind: str) -> list[ResourceInfo]:
        """``RESTMappings(groupKind)``: the group's resources of that kind, every version (discovery read
        again once when it names none, as the deferred RESTMapper resets on a miss)."""
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        for fresh in (False, True):
            if self._discovery is None or fresh:
                self._discovery = await discover_resources(self.client)
            found = [r for r in self._discovery.resources if r.group == group and r.kind == kind]
            if found:
                preferred = {(r.group, r.kind, r.version) for r in self._discovery.preferred}
                return sorted(found, key=lambda r: (r.group, r.kind, r.version) not in preferred)
        return []

    async def reconcile(self, request: Request) -> Result | None:
        cached = self.hpas.cache.get_by_name(request.name, request.namespace)
        if cached is None:
            return None
        hpa: dict[str, Any] = copy.deepcopy(dict(cached))
        original = copy.deepcopy(hpa.get("status") or {})
        status: dict[str, Any] = copy.deepcopy(original)
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        now = self._now()
        scale, target, error = await self._scale(request.namespace, ref)
        if scale is None or target is None:
            self._event(hpa, "Warning", "FailedGetScale", error)
            _set_condition(status, "AbleToScale", "False", "FailedGetScale",
                           f"the HPA controller was unable to get the target's current scale: {error}", now)
            await self._write_status(hpa, original, status)
            return Result(requeue_after=self.resync)
        _set_condition(status, "AbleToScale", "True", "SucceededGetScale",
                       "the HPA controller was able to get the target's current scale", now)
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        minimum = spec.get("minReplicas")
        minimum = 1 if minimum is None else int(minimum)
        maximum = int(spec.get("maxReplicas") or 0)
        if current == 0 and minimum != 0:
            _set_condition(status, "ScalingActive", "False", "ScalingDisabled",
                           "scaling is disabled since the replica count of the target is zero", now)
            await self._write_status(hpa, original, self._with(status, current, current, None, rescaled=False))
            return Result(requeue_after=self.resync)
        if current > maximum or current < minimum:
            desired = maximum if current > maximum else minimum
            reason = ("Current number of replicas above Spec.MaxReplicas" if current > maximum
                      else "Current number of replicas below Spec.MinReplicas")
            try:
                await self.client.scale(target, str(ref.get("name") or ""), desired, namespace=request.namespace)
            except ApiError as err:
                self._event(hpa, "Warning", "FailedRescale", f"New size: {desired}; reason: {reason}; error: {err.message}")
                _set_condition(status, "AbleToScale", "False", "FailedUpdateScale",
                               f"the HPA controller was unable to update the target scale: {err.message}", now)
                await self._write_status(hpa, original, self._with(status, current, None, None, rescaled=False))
                return Result(requeue_after=self.resync)
            _set_condition(status, "AbleToScale", "True", "SucceededRescale",
                           f"the HPA controller was able to update the target scale to {desired}", now)
            self._event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
            await self._write_status(hpa, original, self._with(status, current, desired, None, rescaled=True))
            return Result(requeue_after=self.resync)
        self._metrics_failed(hpa, status, scale, request.namespace, now)
        await self._write_status(hpa, original, status)
        return Result(requeue_after=self.resync)

    def _metrics_failed(self, hpa: dict[str, Any], status: dict[str, Any], scale: Mapping[str, Any],
                        namespace: str, now: str) -> None:
        """``computeReplicasForMetrics`` when no metric can be read, and what the sync does then."""
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        selector = str((scale.get("status") or {}).get("selector") or "")
        metrics = list((hpa.get("spec") or {}).get("metrics") or ())
        if not selector:
            self._event(hpa, "Warning", "SelectorRequired", "selector is required")
            _set_condition(status, "ScalingActive", "False", "InvalidSelector",
                           "the HPA target's scale is missing a selector", now)
            self._with(status, current, None, None, rescaled=False)
            self._event(hpa, "Warning", "FailedComputeMetricsReplicas", "selector is required")
            return
        try:
            parse_label_selector(selector)
        except ApiError as err:
            message = f"couldn't convert selector into a corresponding internal selector object: {err.message}"
            self._event(hpa, "Warning", "InvalidSelector", message)
            _set_condition(status, "ScalingActive", "False", "InvalidSelector", message, now)
            self._with(status, current, None, None, rescaled=False)
            self._event(hpa, "Warning", "FailedComputeMetricsReplicas", message)
            return
        first: tuple[str, str, str] | None = None
        for metric in metrics:
            metric = metric if isinstance(metric, Mapping) else {}
            if metric.get("type") not in _METRIC_TYPES:  # validation keeps these out; upstream's default case
                reason, error = "InvalidMetricSourceType", f'unknown metric source type "{metric.get("type") or ""}"'
                computed = error
            else:
                reason, error = self.metrics.failure(metric, namespace, selector)
                computed = _compute_error(metric, error)
            self._event(hpa, "Warning", reason, error)  # getUnableComputeReplicaCountCondition records it
            if first is None:
                first = (reason, error, computed)
        if first is None:  # no metric at all (the defaults always give one)
            self._with(status, current, None, [], rescaled=False)
            return
        reason, error, computed = first
        _set_condition(status, "ScalingActive", "False", reason,
                       f"the HPA was unable to compute the replica count: {error}", now)
        self._with(status, current, None, [{"type": ""} for _ in metrics], rescaled=False)
        self._event(hpa, "Warning", "FailedComputeMetricsReplicas",
                    f"invalid metrics ({len(metrics)} invalid out of {len(metrics)}), first error is: {computed}")

    def _with(self, status: dict[str, Any], current: int, desired: int | None, metrics: list[Any] | None, *,
              rescaled: bool) -> dict[str, Any]:
        """``setStatus``: current and desired replicas (``None``: the desired count kept), the metric
        statuses, the last scale time (now, when the target was just scaled), the conditions as set."""
        kept_desired = int(status.get("desiredReplicas") or 0)
        for key in ("currentReplicas", "desiredReplicas", "currentMetrics"):
            status.pop(key, None)
        if current:
            status["currentReplicas"] = current
        status["desiredReplicas"] = kept_desired if desired is None else desired
        if metrics:
            status["currentMetrics"] = metrics
        if rescaled:
            status["lastScaleTime"] = self._now()
        return status

    async def _scale(self, namespace: str, ref: Mapping[str, Any]) -> tuple[dict[str, Any] | None,
                                                                            ResourceInfo | None, str]:
        api_version, kind, name = str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""), str(ref.get("name") or "")
        if api_version.count("/") > 1:
            return None, None, f"unexpected GroupVersion string: {api_version}"
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        try:
            mappings = await self._mappings(api_version, kind)
        except ApiError as err:
            return None, None, err.message
        if not mappings:
            return None, None, f'no matches for kind "{kind}" in group "{group}"'
        first_error = ""
        for mapping in mappings:  # scaleForResourceMappings: the first that answers; else the first error
            try:
                return await self.client.get(mapping, name, namespace=namespace, subresource="scale"), mapping, ""
            except ApiError as err:
                first_error = first_error or err.message
        return None, None, first_error

    async def _write_status(self, hpa: dict[str, Any], original: Mapping[str, Any], status: dict[str, Any]) -> None:
        """``updateStatusIfNeeded``: a ``/status`` update only when the status changed."""
        if status == original:
            return
        hpa["status"] = status
        hpa.setdefault("apiVersion", _V2)
        hpa.setdefault("kind", _KIND)
        try:
            await self.client.update(HPAS, hpa, subresource="status")
        except (Conflict, NotFound):
            return  # the next sync reads the newer object
        except ApiError as err:
            self._event(hpa, "Warning", "FailedUpdateStatus", err.message)


def build(manager: Manager) -> Controller:
    """The built-in factory: the controller, its Event writer added to the manager beside it."""
    built = HorizontalPodAutoscalerController(manager)
    manager.add(built.events, needs_leader_election=False)
    return built.controller
