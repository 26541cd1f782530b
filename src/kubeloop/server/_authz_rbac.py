"""RBAC: an :class:`~kubeloop.server._authz.Authorizer` over Role, ClusterRole, RoleBinding, ClusterRoleBinding.

Semantics follow k/k ``plugin/pkg/auth/authorizer/rbac/rbac.go`` and
``pkg/apis/rbac/v1/evaluation_helpers.go``:

- ``system:masters`` is allowed everything (kube-apiserver's privileged-group short circuit).
- Otherwise a request is allowed when any rule of any role bound to the user, or to one of its
  groups, matches it: ClusterRoleBindings apply everywhere; a RoleBinding applies only to requests in
  its namespace, and may point at a Role of that namespace or at a ClusterRole.
- Rule matching: verb, API group and resource equal or ``*``; the resource is matched as
  ``resource/subresource`` and ``*/subresource`` matches any resource's subresource; a rule with
  ``resourceNames`` matches only requests that name one of them; non-resource paths match
  ``nonResourceURLs`` exactly or by a trailing ``*`` prefix. There are no deny rules.
- A binding whose role does not exist contributes nothing; the denial reason then names the missing
  role (``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found``), as upstream does.

Objects come through a ``lister(plural) -> objects`` callable, so the authorizer works over any source
(the server's store, or a plain list in a test). With ``revision`` given, the four lists are read
once per store revision and reused until it changes; with ``fingerprint`` too (the store-backed
authorizer), a moved revision re-reads them only if an RBAC object was created, changed or deleted.
Within one snapshot, the rules bound to a user (name and groups) in a namespace are collected once
(:func:`bound_rules`), so a request checks only those rules, not every binding.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeloop.server._authn import User
from kubeloop.server._authz import Attributes, Decision
from kubeloop.store import Store

__all__ = [
    "RBAC_GROUP",
    "RbacAuthorizer",
    "RbacSnapshot",
    "policy_rules",
    "rule_allows",
    "rule_strings",
    "store_lister",
    "store_rbac_authorizer",
]

Obj = Mapping[str, Any]
Lister = Callable[[str], Awaitable[Sequence[Obj]]]

RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True, slots=True)
class RbacSnapshot:
    """One consistent set of RBAC objects. It never changes, so the rules bound to a user in a
    namespace are worked out once per snapshot (:func:`bound_rules`) and kept in ``bound``."""

    roles: Mapping[tuple[str, str], Obj]  # (namespace, name) -> Role
    cluster_roles: Mapping[str, Obj]
    role_bindings: Sequence[Obj]
    cluster_role_bindings: Sequence[Obj]
    bound: dict[tuple[str, tuple[str, ...], str], tuple[list[Obj], list[str]]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def of(
        cls,
        *,
        roles: Sequence[Obj] = (),
        cluster_roles: Sequence[Obj] = (),
        role_bindings: Sequence[Obj] = (),
        cluster_role_bindings: Sequence[Obj] = (),
    ) -> RbacSnapshot:
        return cls(
            roles={(_meta(r).get("namespace", ""), _meta(r).get("name", "")): r for r in roles},
            cluster_roles={_meta(r).get("name", ""): r for r in cluster_roles},
            role_bindings=list(role_bindings),
            cluster_role_bindings=list(cluster_role_bindings),
        )


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def rule_strings(rule: Obj, key: str) -> Sequence[str]:
    """The strings listed under ``key`` of a PolicyRule (anything else there is ignored)."""
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def rule_allows(rule: Obj, attributes: Attributes) -> bool:
    """Whether one PolicyRule grants ``attributes`` (``RuleAllows``)."""
    # Membership in the raw lists: an entry that is not a string never equals a verb, group or resource.
    verbs = rule.get("verbs")
    if not isinstance(verbs, list) or ("*" not in verbs and attributes.verb not in verbs):
        return False
    if not attributes.resource_request:
        path = attributes.path
        for url in rule_strings(rule, "nonResourceURLs"):
            if url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1])):
                return True
        return False
    groups = rule.get("apiGroups")
    if not isinstance(groups, list) or ("*" not in groups and attributes.api_group not in groups):
        return False
    resources = rule.get("resources")
    sub = attributes.subresource
    wanted = (f"{attributes.resource}/{sub}", f"*/{sub}") if sub else (attributes.resource,)
    if not isinstance(resources, list) or ("*" not in resources and not any(w in resources for w in wanted)):
        return False
    names = rule_strings(rule, "resourceNames")
    return not names or attributes.name in names


def _applies_to(subjects: Any, user: User, binding_namespace: str) -> bool:
    if not isinstance(subjects, list):
        return False
    for subject in subjects:
        if not isinstance(subject, Mapping):
            continue
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user.name:
            return True
        if kind == "Group" and name in user.groups:
            return True
        if kind == "ServiceAccount":
            namespace = subject.get("namespace") or binding_namespace
            if user.name == f"system:serviceaccount:{namespace}:{name}":
                return True
    return False


class RbacAuthorizer:
    """Allows what the RBAC objects grant (see the module contract)."""

    def __init__(
        self,
        *,
        lister: Lister,
        revision: Callable[[], int] | None = None,
        fingerprint: Callable[[], Awaitable[Hashable]] | None = None,
    ) -> None:
        """``revision``: the store's revision (nothing changed while it stands still);
        ``fingerprint``: a value that changes whenever an RBAC object does (checked when the revision
        moved, so writes to other kinds do not re-read every role and binding)."""
        self._lister = lister
        self._revision = revision
        self._fingerprint = fingerprint
        self._cached: tuple[int, Hashable, RbacSnapshot] | None = None

    async def snapshot(self) -> RbacSnapshot:
        revision = self._revision() if self._revision is not None else None
        if revision is None:
            return await self._read()
        cached = self._cached
        if cached is not None and cached[0] == revision:
            return cached[2]
        mark = await self._fingerprint() if self._fingerprint is not None else revision
        if cached is not None and self._fingerprint is not None and cached[1] == mark:
            self._cached = (revision, mark, cached[2])
            return cached[2]
        snapshot = await self._read()
        self._cached = (revision, mark, snapshot)
        return snapshot

    async def _read(self) -> RbacSnapshot:
        return RbacSnapshot.of(
            roles=await self._lister("roles"),
            cluster_roles=await self._lister("clusterroles"),
            role_bindings=await self._lister("rolebindings"),
            cluster_role_bindings=await self._lister("clusterrolebindings"),
        )

    async def authorize(self, attributes: Attributes) -> Decision:
        if attributes.user.is_master:
            return Decision(True)
        return evaluate(await self.snapshot(), attributes)

    async def rules_for(self, user: User, namespace: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What ``user`` may do in ``namespace``: (resource rules, non-resource rules), as upstream's
        ``RulesFor`` feeds SelfSubjectRulesReview (``kubectl auth can-i --list``)."""
        resource_rules: list[dict[str, Any]] = []
        non_resource_rules: list[dict[str, Any]] = []
        if user.is_master:
            resource_rules.append({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
            non_resource_rules.append({"verbs": ["*"], "nonResourceURLs": ["*"]})
        rules, _ = bound_rules(await self.snapshot(), user, namespace)
        for rule in rules:
            verbs = list(rule_strings(rule, "verbs"))
            if rule_strings(rule, "resources"):
                entry: dict[str, Any] = {
                    "verbs": verbs,
                    "apiGroups": list(rule_strings(rule, "apiGroups")),
                    "resources": list(rule_strings(rule, "resources")),
                }
                if rule_strings(rule, "resourceNames"):
                    entry["resourceNames"] = list(rule_strings(rule, "resourceNames"))
                resource_rules.append(entry)
            if rule_strings(rule, "nonResourceURLs"):
                non_resource_rules.append({"verbs": verbs, "nonResourceURLs": list(rule_strings(rule, "nonResourceURLs"))})
        return resource_rules, non_resource_rules


def evaluate(snapshot: RbacSnapshot, attributes: Attributes) -> Decision:
    """The RBAC decision for ``attributes`` over one consistent set of RBAC objects."""
    rules, errors = bound_rules(snapshot, attributes.user, attributes.namespace)
    if any(rule_allows(rule, attributes) for rule in rules):
        return Decision(True)
    reason = f"RBAC: {_aggregate(errors)}" if errors else ""
    return Decision(False, reason)


_BOUND_LIMIT = 4096


def bound_rules(snapshot: RbacSnapshot, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
    """The rules granted to ``user`` in ``namespace`` (cluster-wide only for ``""``): those of the
    roles its ClusterRoleBindings name, then those of its RoleBindings in ``namespace``, in binding
    order; and the missing roles met on the way (the denial reason). RBAC reads only the user's name
    and groups, so the answer is remembered per snapshot by those and the namespace."""
    key = (user.name, user.groups, namespace)
    known = snapshot.bound.get(key)
    if known is not None:
        return known
    errors: list[str] = []
    rules: list[Obj] = []
    for binding in snapshot.cluster_role_bindings:
        if _applies_to(binding.get("subjects"), user, ""):
            rules.extend(_role_rules(snapshot, binding, "", errors))
    if namespace:
        for binding in snapshot.role_bindings:
            if _meta(binding).get("namespace", "") == namespace and _applies_to(binding.get("subjects"), user, namespace):
                rules.extend(_role_rules(snapshot, binding, namespace, errors))
    if len(snapshot.bound) >= _BOUND_LIMIT:  # bounded: users and namespaces come and go
        snapshot.bound.clear()
    snapshot.bound[key] = (rules, errors)
    return rules, errors


def _role_rules(snapshot: RbacSnapshot, binding: Obj, namespace: str, errors: list[str]) -> Sequence[Obj]:
    ref = binding.get("roleRef")
    if not isinstance(ref, Mapping):
        return []
    kind, name = ref.get("kind"), str(ref.get("name", ""))
    role: Obj | None
    if kind == "ClusterRole":
        role = snapshot.cluster_roles.get(name)
        missing = f'clusterrole.{RBAC_GROUP} "{name}" not found'
    elif kind == "Role" and namespace:
        role = snapshot.roles.get((namespace, name))
        missing = f'role.{RBAC_GROUP} "{name}" not found'
    else:
        return []
    if role is None:
        if missing not in errors:
            errors.append(missing)
        return []
    return policy_rules(role)


def policy_rules(role: Obj) -> list[Obj]:
    """The PolicyRules of a Role or ClusterRole (entries that are not objects are ignored)."""
    rules = role.get("rules")
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else []


def _aggregate(errors: Sequence[str]) -> str:
    # apimachinery utilerrors.NewAggregate: one error prints bare, several as "[a, b]".
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def store_lister(store: Store) -> Lister:
    """A lister that reads RBAC objects from the server's store (keys ``/registry/<group>/<plural>/...``)."""

    async def lister(plural: str) -> Sequence[Obj]:
        result = await store.range(f"/registry/{RBAC_GROUP}/{plural}/")
        return [orjson.loads(kv.value) for kv in result.items]

    return lister


def store_fingerprint(store: Store) -> Callable[[], Awaitable[Hashable]]:
    """(count, newest modification) of the RBAC objects, read in one range over the group's prefix:
    a create or update that is still there raises the newest modification past every earlier one
    (revisions only grow), and deletes alone lower the count."""

    async def fingerprint() -> Hashable:
        items = (await store.range(f"/registry/{RBAC_GROUP}/")).items
        return len(items), max((kv.mod_revision for kv in items), default=0)

    return fingerprint


def store_rbac_authorizer(store: Store) -> RbacAuthorizer:
    """RBAC over the objects in ``store``, re-read only when an RBAC object changed."""
    return RbacAuthorizer(lister=store_lister(store), revision=lambda: store.revision,
                          fingerprint=store_fingerprint(store))
