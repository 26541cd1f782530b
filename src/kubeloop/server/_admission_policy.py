"""The ValidatingAdmissionPolicy admission plugin: CEL policies bound to requests, judged before the write.

Upstream's plugin (k8s.io/apiserver ``pkg/admission/plugin/policy/validating``, on by default since 1.30),
a validating plugin placed after the mutating webhooks and before ValidatingAdmissionWebhook and
ResourceQuota in kube-apiserver's ``AllOrderedPlugins``. Its dispatcher (``dispatcher.go``), per request:

- requests for ValidatingAdmissionPolicies and their bindings are never judged (``isPolicyResource``);
- for each policy that has bindings (name order here) whose ``matchConstraints`` match the request
  (:mod:`kubeloop.server._admission_policy_match`): a policy whose ``paramKind`` names no served kind is
  a configuration error, ``failed to configure policy: failed to find resource referenced by paramKind:
  '<group>/<version>, Kind=<kind>'``;
- for each of its bindings whose ``matchResources`` (when set) match: the params (``CollectParams``,
  :meth:`ValidatingAdmissionPolicy._params`) — none without ``paramKind`` or ``paramRef``, else the object
  named (in ``paramRef.namespace``, or the request's namespace for a namespaced kind), or those the
  selector picks, by name; none found with ``parameterNotFoundAction: Deny`` is ``failed to configure
  binding: no params found for policy binding with `Deny` parameterNotFoundAction``; then each param's
  decisions (:mod:`kubeloop.server._admission_policy_eval`);
- a configuration error denies under ``failurePolicy: Fail`` (whatever the binding's actions) and is
  ignored under ``Ignore``; a denying decision is acted on by each of the binding's
  ``validationActions``: ``Deny`` refuses the request, ``Warn`` adds the ``Warning`` header
  ``Validation failed for ValidatingAdmissionPolicy 'P' with binding 'B': MSG``, ``Audit`` writes an
  audit annotation upstream (kubeloop records nothing for it).

The first refusal is the answer: the message ``<resource> "<name>" is forbidden: ValidatingAdmissionPolicy
'P' with binding 'B' denied request: MSG`` (``admission.NewForbidden``), with the decision's reason
(Invalid, 422, when the validation sets none or for an error; Forbidden 403, RequestEntityTooLarge 413)
and one cause carrying the policy's message. ``dryRun`` requests are judged as any other.

Policies and bindings are kept by :class:`~kubeloop.server._prefix_changes.PrefixObjects` (store watches
polled on each request, as the webhooks' configurations and the Priority plugin's classes): a policy
written before a request started is always applied to it, where upstream's informers take a moment. Without any binding a request costs one poll.
Params and namespaces are read from the store when a binding needs them. Expressions are compiled once per
stored version of a policy, on the first request it judges (the CEL engine is imported then).

Not modelled: ``matchPolicy: Equivalent``'s other versions (kubeloop serves one version of each
resource) and cel-go's runtime cost budget. ``authorizer`` answers with the server's RBAC
(:mod:`kubeloop.server._admission_authorizer`). ``Warn`` reaches the ``Warning`` header on every verb,
DELETE and deletecollection included, as upstream's request-scoped warning recorder.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from kubeloop.api import (
    ApiError,
    Forbidden,
    Invalid,
    RequestEntityTooLarge,
    ResourceInfo,
    Unauthorized,
    not_found,
)
from kubeloop.server._admission import AdmissionAttributes, Operation, ValidatingPlugin, forget_plans
from kubeloop.server._admission_authorizer import request_authorizer
from kubeloop.server._admission_policy_match import MatchRequest, matches, selector_of
from kubeloop.server._prefix_changes import PrefixObjects
from kubeloop.server._state import ServerState, collection_prefix, namespace_key, object_key
from kubeloop.store import KeyValue

if TYPE_CHECKING:
    from kubeloop.server._admission_policy_eval import CompiledPolicy, Decision

__all__ = ["ValidatingAdmissionPolicy"]

GROUP = "admissionregistration.k8s.io"
POLICIES = "validatingadmissionpolicies"
BINDINGS = "validatingadmissionpolicybindings"
_ERRORS: dict[str, type[ApiError]] = {
    "Forbidden": Forbidden, "Invalid": Invalid, "RequestEntityTooLarge": RequestEntityTooLarge,
    "Unauthorized": Unauthorized,
}


Entry = tuple[int, dict[str, Any]]  # a stored policy or binding: (mod_revision, object)


def _entry(name: str, kv: KeyValue) -> Entry:
    """A policy or binding as :class:`PrefixObjects` keeps it; the revision tells when to compile again."""
    try:
        obj = orjson.loads(kv.value)
    except orjson.JSONDecodeError:
        obj = {}
    return kv.mod_revision, obj if isinstance(obj, dict) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _gvk_text(api_version: str, kind: str) -> str:
    """schema.GroupVersionKind's String(): ``example.com/v1, Kind=Foo``, ``/v1, Kind=ConfigMap``."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


class _ConfigError(Exception):
    pass


class ValidatingAdmissionPolicy(ValidatingPlugin):
    """The plugin (see the module contract)."""

    def __init__(self, state: ServerState) -> None:
        self._state = state
        self._policies = PrefixObjects(state.store, f"/registry/{GROUP}/{POLICIES}/", _entry)
        self._bindings = PrefixObjects(state.store, f"/registry/{GROUP}/{BINDINGS}/", _entry)
        self._compiled: dict[str, tuple[int, CompiledPolicy]] = {}

    def handles(self, operation: Operation, resource: ResourceInfo) -> bool:
        # Planned out while no binding is stored: the admission chain plans again when one is written
        # (AdmissionChain.follow_configurations), so a write without bindings pays nothing.
        if resource.group == GROUP and resource.plural in (POLICIES, BINDINGS):
            return False
        bindings = self._bindings.current()
        return bindings is None or bool(bindings)

    def validate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        bindings = self._bindings.current()
        if bindings is None:
            return self._load_and_dispatch(attributes, obj, old)
        if not bindings:
            return None
        return self._dispatch(attributes, obj, old)

    async def _load_and_dispatch(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        if await self._bindings.load():
            await self._dispatch(attributes, obj, old)
        else:  # none stored: the chain may now plan this plugin out
            forget_plans(self._state.admission)

    # -- dispatch ------------------------------------------------------------------------------------

    async def _dispatch(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        policies = self._policies.current()
        if policies is None:
            policies = await self._policies.load()
        bindings = self._bindings.current()
        if bindings is None:
            bindings = await self._bindings.load()
        by_policy: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for name in sorted(bindings):
            binding = bindings[name][1]
            policy_name = _spec(binding).get("policyName")
            if isinstance(policy_name, str) and policy_name in policies:
                by_policy.setdefault(policy_name, []).append((name, binding))
        if not by_policy:
            return
        namespace, namespace_found = await self._namespace(attributes)
        request = _match_request(attributes, obj, old, namespace)
        denied: list[tuple[str, str | None, Decision]] = []
        authorizer: tuple[dict[str, Any], dict[str, Any]] | None = None
        for policy_name in sorted(by_policy):
            revision, policy = policies[policy_name]
            spec = _spec(policy)
            constraints = spec.get("matchConstraints")
            if not isinstance(constraints, Mapping) or not matches(constraints, request):
                continue
            fail = spec.get("failurePolicy") != "Ignore"
            param_kind = spec.get("paramKind")
            param_info = None
            if isinstance(param_kind, Mapping):
                api_version, kind = str(param_kind.get("apiVersion") or ""), str(param_kind.get("kind") or "")
                param_info = self._state.kinds.by_api_version(api_version, kind)
                if param_info is None:
                    if fail:
                        denied.append((policy_name, None, _config_error(
                            f"failed to find resource referenced by paramKind: '{_gvk_text(api_version, kind)}'", True)))
                    continue
            compiled = self._compiled_policy(policy_name, revision, policy)
            for binding_name, binding in by_policy[policy_name]:
                binding_spec = _spec(binding)
                match_resources = binding_spec.get("matchResources")
                if isinstance(match_resources, Mapping) and not matches(match_resources, request):
                    continue
                try:
                    params = await self._params(param_info, binding_spec.get("paramRef"), attributes.namespace)
                except _ConfigError as e:
                    if fail:
                        denied.append((policy_name, binding_name, _config_error(str(e), False)))
                    continue
                if not namespace_found:  # dispatcher.go: GetNamespace's error is the answer, as it is
                    raise not_found("namespaces", attributes.namespace)
                functions = None
                if compiled.uses_authorizer:  # asked once per request: an RBAC snapshot read, if any
                    if authorizer is None:
                        authorizer = await request_authorizer(self._state, attributes.user, _request(attributes, obj))
                    functions = authorizer[1]
                for param in params:
                    activation = {"object": obj, "oldObject": old, "params": param,
                                  "request": _request(attributes, obj), "namespaceObject": _namespace_object(namespace)}
                    if functions is not None and authorizer is not None:
                        activation["authorizer"] = authorizer[0]
                    for decision in compiled.decide(activation, functions):
                        if decision.action != "deny":
                            continue
                        if decision.direct:  # dispatcher.go: AuditAnnotationActionError denies outright
                            denied.append((policy_name, binding_name, decision))
                            continue
                        self._act(decision, policy_name, binding_name, binding_spec, attributes, denied)
        if denied:
            raise _refusal(attributes, obj, *denied[0])

    @staticmethod
    def _act(decision: Decision, policy: str, binding: str, spec: Mapping[str, Any], attributes: AdmissionAttributes,
             denied: list[tuple[str, str | None, Decision]]) -> None:
        actions = spec.get("validationActions")
        for action in actions if isinstance(actions, list) else ():
            if action == "Deny":
                denied.append((policy, binding, decision))
            elif action == "Warn" and attributes.warnings is not None:
                text = f"Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{binding}': {decision.message}"
                if text not in attributes.warnings:
                    attributes.warnings.append(text)
            # Audit: an audit annotation upstream; nothing visible here.

    def _compiled_policy(self, name: str, revision: int, policy: Mapping[str, Any]) -> CompiledPolicy:
        seen = self._compiled.get(name)
        if seen is not None and seen[0] == revision:
            return seen[1]
        from kubeloop.server._admission_policy_eval import CompiledPolicy  # imports the CEL engine: late

        compiled = CompiledPolicy(policy)
        if len(self._compiled) >= 1024:  # bounded: policies come and go
            self._compiled.clear()
        self._compiled[name] = (revision, compiled)
        return compiled

    # -- inputs --------------------------------------------------------------------------------------

    async def _namespace(self, attributes: AdmissionAttributes) -> tuple[dict[str, Any] | None, bool]:
        """The request's namespace as stored (None for a cluster-scoped request, a Namespace's own
        included), and whether it is stored. A missing one (NamespaceLifecycle refuses creates and updates
        there; without it, or for what remains in a deleted namespace, a request may get here) matches
        selectors as a namespace without labels, and a binding that applies answers 404 ``namespaces "NS"
        not found``: upstream's ``matcher.GetNamespace`` (the lister, then a live GET) fails so, and the
        dispatcher returns that error as it is (``validating/dispatcher.go``)."""
        if not attributes.namespace or not attributes.resource.namespaced:
            return None, True
        kv = await self._state.store.get(namespace_key(attributes.namespace))
        if kv is None:
            return {"metadata": {"name": attributes.namespace}}, False
        namespace: dict[str, Any] = orjson.loads(kv.value)
        return namespace, True

    async def _params(self, info: ResourceInfo | None, ref: Any, namespace: str) -> list[dict[str, Any] | None]:
        """generic.CollectParams: the params one binding evaluates with (``[None]``: none needed)."""
        if info is None or not isinstance(ref, Mapping):
            return [None]
        ref_namespace = str(ref.get("namespace") or "")
        params_namespace = ""
        if info.namespaced:
            params_namespace = ref_namespace or namespace
            if not params_namespace:
                raise _ConfigError("failed to configure binding: cannot use namespaced paramRef in policy binding "
                                   "that matches cluster-scoped resources")
        elif ref_namespace:
            raise _ConfigError("failed to configure binding: paramRef.namespace must not be provided for a "
                               "cluster-scoped `paramKind`")
        params: list[dict[str, Any] | None] = []
        name = str(ref.get("name") or "")
        if name:
            kv = await self._state.store.get(object_key(info, params_namespace, name))
            if kv is not None:
                params.append(orjson.loads(kv.value))
        elif isinstance(ref.get("selector"), Mapping):
            selector = selector_of(ref.get("selector"))
            listed = await self._state.store.range(collection_prefix(info, params_namespace))
            found = [orjson.loads(kv.value) for kv in listed.items]
            chosen = [p for p in found if selector.matches(((p.get("metadata") or {}).get("labels")) or {})]
            chosen.sort(key=lambda p: str((p.get("metadata") or {}).get("name") or ""))
            params.extend(chosen)
        if not params and ref.get("parameterNotFoundAction") == "Deny":
            raise _ConfigError("failed to configure binding: no params found for policy binding with `Deny` "
                               "parameterNotFoundAction")
        return params


def _match_request(attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None,
                   namespace: Mapping[str, Any] | None) -> MatchRequest:
    info = attributes.resource
    labels: Mapping[str, str] | None = None
    if namespace is not None:
        meta = namespace.get("metadata")
        found = meta.get("labels") if isinstance(meta, Mapping) else None
        labels = found if isinstance(found, Mapping) else {}
    return MatchRequest(attributes.operation, info.group, info.version, info.plural, attributes.subresource,
                        _request_namespace(attributes), attributes.name, obj, old, labels)


def _namespace_object(namespace: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``namespaceObject``: the namespace with the fields upstream's CreateNamespaceObject keeps (no
    apiVersion, kind, ownerReferences or managedFields); null for a cluster-scoped request."""
    if namespace is None:
        return None
    meta = namespace.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    result: dict[str, Any] = {"metadata": {key: meta[key] for key in _NAMESPACE_META if key in meta}}
    for key in ("spec", "status"):
        if key in namespace:
            result[key] = namespace[key]
    return result


_NAMESPACE_META = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "finalizers")


def _config_error(message: str, policy_level: bool) -> Decision:
    from kubeloop.server._admission_policy_eval import Decision

    return Decision("deny", f"failed to configure policy: {message}" if policy_level else message, error=True)


def _request_namespace(attributes: AdmissionAttributes) -> str:
    """A Namespace's own requests carry its name as their namespace, as upstream's attributes."""
    info = attributes.resource
    if info.group == "" and info.plural == "namespaces":
        return attributes.name
    return attributes.namespace


_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def _request(attributes: AdmissionAttributes, obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """``request``: the admission.k8s.io/v1 AdmissionRequest upstream builds (CreateAdmissionRequest),
    without object and oldObject, as unstructured JSON (empty omitempty fields left out)."""
    info = attributes.resource
    if attributes.subresource == "scale":
        kind = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    elif attributes.operation == "CONNECT" and obj is not None:  # the options kind (PodExecOptions ...)
        kind = {"group": info.group, "version": info.version, "kind": str(obj.get("kind") or info.kind)}
    else:
        kind = {"group": info.group, "version": info.version, "kind": info.kind}
    resource = {"group": info.group, "version": info.version, "resource": info.plural}
    user: dict[str, Any] = {}
    if attributes.user is not None:
        who = attributes.user
        if getattr(who, "name", ""):
            user["username"] = who.name
        if getattr(who, "uid", ""):
            user["uid"] = who.uid
        if getattr(who, "groups", ()):
            user["groups"] = list(who.groups)
        if getattr(who, "extra", None):
            user["extra"] = {key: list(values) for key, values in who.extra.items()}
    request: dict[str, Any] = {"uid": "", "kind": kind, "resource": resource, "requestKind": dict(kind),
                               "requestResource": dict(resource), "operation": attributes.operation,
                               "userInfo": user, "dryRun": attributes.dry_run,
                               "options": {"kind": _OPTIONS[attributes.operation], "apiVersion": "meta.k8s.io/v1"}
                               if attributes.operation in _OPTIONS else None}  # CONNECT has none
    if attributes.subresource:
        request["subResource"] = request["requestSubResource"] = attributes.subresource
    name = attributes.name
    if not name and obj is not None:
        meta = obj.get("metadata")
        name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
    if name:
        request["name"] = name
    if namespace := _request_namespace(attributes):
        request["namespace"] = namespace
    return request


def _refusal(attributes: AdmissionAttributes, obj: Mapping[str, Any] | None, policy: str, binding: str | None,
             decision: Decision) -> ApiError:
    """The first denied decision as upstream answers it (dispatcher.go: admission.NewForbidden, then the
    decision's reason and its code)."""
    if binding is not None:
        message = f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {decision.message}"
    else:
        message = f"ValidatingAdmissionPolicy '{policy}' denied request: {decision.message}"
    info = attributes.resource
    name = attributes.name
    if not name and obj is not None:
        meta = obj.get("metadata")
        if isinstance(meta, Mapping):
            name = str(meta.get("name") or meta.get("generateName") or "")
    name = name or "Unknown"
    details: dict[str, Any] = {"name": name, "kind": info.plural, "causes": [{"message": message}]}
    if info.group:
        details["group"] = info.group
    reason = decision.reason or "Invalid"
    error_class = _ERRORS.get(reason, Invalid)
    return error_class(f'{info.group_resource} "{name}" is forbidden: {message}', reason=reason, details=details,
                       code=None if reason in _ERRORS else 422)
