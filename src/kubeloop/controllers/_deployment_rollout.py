"""Deployment rollouts: rolling update, recreate, and proportional scaling.

Upstream: k/k ``pkg/controller/deployment/{rolling.go, recreate.go, sync.go}``.

Rolling update (one step per sync; every write triggers the next sync through the informers):

- scale the new RS up to at most ``replicas + maxSurge`` pods in total (``reconcileNewReplicaSet``);
- else scale old RSs down: never below ``replicas - maxUnavailable`` available pods, counting the
  new RS's *unavailable* pods against the budget (so a crash-looping new template can never eat
  the old, healthy capacity), first removing unhealthy old replicas, oldest RS first
  (``reconcileOldReplicaSets``); an old RS whose status still counts more available pods than its
  size (just scaled down) has none, and is never scaled back up past ``maxSurge``;
- when complete, delete old RSs beyond ``revisionHistoryLimit``.

Recreate: scale every old RS to 0, wait until no old pod is left (``oldPodsRunning``), then create
or scale the new RS to ``replicas``.

Scaling (``sync``/``scale``, also while paused): a single active RS takes the new size; a
saturated new RS means old ones go to 0; otherwise ``replicas + maxSurge - current`` is spread over
the active RSs in proportion to their size (``GetProportion``, larger first, with the leftover to
the first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import annotations_of, uid_of
from kubeloop.controllers import _deployment_util as du
from kubeloop.controllers._deployment import DeploymentController
from kubeloop.runtime import Result

__all__ = ["rollout_recreate", "rollout_rolling", "sync"]

Obj = Mapping[str, Any]


def _active(rss: Iterable[Obj | None]) -> list[Obj]:
    return [rs for rs in rss if rs is not None and du.spec_replicas(rs) > 0]


def _total(rss: Iterable[Obj | None]) -> int:
    return sum(du.spec_replicas(rs) for rs in rss if rs is not None)


async def rollout_rolling(ctl: DeploymentController, d: dict[str, Any], rss: list[Obj]) -> Result | None:
    new_rs, old_rss = await ctl.get_all_replicasets(d, rss, create=True)
    all_rss: list[Obj | None] = [*old_rss, new_rs]
    if new_rs is not None and await _reconcile_new(ctl, all_rss, new_rs, d):
        return await ctl.sync_rollout_status(all_rss, new_rs, d)
    if await _reconcile_old(ctl, all_rss, _active(old_rss), new_rs, d):
        return await ctl.sync_rollout_status(all_rss, new_rs, d)
    if du.deployment_complete(d, d.get("status") or {}):
        await ctl.cleanup(old_rss, d)
    return await ctl.sync_rollout_status(all_rss, new_rs, d)


async def _reconcile_new(ctl: DeploymentController, all_rss: list[Obj | None], new_rs: Obj, d: Obj) -> bool:
    want = du.spec_replicas(d)
    have = du.spec_replicas(new_rs)
    if have == want:
        return False
    if have > want:
        scaled, _ = await ctl.scale_replicaset(new_rs, want, d)
        return scaled
    scaled, _ = await ctl.scale_replicaset(new_rs, du.new_rs_new_replicas(d, all_rss, new_rs), d)
    return scaled


async def _reconcile_old(
    ctl: DeploymentController, all_rss: list[Obj | None], old_rss: list[Obj], new_rs: Obj | None, d: Obj
) -> bool:
    if _total(old_rss) == 0:
        return False
    all_pods = _total(all_rss)
    min_available = du.spec_replicas(d) - du.max_unavailable(d)
    new_unavailable = (du.spec_replicas(new_rs) - du.status_int(new_rs, "availableReplicas")) if new_rs else 0
    max_scaled_down = all_pods - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    old_rss, cleaned = await _cleanup_unhealthy(ctl, old_rss, d, max_scaled_down)
    scaled = await _scale_down_old(ctl, [*old_rss, new_rs], old_rss, d)
    return cleaned + scaled > 0


async def _cleanup_unhealthy(ctl: DeploymentController, old_rss: list[Obj], d: Obj, limit: int) -> tuple[list[Obj], int]:
    old_rss = sorted(old_rss, key=du.by_creation)
    total = 0
    for i, rs in enumerate(old_rss):
        if total >= limit:
            break
        replicas, available = du.spec_replicas(rs), du.status_int(rs, "availableReplicas")
        # available > replicas: the RS's status still counts pods of an earlier, larger size (the
        # RS controller has not caught up with our last scale-down). Nothing is unhealthy then, and
        # replicas - available < 0 would scale the old RS back *up*, past maxSurge; upstream refuses
        # that scale with an error, we skip the RS.
        if replicas == 0 or available >= replicas:
            continue
        count = min(limit - total, replicas - available)
        _, old_rss[i] = await ctl.scale_replicaset(rs, replicas - count, d)
        total += count
    return old_rss, total


async def _scale_down_old(ctl: DeploymentController, all_rss: list[Obj | None], old_rss: list[Obj], d: Obj) -> int:
    min_available = du.spec_replicas(d) - du.max_unavailable(d)
    # An RS just scaled down still reports the pods it is about to delete; never count those, or a
    # cache that lags by one event would let two syncs spend the same unavailability budget.
    available = sum(min(du.status_int(rs, "availableReplicas"), du.spec_replicas(rs)) for rs in all_rss if rs is not None)
    if available <= min_available:
        return 0
    budget = available - min_available
    total = 0
    for rs in sorted(old_rss, key=du.by_creation):
        if total >= budget:
            break
        if du.spec_replicas(rs) == 0:
            continue
        count = min(du.spec_replicas(rs), budget - total)
        await ctl.scale_replicaset(rs, du.spec_replicas(rs) - count, d)
        total += count
    return total


async def rollout_recreate(
    ctl: DeploymentController, d: dict[str, Any], rss: list[Obj], pod_map: dict[str, list[dict[str, Any]]]
) -> Result | None:
    new_rs, old_rss = await ctl.get_all_replicasets(d, rss, create=False)
    all_rss: list[Obj | None] = [*old_rss, new_rs]
    scaled_down = False
    for rs in _active(old_rss):
        changed, _ = await ctl.scale_replicaset(rs, 0, d)
        scaled_down = scaled_down or changed
    if scaled_down:
        return await ctl.sync_rollout_status(all_rss, new_rs, d)
    if _old_pods_running(new_rs, old_rss, pod_map):
        return await ctl.sync_rollout_status(all_rss, new_rs, d)
    if new_rs is None:
        new_rs, old_rss = await ctl.get_all_replicasets(d, rss, create=True)
        all_rss = [*old_rss, new_rs]
    if new_rs is not None:
        await ctl.scale_replicaset(new_rs, du.spec_replicas(d), d)
    if du.deployment_complete(d, d.get("status") or {}):
        await ctl.cleanup(old_rss, d)
    return await ctl.sync_rollout_status(all_rss, new_rs, d)


def _old_pods_running(new_rs: Obj | None, old_rss: list[Obj], pod_map: dict[str, list[dict[str, Any]]]) -> bool:
    if sum(du.status_int(rs, "replicas") for rs in old_rss) > 0:
        return True
    for rs_uid, pods in pod_map.items():
        if new_rs is not None and uid_of(new_rs) == rs_uid:
            continue
        for pod in pods:
            if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                return True
    return False


async def sync(ctl: DeploymentController, d: dict[str, Any], rss: list[Obj]) -> Result | None:
    """Scaling only (paused Deployments, scaling events): ``sync`` in sync.go."""
    new_rs, old_rss = await ctl.get_all_replicasets(d, rss, create=False)
    await _scale(ctl, d, new_rs, old_rss)
    if (d.get("spec") or {}).get("paused"):
        await ctl.cleanup(old_rss, d)
    await ctl.sync_deployment_status([*old_rss, new_rs], new_rs, d)
    return None


async def _scale(ctl: DeploymentController, d: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> None:
    replicas = du.spec_replicas(d)
    latest = _active_or_latest(new_rs, old_rss)
    if latest is not None:
        if du.spec_replicas(latest) != replicas:
            await ctl.scale_replicaset(latest, replicas, d)
        return
    if _saturated(d, new_rs):
        for rs in _active(old_rss):
            await ctl.scale_replicaset(rs, 0, d)
        return
    if ((d.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate":
        return  # proportional scaling is for rolling updates only
    active = _active([*old_rss, new_rs])
    allowed = replicas + du.max_surge(d) if replicas > 0 else 0
    to_add = allowed - _total(active)
    if to_add > 0:  # larger first, then newer
        active.sort(key=lambda rs: (-du.spec_replicas(rs), -du.by_creation(rs)[0]))
    elif to_add < 0:  # larger first, then older
        active.sort(key=lambda rs: (-du.spec_replicas(rs), du.by_creation(rs)[0]))
    sizes: dict[str, int] = {}
    added = 0
    for rs in active:
        proportion = _proportion(rs, d, to_add, added) if to_add != 0 else 0
        sizes[uid_of(rs)] = du.spec_replicas(rs) + proportion
        added += proportion
    if to_add != 0 and active:
        leftover = to_add - added
        first = uid_of(active[0])
        sizes[first] = max(sizes[first] + leftover, 0)
    for rs in active:
        await ctl.scale_replicaset(rs, sizes[uid_of(rs)], d)


def _active_or_latest(new_rs: Obj | None, old_rss: list[Obj]) -> Obj | None:
    if new_rs is None and not old_rss:
        return None
    newest_first = sorted(old_rss, key=du.by_creation, reverse=True)
    active = _active([*newest_first, new_rs])
    if not active:
        return new_rs if new_rs is not None else newest_first[0]
    return active[0] if len(active) == 1 else None


def _saturated(d: Obj, rs: Obj | None) -> bool:
    if rs is None:
        return False
    try:
        desired = int(annotations_of(rs).get(du.DESIRED_REPLICAS, ""))
    except ValueError:
        return False
    replicas = du.spec_replicas(d)
    return du.spec_replicas(rs) == replicas and desired == replicas and du.status_int(rs, "availableReplicas") == replicas


def _proportion(rs: Obj, d: Obj, to_add: int, added: int) -> int:
    if du.spec_replicas(rs) == 0 or to_add == added:
        return 0
    fraction = _fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _fraction(rs: Obj, d: Obj) -> int:
    if du.spec_replicas(d) == 0:
        return -du.spec_replicas(rs)
    deployment_replicas = du.spec_replicas(d) + du.max_surge(d)
    try:
        annotated = int(annotations_of(rs).get(du.MAX_REPLICAS, ""))
    except ValueError:
        annotated = du.status_int(d, "replicas")
    if annotated == 0:
        return 0
    # Go's math.Round: halves away from zero.
    exact = du.spec_replicas(rs) * deployment_replicas / annotated
    rounded = int(exact + 0.5) if exact >= 0 else -int(-exact + 0.5)
    return rounded - du.spec_replicas(rs)
