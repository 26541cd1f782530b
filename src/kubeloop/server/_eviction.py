"""``POST .../pods/NAME/eviction`` (policy/v1 Eviction) and the pod subresource route.

Eviction mirrors ``pkg/registry/core/pod/storage/eviction.go`` (``EvictionREST.Create``):

1. The body is an ``Eviction`` (policy/v1 or v1beta1) named like the pod (400 otherwise); its
   ``deleteOptions`` are used for the delete, ``dryRun`` may come from the query or the body.
2. A pod that is Pending, Succeeded, Failed or already being deleted is deleted at once: it is not
   disrupting anything a budget protects (``canIgnorePDB``).
3. Otherwise the PodDisruptionBudgets of the pod's namespace whose selector matches its labels are
   found: more than one is a 500 Failure (upstream's message); none means delete.
4. An unready pod is deleted without touching the budget when the budget is already met
   (``currentHealthy >= desiredHealthy > 0``) or ``unhealthyPodEvictionPolicy: AlwaysAllow``; the
   delete then carries the pod's resourceVersion as a precondition (a 409 there becomes a 429).
5. ``checkAndDecrement`` on the budget's status, as one compare-and-swap retried on lost races:
   stale status (``observedGeneration < generation``) is 429 with ``Retry-After: 10``; negative
   ``disruptionsAllowed`` or an oversized ``disruptedPods`` map is 403; zero allowed is 429
   ``Cannot evict pod as it would violate the pod's disruption budget.`` with a ``DisruptionBudget``
   cause naming the budget; otherwise ``disruptionsAllowed`` is decremented and the pod is recorded
   in ``status.disruptedPods`` (the disruption controller forgets it after 2 minutes).
6. The pod gets the ``DisruptionTarget`` condition (``EvictionByEvictionAPI``) and is deleted with
   the eviction's options (graceful, as any delete). The answer is a ``Status`` Success (201).

The request is a CREATE of the ``pods/eviction`` subresource and is admitted as one
(``handlers/create.go``, then ``EvictionREST.Create``): the chain's mutating phase runs on the
Eviction right after it is decoded (before the name check), its validating phase after the dry-run
options are reconciled (``createValidation``), both with ``subresource="eviction"`` and the Eviction
as the object. Of the built-in plugins (release-1.32) only NamespaceLifecycle acts there: an
eviction in a namespace that does not exist is 404 ``namespaces "x" not found`` (not the pod's 404)
and one in a Terminating namespace is 403 with a ``NamespaceTerminating`` cause (a cause
``kubectl/pkg/drain`` looks for); Priority and
DefaultTolerationSeconds return at once for any subresource. The pod's delete inside the eviction
runs the DELETE admission of :func:`~kubeloop.server._delete.delete_object` (kubeloop's deletion
protection then holds for evictions too).

The budget is read and written through the server's own store, not a client: this runs inside the
API server, as upstream's eviction REST does.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import orjson

from kubeloop.api import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    InternalError,
    MethodNotAllowed,
    NotFound,
    ResourceInfo,
    TooManyRequests,
    format_time,
    label_selector_from_dict,
    not_found,
)
from kubeloop.server._admission import AdmissionAttributes, plans_for
from kubeloop.server._binding import admit_subresource, bind_pod, set_pod_condition
from kubeloop.server._delete import check_preconditions, delete_object
from kubeloop.server._handlers import BodyDecoder
from kubeloop.server._http import (
    Receive,
    Request,
    Scope,
    Send,
    decode_json,
    decode_yaml,
    send_error,
    send_json,
)
from kubeloop.server._options import DeleteOptions, parse_delete_options
from kubeloop.server._requestinfo import truthy
from kubeloop.server._state import ServerState, collection_prefix, guaranteed_update, object_key, renderer
from kubeloop.store import KeyNotFound, RevisionMismatch

__all__ = ["MAX_DISRUPTED_POD_SIZE", "PodSubresources", "evict_pod", "is_pod_subresource_post"]

log = logging.getLogger("kubeloop.server.eviction")

MAX_DISRUPTED_POD_SIZE = 2000
_EVICT_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
_MAX_RETRIES = 20  # k/k registry/core/pod/storage/eviction.go EvictionsRetry: 20 steps


def _is_ready(pod: dict[str, Any]) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _too_many_requests(name: str) -> TooManyRequests:
    return TooManyRequests(_EVICT_MESSAGE, details={"retryAfterSeconds": 10, "causes": [
        {"reason": "DisruptionBudget", "message": f"The disruption budget {name} is still being processed by the server."}
    ]})


def _find(state: ServerState, group: str, plural: str) -> ResourceInfo:
    info = state.kinds.get(group, "v1", plural)
    if info is None:
        raise InternalError(f"the server does not serve {plural}")
    return info


async def _matching_budgets(state: ServerState, pod: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    pdbs = _find(state, "policy", "poddisruptionbudgets")
    namespace = pod["metadata"].get("namespace") or ""
    labels = pod["metadata"].get("labels") or {}
    listed = await state.store.range(collection_prefix(pdbs, namespace))
    found = []
    for kv in listed.items:
        pdb = orjson.loads(kv.value)
        try:
            selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
        except (ApiError, ValueError):
            continue  # an invalid selector matches nothing (eviction.go getPodDisruptionBudgets)
        if (pdb.get("spec") or {}).get("selector") is None or not selector.matches(labels):
            continue
        found.append((kv.key, kv.mod_revision, pdb))
    return found


def _check_and_decrement(pdb: dict[str, Any], pod_name: str, now: float, dry_run: bool) -> dict[str, Any]:
    name = pdb["metadata"]["name"]
    status = pdb.setdefault("status", {})
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise _too_many_requests(name)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise Forbidden(f'poddisruptionbudgets.policy "{name}" is forbidden: pdb disruptions allowed is negative')
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise Forbidden(f'poddisruptionbudgets.policy "{name}" is forbidden: DisruptedPods map too big - too many '
                        "evictions not confirmed by PDB controller")
    if allowed == 0:
        raise TooManyRequests(_EVICT_MESSAGE, details={"causes": [{"reason": "DisruptionBudget", "message": (
            f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy pods and has "
            f"{int(status.get('currentHealthy') or 0)} currently")}]})
    status["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        # component-helpers UpdateDisruptionAllowedCondition.
        conditions = status.setdefault("conditions", [])
        _set_condition(conditions, "DisruptionAllowed", "False", "InsufficientPods", "", now,
                       pdb["metadata"].get("generation"))
    if not dry_run:
        disrupted = status.get("disruptedPods") or {}
        disrupted[pod_name] = format_time(now)
        status["disruptedPods"] = disrupted
    return pdb


def _set_condition(conditions: list[dict[str, Any]], type_: str, status: str, reason: str, message: str,
                   now: float, generation: Any) -> None:
    for condition in conditions:
        if condition.get("type") == type_:
            if condition.get("status") != status:
                condition["lastTransitionTime"] = format_time(now)
            condition.update(status=status, reason=reason, message=message)
            if generation is not None:
                condition["observedGeneration"] = generation
            return
    new: dict[str, Any] = {"type": type_, "status": status}
    if generation is not None:
        new["observedGeneration"] = generation
    new.update(lastTransitionTime=format_time(now), reason=reason, message=message)
    conditions.append(new)


async def _decrement(state: ServerState, key: str, pod_name: str, dry_run: bool) -> None:
    name = key.rsplit("/", 1)[-1]

    def decrement(pdb: dict[str, Any]) -> dict[str, Any]:
        return _check_and_decrement(pdb, pod_name, state.clock.now(), dry_run)

    if not await guaranteed_update(state.store, key, decrement, dry_run=dry_run, attempts=_MAX_RETRIES,
                                   missing=lambda: NotFound(f'poddisruptionbudgets.policy "{name}" not found')):
        raise ApiError(f"couldn't update PodDisruptionBudget \"{name}\" due to conflicts", reason="Timeout",
                       details={"retryAfterSeconds": 10})


async def _mark_and_delete(state: ServerState, pods: ResourceInfo, pod: dict[str, Any], options: DeleteOptions,
                           user: Any) -> None:
    """addConditionAndDeletePod: the DisruptionTarget condition, then the (graceful) delete."""
    namespace = pod["metadata"].get("namespace") or ""
    name = pod["metadata"]["name"]
    if not options.dry_run:
        key = object_key(pods, namespace, name)
        kv = await state.store.get(key)
        if kv is None:
            raise not_found("pods", name)
        latest = orjson.loads(kv.value)
        # Upstream's getLatestPod skips an empty precondition; the delete below still checks it.
        check_preconditions(pods, latest["metadata"], dataclasses.replace(
            options, uid_precondition=options.uid_precondition or None, rv_precondition=options.rv_precondition or None))
        status = latest.setdefault("status", {})
        before = orjson.dumps(status)
        set_pod_condition(status, {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                                   "message": "Eviction API: evicting"}, state.clock.now())
        if orjson.dumps(status) != before:
            try:
                stored = await state.store.update(key, renderer(latest), expected_revision=kv.mod_revision)
            except (RevisionMismatch, KeyNotFound):
                raise Conflict(f'Operation cannot be fulfilled on pods "{name}": the object has been modified; '
                               "please apply your changes to the latest version and try again") from None
            if options.rv_precondition:
                # We made the pod's newest version ourselves: the precondition moves with it.
                options = dataclasses.replace(options, rv_precondition=str(stored.mod_revision))
    await delete_object(state, pods, namespace, name, options, user=user)


async def evict_pod(state: ServerState, pods: ResourceInfo, namespace: str, name: str, body: Any, *,
                    user: Any = None, query_dry_run: bool = False) -> dict[str, Any]:
    """Evict pod ``namespace/name`` as the Eviction ``body`` asks; return the Success Status or raise."""
    if not isinstance(body, dict):
        raise BadRequest("the body of the request must be a JSON object")
    if body.get("kind") not in (None, "", "Eviction"):
        raise BadRequest(f"the kind in the data ({body.get('kind')}) does not match the expected kind (Eviction)")
    mutating, validating = plans_for(state.admission, "CREATE", pods)
    attrs = AdmissionAttributes("CREATE", pods, namespace, name, "eviction", user, query_dry_run)
    await admit_subresource(mutating, attrs, body)
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    if meta.get("name") != name:
        raise BadRequest("name in URL does not match name in Eviction object")
    raw_options = body.get("deleteOptions")
    options = parse_delete_options({}, raw_options if raw_options is not None else {})
    if query_dry_run and not options.dry_run:
        options = dataclasses.replace(options, dry_run=True)
    await admit_subresource(validating, attrs, body)  # createValidation
    key = object_key(pods, namespace, name)
    kv = await state.store.get(key)
    if kv is None:
        raise not_found("pods", name)
    pod = orjson.loads(kv.value)
    phase = (pod.get("status") or {}).get("phase")
    deleting = bool(pod["metadata"].get("deletionTimestamp"))
    if phase in ("Pending", "Succeeded", "Failed") or deleting:
        # canIgnorePDB; shouldEnforceResourceVersion guards a Pending pod that might turn ready.
        if phase == "Pending" and not deleting and options.rv_precondition is None:
            options = dataclasses.replace(options, rv_precondition=pod["metadata"].get("resourceVersion"))
        await _mark_and_delete(state, pods, pod, options, user)
        return _success()
    budgets = await _matching_budgets(state, pod)
    if len(budgets) > 1:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 500,
                "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
                           "not support."}
    guarded_by_rv = False
    if budgets:
        pdb_key, _, pdb = budgets[0]
        status = pdb.get("status") or {}
        skip = False
        if not _is_ready(pod):
            policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
            desired = int(status.get("desiredHealthy") or 0)
            if policy == "AlwaysAllow" or (int(status.get("currentHealthy") or 0) >= desired and desired > 0):
                skip = guarded_by_rv = True
        if not skip:
            await _decrement(state, pdb_key, name, options.dry_run)
    original_rv = options.rv_precondition
    if guarded_by_rv and original_rv is None:
        options = dataclasses.replace(options, rv_precondition=pod["metadata"].get("resourceVersion"))
    try:
        await _mark_and_delete(state, pods, pod, options, user)
    except Conflict:
        if guarded_by_rv and original_rv is None:
            raise _too_many_requests(budgets[0][2]["metadata"]["name"]) from None
        raise
    return _success()


def _success() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def is_pod_subresource_post(request: Request) -> bool:
    """``POST /api/v1/namespaces/NS/pods/NAME/{eviction,binding}``."""
    path = request.path.rstrip("/")
    if not path.endswith(("/eviction", "/binding")):  # every other request: no split
        return False
    parts = path.strip("/").split("/")
    return (len(parts) == 7 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods"
            and parts[6] in ("eviction", "binding"))


class PodSubresources:
    """The ASGI route for the pod ``eviction`` and ``binding`` subresources (mounted by the app).

    Bodies are JSON, YAML, or any media type in ``decoders`` (the app's: protobuf, which
    ``kubectl drain`` sends its Evictions in), each decoder called with the pods resource.
    """

    def __init__(self, state: ServerState, *, decoders: Mapping[str, BodyDecoder] | None = None) -> None:
        self.state = state
        self.decoders: Mapping[str, BodyDecoder] = decoders if decoders is not None else {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            if request.method != "POST":
                raise MethodNotAllowed("the server does not allow this method on the requested resource",
                                       details={})
            _, _, _, namespace, _, name, sub = request.path.strip("/").split("/")
            pods = _find(self.state, "", "pods")
            body = await self._decode(request, pods)
            dry_run = truthy(request.query.get("dryRun")) or bool(request.query.get("dryRun"))
            if sub == "binding":
                result = await bind_pod(self.state, pods, namespace, name, body, user=request.user, dry_run=dry_run)
            else:
                result = await evict_pod(self.state, pods, namespace, name, body, user=request.user,
                                         query_dry_run=dry_run)
            await send_json(send, int(result.get("code") or 201), result)
        except ApiError as error:
            await send_error(send, error)
        except Exception as exc:  # every failure is a Status, never a dropped connection
            log.exception("internal error serving %s %s", request.method, request.path)
            await send_error(send, InternalError(f"Internal error occurred: {exc}"))

    async def _decode(self, request: Request, pods: ResourceInfo) -> Any:
        raw = await request.body()
        decoder = self.decoders.get(request.content_type)
        if decoder is not None:
            return decoder(raw, pods)
        if request.content_type in ("application/yaml", "application/x-yaml"):
            return decode_yaml(raw)
        if not raw.strip():
            raise BadRequest("Object 'Kind' is missing in ''")
        return decode_json(raw)
