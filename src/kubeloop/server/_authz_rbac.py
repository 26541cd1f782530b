"""RBAC: an :class:`~kubeloop.server._authz.Authorizer` over Role, ClusterRole, RoleBinding, ClusterRoleBinding.

Semantics follow k/k ``plugin/pkg/auth/authorizer/rbac/rbac.go`` and
``pkg/apis/rbac/v1/evaluation_helpers.go``:

- ``system:masters`` is allowed everything (kube-apiserver's privileged-group short circuit).
- Otherwise a request is allowed when any rule of any role bound to the user, or to one of its
  groups, matches it (:func:`~kubeloop.server._authz_rbac_rules.rule_allows`): ClusterRoleBindings
  apply everywhere; a RoleBinding applies only to requests in its namespace, and may point at a Role
  of that namespace or at a ClusterRole. There are no deny rules.
- A binding whose role does not exist contributes nothing; the denial reason then names the missing
  role (``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found``), as upstream does.
- A request's allow carries no reason (nothing reads it); the access reviews, which show it, ask
  :meth:`RbacAuthorizer.explain`, whose allow names the first binding that grants it, as upstream's does
  (:func:`allow_reason`: ``RBAC: allowed by RoleBinding "b/ns" of Role "r" to User "u"``).

:func:`evaluate` is that definition written out: it walks every binding and asks every bound rule. It
is the reference, and what ``rules_for`` (SelfSubjectRulesReview) lists; requests are decided by
:func:`decide`, which must answer exactly as :func:`evaluate` does (a property test compares them over
generated policies and requests) at the cost of a dictionary lookup:

- **Snapshots.** An :class:`RbacSnapshot` is one consistent set of RBAC objects and never changes.
  The authorizer keeps one and replaces it when any Role, ClusterRole, RoleBinding or ClusterRoleBinding
  is created, changed or deleted. How it knows (:class:`StoreChanges`): a store watch on the RBAC
  group's prefix, opened just before the objects are read. Per request it compares the store revision
  with the last one it checked (nothing was written: done), and when the revision moved it polls the
  watch, which never blocks and is never behind the revision (the ``Store`` contract): an RBAC write is
  seen by the very next request, before its writer is even answered. Upstream's informers make RBAC
  eventually consistent; kubeloop is stricter. Writes to other kinds cost a poll of an empty queue.
  Requests that arrive while a new snapshot is read wait for it rather than decide on the old one.
  Aggregated ClusterRoles need nothing more: their rules are the ``rules`` field, written like any
  other by the ClusterRole aggregation controller (``kubeloop.controllers``, run by the controller
  manager as upstream's kube-controller-manager runs it), so ``aggregationRule`` itself is never read
  here and grants nothing until the controller has written the rules; deleting a namespace deletes its Roles and RoleBindings one by one, each an RBAC
  change, and RBAC never reads Namespaces.
- **Per subject, compiled.** Within a snapshot, the rules bound to a subject (user name and groups:
  all RBAC reads of a user) in a namespace are collected once and compiled into one
  :class:`~kubeloop.server._authz_rbac_rules.Grants` (dictionaries keyed by verb, API group and
  resource; a set of paths and prefixes per verb), with the denial decision ready (its reason names
  the missing roles). The ClusterRoleBindings' rules of a subject are collected once for all its
  namespaces. A request then costs one lookup by (user, groups, namespace) and, for a question the
  scope was asked before (same verb, group, resource and subresource, or verb and path), one more.
- **Bounded.** Both caches are LRUs (``SUBJECT_CAPACITY`` entries each; a snapshot's entries go with
  it) and a scope keeps at most ``ANSWER_LIMIT`` answers, so users, namespaces and questions that come
  and go cannot grow memory.

Objects come through a ``lister(plural) -> objects`` callable, so the authorizer works over any source
(the server's store, or a plain list in a test). Without ``changes`` (a plain lister) every decision
reads the lists again.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import orjson

from kubeloop.server._authn import User
from kubeloop.server._authz import Attributes, Decision, go_quote
from kubeloop.server._authz_rbac_rules import Grants, policy_rules, rule_allows, rule_strings
from kubeloop.server._prefix_changes import PrefixChanges
from kubeloop.store import Store

__all__ = [
    "RBAC_GROUP",
    "SUBJECT_CAPACITY",
    "RbacAuthorizer",
    "RbacChanges",
    "RbacSnapshot",
    "StoreChanges",
    "bound_rules",
    "decide",
    "evaluate",
    "policy_rules",
    "rule_allows",
    "rule_strings",
    "store_lister",
    "store_rbac_authorizer",
]

Obj = Mapping[str, Any]
Lister = Callable[[str], Awaitable[Sequence[Obj]]]

RBAC_GROUP = "rbac.authorization.k8s.io"
SUBJECT_CAPACITY = 1024
ALLOWED = Decision(True)

_SubjectKey = tuple[str, tuple[str, ...]]
_ScopeKey = tuple[str, tuple[str, ...], str]


def _remember(cache: OrderedDict[Any, Any], capacity: int, key: Any, value: Any) -> None:
    """Put ``key`` in an LRU ``cache`` of at most ``capacity`` entries (a hit is ``move_to_end``-ed by
    its reader), dropping the least recently used."""
    cache[key] = value
    if len(cache) > capacity:
        cache.popitem(last=False)


class _Scope(NamedTuple):
    """What a subject holds in one namespace (cluster-wide for ``""``): its ClusterRoleBindings' rules and
    its RoleBindings' there, compiled in one; and the decision on denial (naming the missing roles)."""

    grants: Grants
    denied: Decision


@dataclass(frozen=True, slots=True)
class RbacSnapshot:
    """One consistent set of RBAC objects. It never changes, so what a subject holds is worked out once
    per snapshot and kept (bounded) in its caches."""

    roles: Mapping[tuple[str, str], Obj]  # (namespace, name) -> Role
    cluster_roles: Mapping[str, Obj]
    role_bindings: Sequence[Obj]
    cluster_role_bindings: Sequence[Obj]
    capacity: int = SUBJECT_CAPACITY
    role_bindings_by_namespace: dict[str, list[Obj]] = field(init=False, compare=False, repr=False)
    # LRUs (at most ``capacity`` entries each): a subject's ClusterRoleBindings' rules, and its scopes.
    subjects: OrderedDict[_SubjectKey, tuple[list[Obj], list[str]]] = field(init=False, compare=False, repr=False)
    scopes: OrderedDict[_ScopeKey, _Scope] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        by_namespace: dict[str, list[Obj]] = {}
        for binding in self.role_bindings:
            namespace = _meta(binding).get("namespace", "")
            if isinstance(namespace, str):  # anything else never equals a request's namespace
                by_namespace.setdefault(namespace, []).append(binding)
        object.__setattr__(self, "role_bindings_by_namespace", by_namespace)
        object.__setattr__(self, "capacity", max(1, self.capacity))
        object.__setattr__(self, "subjects", OrderedDict())
        object.__setattr__(self, "scopes", OrderedDict())

    @classmethod
    def of(
        cls,
        *,
        roles: Sequence[Obj] = (),
        cluster_roles: Sequence[Obj] = (),
        role_bindings: Sequence[Obj] = (),
        cluster_role_bindings: Sequence[Obj] = (),
        capacity: int = SUBJECT_CAPACITY,
    ) -> RbacSnapshot:
        return cls(
            roles={(_meta(r).get("namespace", ""), _meta(r).get("name", "")): r for r in roles},
            cluster_roles={_meta(r).get("name", ""): r for r in cluster_roles},
            role_bindings=list(role_bindings),
            cluster_role_bindings=list(cluster_role_bindings),
            capacity=capacity,
        )


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _applies_to(subjects: Any, user: User, binding_namespace: str) -> bool:
    return _subject_for(subjects, user, binding_namespace) is not None


def _subject_for(subjects: Any, user: User, binding_namespace: str) -> Mapping[str, Any] | None:
    """The first of a binding's ``subjects`` that names ``user`` (upstream's ``appliesTo``), or None."""
    if not isinstance(subjects, list):
        return None
    for subject in subjects:
        if not isinstance(subject, Mapping):
            continue
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user.name:
            return subject
        if kind == "Group" and name in user.groups:
            return subject
        if kind == "ServiceAccount":
            namespace = subject.get("namespace") or binding_namespace
            if user.name == f"system:serviceaccount:{namespace}:{name}":
                return subject
    return None


class RbacChanges(Protocol):
    """Whether the RBAC objects changed since they were last read, answered without waiting."""

    def start(self) -> None:
        """Follow changes from now on (called just before the objects are read)."""
        ...

    def changed(self) -> bool:
        """Whether any RBAC object was created, changed or deleted since :meth:`start`; once ``True``,
        ``True`` until the next :meth:`start`."""
        ...


class StoreChanges:
    """:class:`RbacChanges` of a store: the RBAC group's :class:`PrefixChanges` (see the module contract)."""

    def __init__(self, store: Store) -> None:
        self._changes = PrefixChanges(store, f"/registry/{RBAC_GROUP}/")
        self._stale = True

    def start(self) -> None:
        self._changes.start()
        self._stale = False

    def changed(self) -> bool:
        if not self._stale:
            events = self._changes.poll()
            self._stale = events is None or bool(events)
        return self._stale


class RbacAuthorizer:
    """Allows what the RBAC objects grant (see the module contract)."""

    def __init__(self, *, lister: Lister, changes: RbacChanges | None = None) -> None:
        """``changes``: tells when the objects ``lister`` reads changed; without it, every decision
        reads them again."""
        self._lister = lister
        self._changes = changes
        self._cached: RbacSnapshot | None = None
        self._refresh = asyncio.Lock()

    async def snapshot(self) -> RbacSnapshot:
        """The current RBAC objects: the cached snapshot while nothing changed."""
        changes = self._changes
        if changes is None:
            return await self._read()
        cached = self._cached
        if cached is not None and not changes.changed():
            return cached
        async with self._refresh:
            cached = self._cached
            if cached is not None and not changes.changed():
                return cached  # another request read them meanwhile
            self._cached = None  # requests arriving during the read wait for it
            changes.start()
            snapshot = await self._read()
            self._cached = snapshot
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
            return ALLOWED
        snapshot = self._cached
        changes = self._changes
        if snapshot is None or changes is None or changes.changed():
            snapshot = await self.snapshot()
        return decide(snapshot, attributes)

    async def explain(self, attributes: Attributes) -> Decision:
        """:meth:`authorize`'s decision, an allow with upstream's reason (:func:`allow_reason`), for the access
        reviews, which show it; a request's own allow needs none, and :meth:`authorize` spends nothing on it."""
        decision = await self.authorize(attributes)
        if not decision.allowed or attributes.user.is_master:  # the privileged group's allow has no reason
            return decision
        return Decision(True, allow_reason(await self.snapshot(), attributes))

    async def rules_for(self, user: User, namespace: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What ``user`` may do in ``namespace``: (resource rules, non-resource rules), as upstream's
        ``RulesFor`` feeds SelfSubjectRulesReview (``kubectl auth can-i --list``). The bound rules only:
        ``system:masters`` lists what its bindings grant (the bootstrap's ``cluster-admin``), as upstream's
        privileged-group authorizer, which allows without RBAC, lists no rules of its own
        (apiserver ``authorizerfactory/builtin.go``: no ``RulesFor``)."""
        resource_rules: list[dict[str, Any]] = []
        non_resource_rules: list[dict[str, Any]] = []
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


def decide(snapshot: RbacSnapshot, attributes: Attributes) -> Decision:
    """The RBAC decision for ``attributes`` over ``snapshot``, from what the snapshot keeps of the
    subject (equal to :func:`evaluate`; see the module contract)."""
    user = attributes.user
    key = (user.name, user.groups, attributes.namespace)
    scopes = snapshot.scopes
    scope = scopes.get(key)
    if scope is None:
        scope = _scope(snapshot, user, attributes.namespace)
        _remember(scopes, snapshot.capacity, key, scope)
    else:
        scopes.move_to_end(key)
    return ALLOWED if scope.grants.allows(attributes) else scope.denied


def _scope(snapshot: RbacSnapshot, user: User, namespace: str) -> _Scope:
    subject = (user.name, user.groups)
    cluster = snapshot.subjects.get(subject)  # the ClusterRoleBindings' part, the same in every namespace
    if cluster is None:
        cluster_errors: list[str] = []
        cluster = (_cluster_rules(snapshot, user, cluster_errors), cluster_errors)
        _remember(snapshot.subjects, snapshot.capacity, subject, cluster)
    else:
        snapshot.subjects.move_to_end(subject)
    rules, errors = cluster
    if namespace:
        errors = list(errors)
        rules = rules + _namespace_rules(snapshot, user, namespace, errors)
    return _Scope(Grants.of(rules), Decision(False, f"RBAC: {_aggregate(errors)}" if errors else ""))


def evaluate(snapshot: RbacSnapshot, attributes: Attributes) -> Decision:
    """The RBAC decision for ``attributes``, by definition: every bound rule asked in turn (the
    reference :func:`decide` answers as; it keeps nothing)."""
    rules, errors = bound_rules(snapshot, attributes.user, attributes.namespace)
    if any(rule_allows(rule, attributes) for rule in rules):
        return ALLOWED
    reason = f"RBAC: {_aggregate(errors)}" if errors else ""
    return Decision(False, reason)


def allow_reason(snapshot: RbacSnapshot, attributes: Attributes) -> str:
    """Why RBAC allows ``attributes``, as upstream says it (``rbac.go`` ``authorizingVisitor.visit``: ``RBAC:
    allowed by`` the first binding, in :func:`evaluate`'s order, one of whose role's rules allows the request,
    described by ``pkg/registry/rbac/validation/rule.go``'s describers, with the binding's first subject that
    names the user); "" when no rule allows it."""
    user = attributes.user
    for binding in snapshot.cluster_role_bindings:
        subject = _subject_for(binding.get("subjects"), user, "")
        if subject is not None and _binding_allows(snapshot, binding, "", attributes):
            return f"RBAC: allowed by ClusterRoleBinding {_describe_binding(binding, '', subject)}"
    namespace = attributes.namespace
    if namespace:
        for binding in snapshot.role_bindings_by_namespace.get(namespace, ()):
            subject = _subject_for(binding.get("subjects"), user, namespace)
            if subject is not None and _binding_allows(snapshot, binding, namespace, attributes):
                return f"RBAC: allowed by RoleBinding {_describe_binding(binding, namespace, subject)}"
    return ""


def _binding_allows(snapshot: RbacSnapshot, binding: Obj, namespace: str, attributes: Attributes) -> bool:
    return any(rule_allows(rule, attributes) for rule in _role_rules(snapshot, binding, namespace, []))


def _describe_binding(binding: Obj, namespace: str, subject: Mapping[str, Any]) -> str:
    """``"name" of Kind "role" to Kind "subject"``: a RoleBinding's name is ``name/namespace``, and a
    ServiceAccount subject's ``name/namespace`` (its own, else the binding's: ``describeSubject``)."""
    name = str(_meta(binding).get("name", ""))
    ref = binding.get("roleRef")
    ref = ref if isinstance(ref, Mapping) else {}
    kind = str(subject.get("kind", ""))
    subject_name = str(subject.get("name", ""))
    if kind == "ServiceAccount":
        subject_name += "/" + str(subject.get("namespace") or namespace)
    return (f"{go_quote(name + '/' + namespace if namespace else name)} of {ref.get('kind', '')} "
            f"{go_quote(str(ref.get('name', '')))} to {kind} {go_quote(subject_name)}")


def bound_rules(snapshot: RbacSnapshot, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
    """The rules granted to ``user`` in ``namespace`` (cluster-wide only for ``""``): those of the
    roles its ClusterRoleBindings name, then those of its RoleBindings in ``namespace``, in binding
    order; and the missing roles met on the way (the denial reason)."""
    errors: list[str] = []
    rules = _cluster_rules(snapshot, user, errors)
    if namespace:
        rules.extend(_namespace_rules(snapshot, user, namespace, errors))
    return rules, errors


def _cluster_rules(snapshot: RbacSnapshot, user: User, errors: list[str]) -> list[Obj]:
    rules: list[Obj] = []
    for binding in snapshot.cluster_role_bindings:
        if _applies_to(binding.get("subjects"), user, ""):
            rules.extend(_role_rules(snapshot, binding, "", errors))
    return rules


def _namespace_rules(snapshot: RbacSnapshot, user: User, namespace: str, errors: list[str]) -> list[Obj]:
    rules: list[Obj] = []
    for binding in snapshot.role_bindings_by_namespace.get(namespace, ()):
        if _applies_to(binding.get("subjects"), user, namespace):
            rules.extend(_role_rules(snapshot, binding, namespace, errors))
    return rules


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


def _aggregate(errors: Sequence[str]) -> str:
    # apimachinery utilerrors.NewAggregate: one error prints bare, several as "[a, b]".
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def store_lister(store: Store) -> Lister:
    """A lister that reads RBAC objects from the server's store (keys ``/registry/<group>/<plural>/...``)."""

    async def lister(plural: str) -> Sequence[Obj]:
        result = await store.range(f"/registry/{RBAC_GROUP}/{plural}/")
        return [orjson.loads(kv.value) for kv in result.items]

    return lister


def store_rbac_authorizer(store: Store) -> RbacAuthorizer:
    """RBAC over the objects in ``store``, read again only after an RBAC object changed."""
    return RbacAuthorizer(lister=store_lister(store), changes=StoreChanges(store))
