"""The bootstrap ``admin``, ``edit`` and ``view`` ClusterRoles are upstream's aggregated roles (k/k
``bootstrappolicy/policy.go``, rendered in ``bootstrappolicy/testdata/cluster-roles.yaml``).

The API server alone stores them with an ``aggregationRule`` and ``rules: null``: their rules come from
the ``clusterrole-aggregation`` controller (``tests/controllers/test_clusterrole_aggregation.py``), so
without a controller manager a ``view`` binding grants nothing, as on a cluster without
kube-controller-manager; ``system:masters`` keeps everything.
"""

from __future__ import annotations

from pathlib import Path

from kubeloop.server import User

from ._rbac import rbac_clients

RBAC = "/apis/rbac.authorization.k8s.io/v1"
AGG = "rbac.authorization.k8s.io/aggregate-to-"
BOB = User("bob", groups=("system:authenticated",))


async def test_admin_edit_view_are_aggregated_roles_over_the_aggregate_to_roles(tmp_path: Path) -> None:
    async with rbac_clients(tmp_path, BOB) as (admin, bob):
        roles = {r["metadata"]["name"]: r for r in (await admin.get(f"{RBAC}/clusterroles")).json()["items"]}
        for name, selects, label in (("admin", "admin", None), ("edit", "edit", "admin"), ("view", "view", "edit")):
            role = roles[name]
            assert role["aggregationRule"] == {"clusterRoleSelectors": [{"matchLabels": {AGG + selects: "true"}}]}
            assert role.get("rules") is None
            expected = {"kubernetes.io/bootstrapping": "rbac-defaults"} | ({AGG + label: "true"} if label else {})
            assert role["metadata"]["labels"] == expected
            assert role["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
            source = roles[f"system:aggregate-to-{name}"]
            assert source["metadata"]["labels"][AGG + name] == "true" and "aggregationRule" not in source
        view_rules = roles["system:aggregate-to-view"]["rules"]
        assert {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]} in view_rules
        assert not any("secrets" in r["resources"] for r in view_rules)  # view never reads secrets
        assert {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings", "roles"],
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]} \
            in roles["system:aggregate-to-admin"]["rules"]  # fmt: skip

        binding = {"metadata": {"name": "bob-view"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                   "subjects": [{"kind": "User", "name": "bob"}]}  # fmt: skip
        assert (await admin.post(f"{RBAC}/namespaces/default/rolebindings", json=binding)).status_code == 201
        assert (await bob.get("/api/v1/namespaces/default/pods")).status_code == 403  # no controller: no rules
        assert (await admin.get("/api/v1/namespaces/default/secrets")).status_code == 200  # masters: everything
