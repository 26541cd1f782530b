"""A CRD author's ClusterRole labelled ``aggregate-to-view`` reaches every ``view`` binding, against ``kubeloop up``.

Upstream's bootstrap ``view`` is an aggregated ClusterRole (``bootstrappolicy/policy.go``) whose rules
kube-controller-manager's ``clusterrole-aggregation`` controller fills in; kubeloop's controller
manager runs the same controller. Checked with ``kubectl auth can-i`` and with real requests of the
official ``kubernetes`` client, as the service account the binding names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from ._kubectl import crd, eventually
from ._robot import kubectl_can_i, robot_kubeconfig, write_robot_token

pytestmark = pytest.mark.slow

ROBOT_TOKEN = "robot-token-aggregation-0123"
GROUP = "aggregation.example.com"
VIEW_LABEL = "rbac.authorization.k8s.io/aggregate-to-view"


def test_a_role_labelled_aggregate_to_view_extends_view_bindings_until_the_label_is_removed(
    start_kubeloop: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_robot_token(data, ROBOT_TOKEN)
    server = start_kubeloop(data)  # with the controller manager
    robot_config = robot_kubeconfig(server, tmp_path / "robot.kubeconfig", ROBOT_TOKEN)
    admin_client = k8s_config.new_client_from_config(config_file=str(server.kubeconfig))
    robot_client = k8s_config.new_client_from_config(config_file=str(robot_config))
    can_i = kubectl_can_i(robot_config, tmp_path)

    def robot_lists_widgets() -> bool:
        try:
            k8s.CustomObjectsApi(robot_client).list_namespaced_custom_object(GROUP, "v1", "team", "widgets")
        except ApiException as error:
            assert error.status == 403, error
            return False
        return True

    try:
        core, rbac = k8s.CoreV1Api(admin_client), k8s.RbacAuthorizationV1Api(admin_client)
        k8s.ApiextensionsV1Api(admin_client).create_custom_resource_definition(crd(GROUP))
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team")))
        subject = k8s.RbacV1Subject(kind="ServiceAccount", name="robot", namespace="team")
        ref = k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="view")
        rbac.create_namespaced_role_binding(
            "team", k8s.V1RoleBinding(metadata=k8s.V1ObjectMeta(name="robot-view"), role_ref=ref, subjects=[subject]))

        # The bootstrap view role is filled from system:aggregate-to-view, so it reads pods but no widgets.
        eventually(lambda: can_i("list", "pods") == "yes", timeout=30)
        assert can_i("list", f"widgets.{GROUP}") == "no"
        assert not robot_lists_widgets()

        widget_reader = k8s.V1ClusterRole(
            metadata=k8s.V1ObjectMeta(name="widget-reader", labels={VIEW_LABEL: "true"}),
            rules=[k8s.V1PolicyRule(api_groups=[GROUP], resources=["widgets"], verbs=["get", "list"])])
        rbac.create_cluster_role(widget_reader)
        eventually(lambda: can_i("list", f"widgets.{GROUP}") == "yes", timeout=30)
        assert robot_lists_widgets()
        assert can_i("create", f"widgets.{GROUP}") == "no"
        view = rbac.read_cluster_role("view")
        assert view.aggregation_rule.cluster_role_selectors[0].match_labels == {VIEW_LABEL: "true"}
        assert any(r.api_groups == [GROUP] and r.resources == ["widgets"] for r in view.rules)

        rbac.patch_cluster_role("widget-reader", {"metadata": {"labels": {VIEW_LABEL: None}}})
        eventually(lambda: can_i("list", f"widgets.{GROUP}") == "no", timeout=30)
        assert not robot_lists_widgets()
        assert can_i("list", "pods") == "yes"
    finally:
        admin_client.close()
        robot_client.close()
