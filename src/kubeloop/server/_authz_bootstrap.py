"""The RBAC objects a fresh cluster starts with (k/k ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``).

:func:`bootstrap_rbac_objects` returns, as plain JSON dicts, the ClusterRoles and ClusterRoleBindings
that make a new cluster usable with RBAC on:

- ``cluster-admin`` (everything) bound to group ``system:masters``;
- ``system:discovery`` (discovery, OpenAPI, health and version paths) bound to ``system:authenticated``;
- ``system:basic-user`` (create self subject access/rules reviews and self subject reviews) bound to
  ``system:authenticated``;
- ``system:public-info-viewer`` (health and version paths) bound to ``system:authenticated`` and
  ``system:unauthenticated``;
- ``system:auth-delegator`` (create TokenReviews and SubjectAccessReviews, for a proxy or webhook that
  delegates to the API server), bound to nothing;
- ``admin``, ``edit``, ``view`` (aggregated ClusterRoles, no rules of their own) and the
  ``system:aggregate-to-admin/edit/view`` roles they gather (:mod:`._authz_bootstrap_roles`); the
  ClusterRole aggregation controller fills the three roles' ``rules``, and nothing binds them;
- ``system:monitoring`` (``get`` on ``/metrics``, ``/metrics/slis`` and the health paths) bound to the group
  ``system:monitoring``;
- ``system:kube-controller-manager``: kubeloop's controller manager runs every built-in controller
  under this one identity (upstream gives each controller its own service account), so its role
  grants every verb on every resource.

Each object carries upstream's ``kubernetes.io/bootstrapping: rbac-defaults`` label and the
``rbac.authorization.kubernetes.io/autoupdate: "true"`` annotation. Creating them is the caller's job
(409 AlreadyExists means a previous start made them).
"""

from __future__ import annotations

import copy
from typing import Any

from kubeloop.server._authn import CONTROLLER_MANAGER_USER
from kubeloop.server._authz_bootstrap_roles import aggregated_role_specs

__all__ = ["bootstrap_rbac_objects"]

_GROUP = "rbac.authorization.k8s.io"
# The system:monitoring role's URLs (its rule builder sorts them, as every bootstrap rule's).
_MONITORING = ("/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*")
_API_VERSION = f"{_GROUP}/v1"


def _meta(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **(labels or {})},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    }


def _role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": _API_VERSION, "kind": "ClusterRole", "metadata": _meta(name), "rules": rules}


def _aggregated_roles() -> list[dict[str, Any]]:
    roles: list[dict[str, Any]] = []
    for name, labels, aggregation, rules in aggregated_role_specs():
        role: dict[str, Any] = {"apiVersion": _API_VERSION, "kind": "ClusterRole", "metadata": _meta(name, labels)}
        if aggregation is not None:
            role["aggregationRule"] = aggregation
        role["rules"] = copy.deepcopy(rules)  # the specs share their verb lists; callers may edit ours
        roles.append(role)
    return roles


def _binding(name: str, role: str, subjects: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": _API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name),
        "roleRef": {"apiGroup": _GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": _GROUP, "kind": kind, "name": subject} for kind, subject in subjects],
    }


def bootstrap_rbac_objects() -> list[dict[str, Any]]:
    """ClusterRoles first, then the ClusterRoleBindings that use them."""
    everything = [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]
    public = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
    discovery = sorted({"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *public})
    return [
        _role("cluster-admin", everything),
        _role("system:discovery", [{"nonResourceURLs": discovery, "verbs": ["get"]}]),
        _role(
            "system:basic-user",
            [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                },
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
            ],
        ),
        _role("system:public-info-viewer", [{"nonResourceURLs": public, "verbs": ["get"]}]),
        # For a proxy or webhook that delegates authentication and authorization to the API server.
        _role(
            "system:auth-delegator",
            [
                {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
            ],
        ),
        _role("system:kube-controller-manager", everything),
        # Full access to the monitoring endpoints (bootstrappolicy ClusterRoles, ``system:monitoring``), for the
        # group of the same name: what a Prometheus scraping /metrics is given.
        _role("system:monitoring", [{"nonResourceURLs": sorted(_MONITORING), "verbs": ["get"]}]),
        *_aggregated_roles(),
        _binding("cluster-admin", "cluster-admin", [("Group", "system:masters")]),
        _binding("system:discovery", "system:discovery", [("Group", "system:authenticated")]),
        _binding("system:basic-user", "system:basic-user", [("Group", "system:authenticated")]),
        _binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            [("Group", "system:authenticated"), ("Group", "system:unauthenticated")],
        ),
        _binding("system:kube-controller-manager", "system:kube-controller-manager", [("User", CONTROLLER_MANAGER_USER)]),
        _binding("system:monitoring", "system:monitoring", [("Group", "system:monitoring")]),
    ]
