"""The taint-eviction controller: deletes pods whose tolerations of their node's NoExecute taints ran out.

Mirrors kube-controller-manager's ``taint-eviction-controller`` (``pkg/controller/tainteviction/
taint_eviction.go``) for every pod bound to a node, whoever runs that node's kubelet (the simulated
kubelet, another one, or none): upstream's controller knows nothing of kubelets, only of pods, nodes
and taints.

- It reconciles pods (``handlePodUpdate``) and, when a node's NoExecute taints change
  (``handleNodeUpdate``), every pod on that node. Terminal and Terminating pods included, as upstream.
- When each pod goes is :class:`._taint_eviction.TaintEvictions`' part (at once for a taint it does
  not tolerate, the shortest ``tolerationSeconds`` after the taint was first seen, never when
  tolerated for ever; pending work cancelled with an Event when the taints go, the pod tolerates
  them for ever, or the pod is deleted). The pod is looked at again exactly when its work is due.
- When it is due, ``addConditionAndDeletePod``: the ``DisruptionTarget`` condition (reason
  ``DeletionByTaintManager``; written only when it changes, its ``lastTransitionTime`` kept while its
  status stays True), a ``TaintManagerEviction`` "Marking for deletion Pod <ns>/<name>" Event from
  ``taint-eviction-controller``, then a graceful delete with a UID precondition. The kubelet of the
  node (when there is one) then stops the pod; on a node without one it stays Terminating, as upstream.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubeloop.api import NotFound, copy_json, format_time
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._nodes import NODE_NAME_INDEX, node_name_of_pod
from kubeloop.controllers._scheduler_resources import NODES, PODS
from kubeloop.controllers._taint_eviction import TaintEvictions, no_execute_taints
from kubeloop.runtime import Builder, EnqueueMapped, Event, Manager, Request, Result

__all__ = ["TaintEvictionController", "disruption_target"]

log = logging.getLogger("kubeloop.controllers.tainteviction")


def _no_execute_taints_changed(event: Event) -> bool:
    """``handleNodeUpdate`` looks at pods again only when the node's NoExecute taints change."""
    if event.type != "update" or event.old_object is None:
        return True
    return no_execute_taints(event.old_object) != no_execute_taints(event.object)


def disruption_target(conditions: list[dict[str, Any]], now: float) -> tuple[list[dict[str, Any]], bool]:
    """The pod's conditions with the taint manager's DisruptionTarget, and whether they changed.

    ``UpdatePodCondition``: a new condition is appended; an existing one is replaced in place, keeping
    its ``lastTransitionTime`` when its status was already True; nothing changes when it already says
    the same."""
    wanted = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
              "lastTransitionTime": format_time(now), "reason": "DeletionByTaintManager",
              "message": "Taint manager: deleting due to NoExecute taint"}
    out = [dict(c) for c in conditions]
    index = next((i for i, c in enumerate(out) if c.get("type") == "DisruptionTarget"), None)
    if index is None:
        return [*out, wanted], True
    old = out[index]
    if old.get("status") == "True":
        wanted["lastTransitionTime"] = old.get("lastTransitionTime")
    if all(old.get(k) == v for k, v in wanted.items()):
        return out, False
    out[index] = wanted
    return out, True


class TaintEvictionController:
    """Evicts pods from nodes with NoExecute taints they do not tolerate (long enough). Build it on a
    manager before it runs."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.pods = manager.informer(PODS)
        self.pods.add_indexers({NODE_NAME_INDEX: node_name_of_pod})
        self.nodes = manager.informer(NODES)
        self.events = EventSink(self.client, component="taint-eviction-controller", clock=self.clock)
        manager.add(self.events, needs_leader_election=False)
        self.evictions = TaintEvictions(self.events, self.clock)
        self.controller = (
            Builder(manager).named("taint-eviction-controller").for_(PODS)
            .watches(NODES, EnqueueMapped(self._pods_on), _no_execute_taints_changed).build(self)
        )

    def _pods_on(self, node: Mapping[str, Any]) -> list[Request]:
        name = str((node.get("metadata") or {}).get("name") or "")
        return [Request.for_object(p) for p in self.pods.cache.by_index(NODE_NAME_INDEX, name)]

    async def reconcile(self, request: Request) -> Result | None:
        pod = self.pods.cache.get_by_name(request.name, request.namespace)
        if pod is None:
            self.evictions.forget(request.namespace or "", request.name)
            return None
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = self.nodes.cache.get_by_name(str(node_name)) if node_name else None
        if node is None:
            return None
        now = self.clock.now()
        evict_at = self.evictions.due_at(pod, node)
        if evict_at is None:
            return None
        if now < evict_at:
            return Result(requeue_after=max(0.001, evict_at - now))
        await self._evict(pod, str(node_name), now)
        return None

    async def _evict(self, pod: dict[str, Any], node_name: str, now: float) -> None:
        """``addConditionAndDeletePod``: the DisruptionTarget condition, an Event, then the delete."""
        meta = pod["metadata"]
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        log.info("evicting %s/%s from node %s (NoExecute taint)", namespace, name, node_name)
        status = copy_json(pod.get("status") or {})
        conditions, changed = disruption_target(status.get("conditions") or [], now)
        if changed:
            try:
                await self.client.update(PODS, {**pod, "status": {**status, "conditions": conditions}},
                                         namespace=namespace, subresource="status")
            except NotFound:
                self.evictions.forget(namespace, name)
                return
        self.evictions.fired(namespace, name)
        self.events.emit(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {namespace}/{name}",
                         api_version="v1", kind="Pod")
        try:
            await self.client.delete(PODS, name, namespace=namespace, preconditions={"uid": meta.get("uid")})
        except NotFound:
            pass
