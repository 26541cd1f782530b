"""``POST .../pods/NAME/binding``: assign a pod to a node, as the scheduler does upstream.

Mirrors ``pkg/registry/core/pod/storage/storage.go`` (``BindingREST.Create`` / ``assignPod`` /
``setPodNodeAndMetadata``), in one compare-and-swap update of the pod through the core write path:

- the body is a v1 ``Binding`` whose ``metadata.name`` is the pod's (400 ``name in URL does not
  match name in Binding object`` otherwise) and whose ``target`` names a ``Node`` (422 otherwise);
- a pod that is being deleted, is already bound, or still has ``spec.schedulingGates`` is a 409;
  ``metadata.uid`` / ``metadata.resourceVersion`` in the Binding are preconditions (409);
- on success ``spec.nodeName`` is set, the Binding's annotations are copied onto the pod, the
  ``PodScheduled`` condition becomes True, and the answer is a ``Status`` Success (201).

The request is a CREATE of the ``pods/binding`` subresource, admitted as upstream's create handler
admits one (``handlers/create.go``, then ``BindingREST.Create``): the chain's mutating phase runs on
the Binding right after it is decoded (before the name check), its validating phase after
``ValidatePodBinding`` (``createValidation``), both with ``subresource="binding"`` and the
Binding as the object. Of the built-in plugins (release-1.32) only NamespaceLifecycle acts there: a
binding in a namespace that does not exist is 404 ``namespaces "x" not found`` and one in a
Terminating namespace is 403 with a ``NamespaceTerminating`` cause (its ``Admit`` exempts no
subresource); Priority and DefaultTolerationSeconds return at once for any subresource
(``plugin/pkg/admission/priority``, ``defaulttolerationseconds``: "only run ... on pods proper").
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import BadRequest, FieldError, ResourceInfo, conflict, format_time, invalid, not_found
from kubeloop.server._admission import AdmissionAttributes, Plan, plans_for, run_plan
from kubeloop.server._state import ServerState, guaranteed_update, object_key

__all__ = ["admit_subresource", "bind_pod", "set_pod_condition"]


def set_pod_condition(status: dict[str, Any], condition: dict[str, Any], now: float) -> None:
    """podutil.UpdatePodCondition: add or update; lastTransitionTime moves only when status changes."""
    conditions = status.setdefault("conditions", [])
    for existing in conditions:
        if existing.get("type") == condition["type"]:
            if existing.get("status") != condition["status"]:
                existing["lastTransitionTime"] = format_time(now)
            existing["status"] = condition["status"]
            for key in ("reason", "message"):
                if condition.get(key):
                    existing[key] = condition[key]
                else:
                    existing.pop(key, None)
            return
    new = {"type": condition["type"], "status": condition["status"], "lastProbeTime": None,
           "lastTransitionTime": format_time(now)}
    for key in ("reason", "message"):
        if condition.get(key):
            new[key] = condition[key]
    conditions.append(new)


async def admit_subresource(plan: Plan, attributes: AdmissionAttributes, body: dict[str, Any]) -> None:
    """One admission phase on a subresource CREATE's body (a Binding, an Eviction)."""
    pending = run_plan(plan, attributes, body, None)
    if pending is not None:
        await pending


async def bind_pod(state: ServerState, pods: ResourceInfo, namespace: str, name: str, body: Any,
                   *, user: Any = None, dry_run: bool = False) -> dict[str, Any]:
    """Bind pod ``namespace/name`` to the node the Binding ``body`` names; return the Success Status."""
    if not isinstance(body, dict):
        raise BadRequest("the body of the request must be a JSON object")
    kind = body.get("kind")
    if kind and kind != "Binding":
        raise BadRequest(f"the kind in the data ({kind}) does not match the expected kind (Binding)")
    mutating, validating = plans_for(state.admission, "CREATE", pods)
    attrs = AdmissionAttributes("CREATE", pods, namespace, name, "binding", user, dry_run)
    await admit_subresource(mutating, attrs, body)
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    if meta.get("name") != name:
        raise BadRequest("name in URL does not match name in Binding object")
    target = body.get("target") if isinstance(body.get("target"), dict) else {}
    assert isinstance(target, dict)
    node = target.get("name")
    errors: list[FieldError] = []
    if not isinstance(node, str) or not node:
        errors.append(FieldError.required("target.name", ""))
    if target.get("kind") not in (None, "", "Node"):
        errors.append(FieldError.not_supported("target.kind", target.get("kind"), ["Node"]))
    if errors:
        raise invalid("Binding", name, errors)
    await admit_subresource(validating, attrs, body)  # createValidation, after ValidatePodBinding
    uid = meta.get("uid") or ""
    rv = meta.get("resourceVersion") or ""
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    assert isinstance(annotations, dict)
    now = state.clock.now()

    def assign(pod: dict[str, Any]) -> dict[str, Any]:
        pod_meta = pod.setdefault("metadata", {})
        if uid and pod_meta.get("uid") != uid:
            raise conflict("pods", name, "", f"the UID in the precondition ({uid}) does not match the UID in "
                           f"record ({pod_meta.get('uid')}). The object might have been deleted and then recreated")
        if rv and pod_meta.get("resourceVersion") != rv:
            raise conflict("pods", name, "", f"the ResourceVersion in the precondition ({rv}) does not match the "
                           f"ResourceVersion in record ({pod_meta.get('resourceVersion')}). "
                           "The object might have been modified")
        spec = pod.setdefault("spec", {})
        if pod_meta.get("deletionTimestamp"):
            raise conflict("pods", name, "", f"pod {name} is being deleted, cannot be assigned to a host")
        if spec.get("nodeName"):
            raise conflict("pods", name, "", f"pod {name} is already assigned to node \"{spec['nodeName']}\"")
        if spec.get("schedulingGates"):
            raise conflict("pods", name, "", f"pod {name} has non-empty .spec.schedulingGates")
        spec["nodeName"] = node
        if annotations:
            pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **annotations}
        status = pod.setdefault("status", {})
        set_pod_condition(status, {"type": "PodScheduled", "status": "True"}, now)
        return pod

    # Upstream's GuaranteedUpdate on the pod's storage: spec.nodeName and the PodScheduled
    # condition change together in one compare-and-swap (the main-resource strategy would keep
    # status), retried when another writer wins the race.
    key = object_key(pods, namespace, name)
    if not await guaranteed_update(state.store, key, assign, missing=lambda: not_found(pods.plural, name, pods.group),
                                   dry_run=dry_run):
        raise conflict(pods.plural, name, pods.group)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
