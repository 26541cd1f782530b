"""RBAC objects through the real API app and store: names, defaults, validation, immutable roleRef.

Upstream: k/k pkg/apis/rbac/validation/validation.go, pkg/apis/rbac/v1/defaults.go.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, create_app
from kubeloop.store import SqliteStore

RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    store = await SqliteStore.open(tmp_path / "db")
    app = create_app(store=store, disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://k") as client:
            yield client
    finally:
        await app.shutdown()
        await store.close()


def binding(name: str, role_kind: str = "ClusterRole", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": "view"},
        "subjects": [{"kind": "User", "name": "bob"}], **extra,
    }  # fmt: skip


async def test_rbac_names_are_path_segments_so_colons_are_allowed(api: httpx.AsyncClient) -> None:
    role = {"metadata": {"name": "system:reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    assert (await api.post(f"{RBAC}/clusterroles", json=role)).status_code == 201
    bad = await api.post(f"{RBAC}/clusterroles", json={"metadata": {"name": "a%b"}, "rules": []})
    assert bad.status_code == 422
    assert bad.json()["message"] == (
        'ClusterRole.rbac.authorization.k8s.io "a%b" is invalid: metadata.name: Invalid value: "a%b": may not contain \'%\''
    )


async def test_user_subjects_default_their_api_group(api: httpx.AsyncClient) -> None:
    r = await api.post(f"{RBAC}/namespaces/default/rolebindings", json=binding("b"))
    assert r.status_code == 201, r.text
    assert r.json()["subjects"] == [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]


async def test_rules_need_verbs_groups_and_resources(api: httpx.AsyncClient) -> None:
    r = await api.post(f"{RBAC}/namespaces/default/roles",
                       json={"metadata": {"name": "r"}, "rules": [{"resources": ["pods"]}, {"verbs": ["get"], "nonResourceURLs": ["/x"]}]})  # fmt: skip
    assert r.status_code == 422
    assert [(c["field"], c["reason"]) for c in r.json()["details"]["causes"]] == [
        ("rules[0].verbs", "FieldValueRequired"),
        ("rules[0].apiGroups", "FieldValueRequired"),
        ("rules[1].nonResourceURLs", "FieldValueInvalid"),
    ]
    assert 'rules[1].nonResourceURLs: Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource URLs' in r.json()["message"]


async def test_an_aggregation_rule_needs_valid_cluster_role_selectors(api: httpx.AsyncClient) -> None:
    # k/k ValidateClusterRole: at least one selector when aggregationRule is set, each a valid LabelSelector.
    empty = await api.post(f"{RBAC}/clusterroles", json={"metadata": {"name": "a"}, "aggregationRule": {}})
    assert empty.status_code == 422
    assert [(c["field"], c["reason"]) for c in empty.json()["details"]["causes"]] == [
        ("aggregationRule.clusterRoleSelectors", "FieldValueRequired")]
    assert "at least one clusterRoleSelector required if aggregationRule is non-nil" in empty.json()["message"]
    bad = {"clusterRoleSelectors": [{"matchLabels": {"ok": "yes"}},
                                    {"matchLabels": {"x": "not valid"}, "matchExpressions": [{"key": "k", "operator": "Is"}]}]}
    r = await api.post(f"{RBAC}/clusterroles", json={"metadata": {"name": "b"}, "aggregationRule": bad})
    assert r.status_code == 422
    assert [c["field"] for c in r.json()["details"]["causes"]] == [
        "aggregationRule.clusterRoleSelectors[1].matchLabels", "aggregationRule.clusterRoleSelectors[1].matchExpressions[0].operator"]
    good = {"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}
    assert (await api.post(f"{RBAC}/clusterroles", json={"metadata": {"name": "c"}, "aggregationRule": good})).status_code == 201


async def test_cluster_role_binding_may_only_reference_a_cluster_role(api: httpx.AsyncClient) -> None:
    body = binding("c", role_kind="Role") | {"kind": "ClusterRoleBinding"}
    r = await api.post(f"{RBAC}/clusterrolebindings", json=body)
    assert r.status_code == 422
    assert r.json()["details"]["causes"][0]["field"] == "roleRef.kind"
    assert 'Unsupported value: "Role": supported values: "ClusterRole"' in r.json()["message"]


async def test_role_ref_cannot_change(api: httpx.AsyncClient) -> None:
    created = (await api.post(f"{RBAC}/namespaces/default/rolebindings", json=binding("b"))).json()
    created["roleRef"]["name"] = "edit"
    r = await api.put(f"{RBAC}/namespaces/default/rolebindings/b", json=created)
    assert r.status_code == 422
    assert r.json()["message"] == (
        'RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: '
        'rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef'
    )
