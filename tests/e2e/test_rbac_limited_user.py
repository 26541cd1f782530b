"""A limited user with its own token, through the official ``kubernetes`` client and ``kubectl auth can-i``
against ``kubeloop up``: RBAC grants and revocations made by the admin apply to the user's very next
request (k/k ``plugin/pkg/auth/authorizer/rbac``; kubeloop re-decides on every RBAC change at once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from ._robot import ROBOT, kubectl_can_i, robot_kubeconfig, write_robot_token

pytestmark = pytest.mark.slow

ROBOT_TOKEN = "robot-token-0123456789"


def test_a_limited_user_gains_and_loses_access_on_the_next_request(start_kubeloop: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_robot_token(data, ROBOT_TOKEN)
    server = start_kubeloop(data, "--no-controllers")
    admin_client = k8s_config.new_client_from_config(config_file=str(server.kubeconfig))
    robot_config = robot_kubeconfig(server, tmp_path / "robot.kubeconfig", ROBOT_TOKEN)
    robot_client = k8s_config.new_client_from_config(config_file=str(robot_config))
    can_i = kubectl_can_i(robot_config, tmp_path)

    try:
        core, rbac = k8s.CoreV1Api(admin_client), k8s.RbacAuthorizationV1Api(admin_client)
        robot = k8s.CoreV1Api(robot_client)
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team")))
        core.create_namespaced_config_map("team", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="c")))

        with pytest.raises(ApiException) as denied:
            robot.list_namespaced_config_map("team")
        assert denied.value.status == 403
        assert f'User "{ROBOT}" cannot list resource "configmaps"' in json.loads(denied.value.body)["message"]
        assert can_i("list", "configmaps") == "no"

        rules = [k8s.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["get", "list"])]
        rbac.create_namespaced_role("team", k8s.V1Role(metadata=k8s.V1ObjectMeta(name="cm-reader"), rules=rules))
        subject = k8s.RbacV1Subject(kind="ServiceAccount", name="robot", namespace="team")
        ref = k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="cm-reader")
        rbac.create_namespaced_role_binding(
            "team", k8s.V1RoleBinding(metadata=k8s.V1ObjectMeta(name="robot"), role_ref=ref, subjects=[subject]))
        assert [cm.metadata.name for cm in robot.list_namespaced_config_map("team").items] == ["c"]
        assert robot.read_namespaced_config_map("c", "team").metadata.name == "c"
        assert can_i("list", "configmaps") == "yes"
        assert can_i("create", "configmaps") == "no"
        with pytest.raises(ApiException) as elsewhere:
            robot.list_namespaced_config_map("default")
        assert elsewhere.value.status == 403

        rbac.delete_namespaced_role_binding("robot", "team")
        with pytest.raises(ApiException) as revoked:
            robot.list_namespaced_config_map("team")
        assert revoked.value.status == 403
        assert can_i("list", "configmaps") == "no"
    finally:
        admin_client.close()
        robot_client.close()
