"""Who may touch HorizontalPodAutoscalers under the bootstrap policy (k/k ``bootstrappolicy/policy.go``: the
``system:aggregate-to-edit`` role writes ``autoscaling`` horizontalpodautoscalers, ``system:aggregate-to-view``
reads them and their ``/status``), at both served versions: RBAC names the group and resource, not the
version, so the v1 route is authorized as the v2 one."""

from __future__ import annotations

from pathlib import Path

from kubeloop.server import User

from ._rbac import rbac_clients

RBAC = "/apis/rbac.authorization.k8s.io/v1"
ALICE = User("alice", groups=("system:authenticated",))
HPA = {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}}


def binding(name: str, role: str) -> dict[str, object]:
    return {"metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "name": "alice"}]}


async def test_the_aggregate_to_roles_grant_hpas_at_either_version(tmp_path: Path) -> None:
    async with rbac_clients(tmp_path, ALICE) as (admin, alice):
        for version in ("v2", "v1"):
            path = f"/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers"
            assert (await alice.get(path)).status_code == 403
        r = await admin.post(f"{RBAC}/namespaces/default/rolebindings", json=binding("view", "system:aggregate-to-view"))
        assert r.status_code == 201, r.text
        v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
        v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
        assert (await alice.get(v1)).status_code == 200 and (await alice.get(v2)).status_code == 200
        refused = await alice.post(v1, json={"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", **HPA})
        assert refused.status_code == 403
        assert refused.json()["message"] == ('horizontalpodautoscalers.autoscaling is forbidden: User "alice" cannot '
                                             'create resource "horizontalpodautoscalers" in API group "autoscaling" '
                                             'in the namespace "default"')
        r = await admin.post(f"{RBAC}/namespaces/default/rolebindings", json=binding("edit", "system:aggregate-to-edit"))
        assert r.status_code == 201, r.text
        made = await alice.post(v1, json={"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", **HPA})
        assert made.status_code == 201, made.text
        assert (await alice.delete(f"{v2}/web")).status_code == 200
