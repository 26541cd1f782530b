"""RBAC privilege-escalation prevention, as an admission plugin on the four RBAC kinds.

Upstream (k/k ``pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased``,
``pkg/registry/rbac/escalation_check.go``, ``pkg/registry/rbac/validation/rule.go``):

- Creating or updating a Role/ClusterRole is allowed for ``system:masters``, for a user granted
  verb ``escalate`` on that role, for an update that changes only what the garbage collector needs
  (``ownerReferences``, ``finalizers``: upstream's ``IsOnlyMutatingGCFields``), and otherwise only
  when the user already holds every permission the rules grant (in the role's namespace; cluster-wide
  for a ClusterRole). So relabelling a role takes holding its rules too: a label can make an
  aggregated ClusterRole gather it.
- A ClusterRole with an ``aggregationRule`` (at least one selector) can gather any role's rules, so
  creating one, or changing one that has or had an aggregationRule (beyond the GC fields), also
  needs ``*`` on everything
  (``fullAuthority``: every verb on ``*.*`` and on every path), else 403 ``must have cluster-admin
  privileges to use the aggregationRule``. The ClusterRole aggregation controller, which writes these
  roles' rules, runs with that authority.
- Creating or updating a RoleBinding/ClusterRoleBinding is allowed for ``system:masters``, for a user
  granted verb ``bind`` on the referenced role (checked in the binding's namespace), and otherwise only
  when the user already holds every permission of the referenced role (which must exist: 404 if not).
- A refusal is 403 ``<resource> "<name>" is forbidden: user "<name>" (groups=[...]) is attempting to
  grant RBAC permissions not currently held:`` followed by one line per missing permission, in
  upstream's compact form (``{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}``),
  sorted.

"Holds" is decided by the RBAC evaluator itself: each granted permission is broken down to one verb,
group, resource and name (or one verb and path), and must be allowed; a ``*`` in the granted rule is
held only through a ``*`` of the user's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from kubeloop.api import Forbidden, ResourceInfo, not_found
from kubeloop.server._admission import AdmissionAttributes, AdmitPlugin
from kubeloop.server._authn import User
from kubeloop.server._authz import Attributes, go_quote
from kubeloop.server._authz_rbac import (
    RBAC_GROUP,
    RbacAuthorizer,
    RbacSnapshot,
    decide,
    policy_rules,
    rule_strings,
)

__all__ = ["RbacEscalationCheck"]

_ROLES = {"Role": "roles", "ClusterRole": "clusterroles"}


class RbacEscalationCheck(AdmitPlugin):
    """An :class:`~kubeloop.server.Admission` plugin; needs the server's RBAC authorizer."""

    def __init__(self, authorizer: RbacAuthorizer) -> None:
        self._authorizer = authorizer

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return resource.group == RBAC_GROUP and operation != "DELETE"

    def admit(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        """``None`` when the write needs no check (not RBAC, no object, a subresource, a master);
        otherwise the check, which reads the authorizer's snapshot."""
        info = attributes.resource
        user = attributes.user
        if info.group != RBAC_GROUP or obj is None or attributes.subresource or not isinstance(user, User):
            return None
        if user.is_master:
            return None
        return self._check(attributes, obj, old, user)

    async def _check(
        self, attributes: AdmissionAttributes, obj: dict[str, Any], old: dict[str, Any] | None, user: User
    ) -> None:
        info = attributes.resource
        snapshot = await self._authorizer.snapshot()
        namespace = attributes.namespace
        aggregating = False
        if info.kind in _ROLES:
            if _allowed(snapshot, user, "escalate", _ROLES[info.kind], attributes.name, namespace):
                return
            if old is not None and _only_gc_fields_change(obj, old):
                return
            aggregating = info.kind == "ClusterRole" and (_aggregates(obj) or _aggregates(old))
            rules = policy_rules(obj)
        else:
            ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), Mapping) else {}
            assert isinstance(ref, Mapping)
            kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
            if kind in _ROLES and _allowed(snapshot, user, "bind", _ROLES[kind], name, namespace):
                return
            role = snapshot.cluster_roles.get(name) if kind == "ClusterRole" else snapshot.roles.get((namespace, name))
            if role is None:
                raise not_found(_ROLES.get(kind, "roles"), name, RBAC_GROUP)
            rules = policy_rules(role)
        missing = [sub for rule in rules for sub in _breakdown(rule) if not _holds(snapshot, user, namespace, sub)]
        if missing:
            groups = " ".join(go_quote(g) for g in user.groups)
            lines = "\n".join(sorted({_compact_string(r) for r in _compact(missing)}))
            message = (
                f"user {go_quote(user.name)} (groups=[{groups}]) is attempting to grant RBAC permissions not currently held:\n"
                f"{lines}"
            )
            resource = f"{info.plural}.{RBAC_GROUP}"
            raise Forbidden(
                f'{resource} "{attributes.name}" is forbidden: {message}',
                details={"name": attributes.name, "group": RBAC_GROUP, "kind": info.plural},
            )
        if aggregating:
            _confirm_full_authority(snapshot, user, info, attributes.name)


# upstream's fullAuthority: what setting an aggregationRule needs, since it can gather anything
_FULL_AUTHORITY = ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]})
# Metadata an update may change and still be only a GC update (upstream's IsOnlyMutatingGCFields). The
# server has already filled resourceVersion, uid, creationTimestamp, generation and the deletion fields
# from the stored object (or refused a change to them), so they compare equal when unchanged.
_GC_FIELDS = frozenset({"ownerReferences", "finalizers", "selfLink", "managedFields"})


def _aggregates(role: Mapping[str, Any] | None) -> bool:
    """``hasAggregationRule``: an aggregationRule with at least one selector."""
    rule = role.get("aggregationRule") if role is not None else None
    return isinstance(rule, Mapping) and bool(rule.get("clusterRoleSelectors"))


def _only_gc_fields_change(obj: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    def rest(o: Mapping[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (o.get("metadata") or {}).items() if k not in _GC_FIELDS}
        return {**o, "metadata": meta}

    return rest(obj) == rest(old)


def _confirm_full_authority(snapshot: RbacSnapshot, user: User, info: ResourceInfo, name: str) -> None:
    if all(_holds(snapshot, user, "", rule) for rule in _FULL_AUTHORITY):
        return
    raise Forbidden(
        f'{info.plural}.{RBAC_GROUP} "{name}" is forbidden: must have cluster-admin privileges to use the aggregationRule',
        details={"name": name, "group": RBAC_GROUP, "kind": info.plural},
    )


def _allowed(snapshot: RbacSnapshot, user: User, verb: str, resource: str, name: str, namespace: str) -> bool:
    attrs = Attributes(
        user=user, verb=verb, resource_request=True, api_group=RBAC_GROUP, resource=resource, name=name,
        namespace=namespace,
    )  # fmt: skip
    return decide(snapshot, attrs).allowed


def _breakdown(rule: Mapping[str, Any]) -> list[dict[str, list[str]]]:
    """One verb, group, resource and name per rule (``BreakdownRule``), in upstream's order."""
    out: list[dict[str, list[str]]] = []
    names = rule_strings(rule, "resourceNames")
    for group in rule_strings(rule, "apiGroups"):
        for resource in rule_strings(rule, "resources"):
            for verb in rule_strings(rule, "verbs"):
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                out.extend([base | {"resourceNames": [n]} for n in names] if names else [base])
    for url in rule_strings(rule, "nonResourceURLs"):
        out.extend({"nonResourceURLs": [url], "verbs": [verb]} for verb in rule_strings(rule, "verbs"))
    return out


def _holds(snapshot: RbacSnapshot, user: User, namespace: str, sub: Mapping[str, list[str]]) -> bool:
    verb = sub["verbs"][0]
    if "nonResourceURLs" in sub:
        attrs = Attributes(user=user, verb=verb, resource_request=False, path=sub["nonResourceURLs"][0])
    else:
        resource, _, subresource = sub["resources"][0].partition("/")
        attrs = Attributes(
            user=user, verb=verb, resource_request=True, api_group=sub["apiGroups"][0], resource=resource,
            subresource=subresource, namespace=namespace, name=(sub.get("resourceNames") or [""])[0],
        )  # fmt: skip
    return decide(snapshot, attrs).allowed


def _compact(rules: Sequence[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """``CompactRules``: single group/resource(/name) rules that differ only by verb are merged."""
    merged: dict[tuple[str, str, str], dict[str, list[str]]] = {}
    out: list[dict[str, list[str]]] = []
    for rule in rules:
        if "nonResourceURLs" in rule:
            out.append(rule)
            continue
        key = (rule["apiGroups"][0], rule["resources"][0], (rule.get("resourceNames") or [""])[0])
        if key in merged:
            merged[key]["verbs"] = [*merged[key]["verbs"], *rule["verbs"]]
        else:
            merged[key] = dict(rule)
    return out + list(merged.values())


def _compact_string(rule: Mapping[str, list[str]]) -> str:
    """``CompactString``: the Go ``%q`` rendering of the non-empty fields."""
    parts = []
    for field, key in (("APIGroups", "apiGroups"), ("Resources", "resources"), ("NonResourceURLs", "nonResourceURLs"),
                       ("ResourceNames", "resourceNames"), ("Verbs", "verbs")):  # fmt: skip
        if rule.get(key):
            parts.append(f"{field}:[{' '.join(go_quote(v) for v in rule[key])}]")
    return "{" + ", ".join(parts) + "}"
