"""The user-facing bootstrap roles: ``admin``, ``edit`` and ``view``, built by aggregation (k/k ``bootstrappolicy/policy.go``).

As upstream, the three roles carry an ``aggregationRule`` and no rules of their own; the ClusterRole
aggregation controller (:mod:`kubeloop.controllers`) fills their ``rules`` from the ClusterRoles their
selectors match:

- ``view`` gathers ``rbac.authorization.k8s.io/aggregate-to-view: "true"`` (``system:aggregate-to-view``:
  read access to the namespaced workload kinds, without secrets);
- ``edit`` gathers ``aggregate-to-edit`` (``system:aggregate-to-edit``: writes, secrets, exec and
  friends; and ``view``, which is labelled ``aggregate-to-edit``);
- ``admin`` gathers ``aggregate-to-admin`` (``system:aggregate-to-admin``: Roles and RoleBindings,
  local subject access reviews; and ``edit``, labelled ``aggregate-to-admin``).

So ``admin`` ⊇ ``edit`` ⊇ ``view``, and a ClusterRole anyone labels ``aggregate-to-view`` (a CRD's read
access, say) extends all three. The rules are upstream's rendered bootstrap policy
(``bootstrappolicy/testdata/cluster-roles.yaml``: each list sorted, as ``rbacv1helpers.NewRule`` leaves
it). Without a running controller manager the three roles grant nothing, as upstream.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AGGREGATE_TO", "aggregated_role_specs"]

AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"

_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]
_READ_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _rule(group: str, resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": [group], "resources": resources, "verbs": verbs}


_VIEW = [
    _rule("", ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
               "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
               "services/status"], _READ),
    _rule("", ["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
               "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"], _READ),
    _rule("", ["namespaces"], _READ),
    _rule("discovery.k8s.io", ["endpointslices"], _READ),
    _rule("apps", ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                   "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
                   "statefulsets/scale", "statefulsets/status"], _READ),
    _rule("autoscaling", ["horizontalpodautoscalers", "horizontalpodautoscalers/status"], _READ),
    _rule("batch", ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], _READ),
    _rule("extensions", ["daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
                         "ingresses", "ingresses/status", "networkpolicies", "replicasets", "replicasets/scale",
                         "replicasets/status", "replicationcontrollers/scale"], _READ),
    _rule("policy", ["poddisruptionbudgets", "poddisruptionbudgets/status"], _READ),
    _rule("networking.k8s.io", ["ingresses", "ingresses/status", "networkpolicies"], _READ),
]  # fmt: skip

_EDIT = [
    _rule("", ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"], _READ),
    _rule("", ["serviceaccounts"], ["impersonate"]),
    _rule("", ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], _WRITE),
    _rule("", ["pods/eviction"], ["create"]),
    _rule("", ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
               "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"], _WRITE),
    _rule("", ["serviceaccounts/token"], ["create"]),
    _rule("apps", ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
                   "replicasets/scale", "statefulsets", "statefulsets/scale"], _WRITE),
    _rule("autoscaling", ["horizontalpodautoscalers"], _WRITE),
    _rule("batch", ["cronjobs", "jobs"], _WRITE),
    _rule("extensions", ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "ingresses",
                         "networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale"], _WRITE),
    _rule("policy", ["poddisruptionbudgets"], _WRITE),
    _rule("networking.k8s.io", ["ingresses", "networkpolicies"], _WRITE),
    _rule("coordination.k8s.io", ["leases"], _READ_WRITE),
]  # fmt: skip

_ADMIN = [
    _rule("authorization.k8s.io", ["localsubjectaccessreviews"], ["create"]),
    _rule("rbac.authorization.k8s.io", ["rolebindings", "roles"], _READ_WRITE),
]


def _selector(level: str) -> dict[str, Any]:
    return {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + level: "true"}}]}


def aggregated_role_specs() -> list[tuple[str, dict[str, str], dict[str, Any] | None, list[dict[str, Any]] | None]]:
    """``(name, extra labels, aggregationRule, rules)`` of the six roles, in upstream's order."""
    return [
        ("admin", {}, _selector("admin"), None),
        ("edit", {AGGREGATE_TO + "admin": "true"}, _selector("edit"), None),
        ("view", {AGGREGATE_TO + "edit": "true"}, _selector("view"), None),
        ("system:aggregate-to-admin", {AGGREGATE_TO + "admin": "true"}, None, _ADMIN),
        ("system:aggregate-to-edit", {AGGREGATE_TO + "edit": "true"}, None, _EDIT),
        ("system:aggregate-to-view", {AGGREGATE_TO + "view": "true"}, None, _VIEW),
    ]
