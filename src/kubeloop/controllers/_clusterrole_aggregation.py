"""The ClusterRole aggregation controller: an aggregated ClusterRole's ``rules`` are its selected roles' rules.

Mirrors k/k ``pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`` (kube-controller-manager's
``clusterrole-aggregation``):

- A ClusterRole is *aggregated* when it has an ``aggregationRule`` (present and not null). Its rules are
  computed from the informer cache: for each of ``aggregationRule.clusterRoleSelectors`` in order, the
  ClusterRoles the selector matches, sorted by name, the aggregated role itself skipped; each of their
  rules is appended unless a semantically equal rule is already there (:func:`aggregate_rules`). Rules
  are compared as upstream's ``equality.Semantic.DeepEqual`` of ``PolicyRule`` does: field by field, an
  absent, ``null`` and empty list being equal, order within a list significant.
- Nothing is written when the role's ``rules`` are already semantically equal to that list (so an
  aggregated role whose selectors match nothing, with no rules, stays as it is). Otherwise the role is
  updated with the new rules, conditional on the cached ``resourceVersion`` (upstream's ``Update``
  fallback; its preferred path is a forced server-side apply of the same rules). An empty result is
  written as ``rules: null``, what upstream's nil slice encodes to. Each rule is written in its
  canonical form (empty optional lists dropped, as Go's ``omitempty`` does).
- A write that loses a race (409 Conflict: the cache is behind, often just our own previous write)
  and any other error are a rate-limited retry, as upstream, which reads the cache again; a 409 is
  logged as an expected retry (:class:`~kubeloop.runtime.TransientError`), not as a failure. A 404
  means the role was deleted meanwhile: nothing to do. A selector that cannot be parsed is an error
  too (retried, as upstream does; the API server rejects such selectors on new writes).
- Any ClusterRole added, changed or deleted enqueues *every* aggregated ClusterRole (upstream's
  ``enqueue``: the set is small and the dependency graph unknown). That is also how chains settle:
  bootstrap ``view`` is selected by ``edit`` and ``edit`` by ``admin``, so a write to ``view`` wakes
  ``edit``, whose write wakes ``admin``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubeloop.api import Conflict, NotFound, label_selector_from_dict
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.runtime import (
    Controller,
    EnqueueMapped,
    Manager,
    Request,
    Result,
    SharedInformer,
    TransientError,
    Watch,
)

__all__ = ["CLUSTERROLES", "FIELD_MANAGER", "ClusterRoleAggregationController", "aggregate_rules", "same_rules"]

CLUSTERROLES = builtin("rbac.authorization.k8s.io", "clusterroles")
FIELD_MANAGER = "clusterrole-aggregation-controller"  # the field manager upstream's controller applies with

# PolicyRule's fields in Go declaration order; all are string lists.
_RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")

Obj = Mapping[str, Any]


def _rule_key(rule: Obj) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(str(v) for v in rule.get(name) or ()) for name in _RULE_FIELDS)


def _canonical(rule: Obj) -> dict[str, Any]:
    """The rule as Go's ``PolicyRule`` encodes it: ``verbs`` always, the other lists only when non-empty."""
    out: dict[str, Any] = {"verbs": list(rule.get("verbs") or [])}
    for name in _RULE_FIELDS[1:]:
        if rule.get(name):
            out[name] = list(rule[name])
    return out


def _rules(role: Obj) -> list[Obj]:
    return [r for r in role.get("rules") or () if isinstance(r, Mapping)]


def same_rules(a: Sequence[Obj] | None, b: Sequence[Obj] | None) -> bool:
    """Semantic equality of two rule lists (``None`` and ``[]`` are equal, as upstream's nil and empty slice)."""
    return [_rule_key(r) for r in a or ()] == [_rule_key(r) for r in b or ()]


def is_aggregated(role: Obj) -> bool:
    return role.get("aggregationRule") is not None


def aggregate_rules(role: Obj, roles: Iterable[Obj]) -> list[dict[str, Any]]:
    """The rules ``role``'s aggregationRule selects from ``roles`` (upstream order, deduplicated).

    Raises :class:`~kubeloop.api.BadRequest` for a selector that cannot be parsed.
    """
    name = (role.get("metadata") or {}).get("name")
    candidates = sorted((r for r in roles if (r.get("metadata") or {}).get("name") != name),
                        key=lambda r: str((r.get("metadata") or {}).get("name") or ""))
    rule_spec = role.get("aggregationRule") or {}
    merged: list[dict[str, Any]] = []
    seen: set[tuple[tuple[str, ...], ...]] = set()
    for selector_spec in rule_spec.get("clusterRoleSelectors") or ():
        selector = label_selector_from_dict(selector_spec)
        for other in candidates:
            if not selector.matches((other.get("metadata") or {}).get("labels") or {}):
                continue
            for rule in _rules(other):
                key = _rule_key(rule)
                if key not in seen:
                    seen.add(key)
                    merged.append(_canonical(rule))
    return merged


class ClusterRoleAggregationController:
    """Keeps every aggregated ClusterRole's rules equal to what its selectors gather.

    Build it on a manager before the manager runs, and add :attr:`controller` (the runtime controller)
    to the manager: ``manager.add_controller(c.controller)``, which
    :func:`~kubeloop.controllers.add_builtin_controllers` does for the built-in ``clusterrole-aggregation``.
    """

    name = "clusterrole-aggregation"

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.roles: SharedInformer = manager.informer(CLUSTERROLES)
        self.controller = Controller(
            self.name, self.reconcile, watches=[Watch(self.roles, EnqueueMapped(self._aggregated_roles))],
            clock=manager.clock, metrics=manager.metrics,
        )  # fmt: skip

    def _aggregated_roles(self, _changed: Obj) -> list[Request]:
        return [Request.for_object(r) for r in self.roles.cache.list() if is_aggregated(r)]

    async def reconcile(self, request: Request) -> Result | None:
        role = self.roles.cache.get_by_name(request.name)
        if role is None or not is_aggregated(role):
            return None
        rules = aggregate_rules(role, self.roles.cache.list())
        if same_rules(rules, _rules(role)):
            return None
        # The cached object carries its resourceVersion: a concurrent write makes this a 409, retried.
        try:
            await self.client.update(CLUSTERROLES, {**role, "rules": rules or None}, field_manager=FIELD_MANAGER)
        except NotFound:
            pass
        except Conflict as error:
            # Expected, not a failure: the cache is behind (often our own last write to this role).
            raise TransientError(f"{request.name} changed meanwhile: {error}") from error
        return None
