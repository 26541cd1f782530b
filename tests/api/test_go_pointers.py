"""The pointer-scalar table (api/_go_pointers.py) names real fields, and the decode walk drops exactly the others.

Each row is a k8s.io/api ``types.go`` struct; a misspelt field name would silently make a pointer's zero
droppable, so every listed name must be a scalar property of its OpenAPI definition.
"""

from __future__ import annotations

from kubeloop.api._go_decode import decode, go_struct
from kubeloop.api._go_pointers import POINTER_SCALARS
from kubeloop.api._schemas import definitions, resolve


def test_every_row_names_a_definition_and_its_scalar_properties() -> None:
    defs = definitions()
    for defname, pointers in POINTER_SCALARS.items():
        node = defs.get(defname)
        assert node is not None, defname
        props = node.get("properties") or {}
        for field in pointers:
            assert field in props, (defname, field)
            kinds = (resolve(props[field]) or {}).get("type")
            kinds = [kinds] if isinstance(kinds, str) else kinds or []
            assert {"string", "integer", "boolean", "number"} & set(kinds), (defname, field, kinds)


def _zeros(defname: str) -> frozenset[str]:
    go = go_struct(defname)
    assert go.fields is not None
    return go.zeros or frozenset()


def test_the_dropped_fields_are_the_value_scalars_of_a_covered_struct() -> None:
    # apps/v1 DeploymentSpec: MinReadySeconds int32, Paused bool; Replicas, RevisionHistoryLimit,
    # ProgressDeadlineSeconds *int32.
    assert _zeros("io.k8s.api.apps.v1.DeploymentSpec") == {"minReadySeconds", "paused"}
    pod_spec = _zeros("io.k8s.api.core.v1.PodSpec")
    assert {"hostNetwork", "hostPID", "hostIPC", "nodeName", "restartPolicy", "dnsPolicy"} <= pod_spec
    assert not {"priority", "enableServiceLinks", "terminationGracePeriodSeconds", "hostUsers"} & pod_spec
    # A required field has no omitempty (Container.name), and a kind's own apiVersion/kind are never dropped.
    assert "name" not in _zeros("io.k8s.api.core.v1.Container")
    assert not {"apiVersion", "kind"} & _zeros("io.k8s.api.core.v1.ConfigMap")
    # StatefulSetOrdinals.Start int32 `json:"start"`: no omitempty, so its zero is written.
    assert _zeros("io.k8s.api.apps.v1.StatefulSetOrdinals") == frozenset()
    # Not in the table: every zero kept (coordination/v1 LeaseSpec was not read).
    assert "io.k8s.api.coordination.v1.LeaseSpec" not in POINTER_SCALARS
    assert _zeros("io.k8s.api.coordination.v1.LeaseSpec") == frozenset()


def test_the_walk_records_zeros_at_any_depth_and_drops_only_them() -> None:
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "generation": 0},
            "spec": {"replicas": 0, "paused": False, "minReadySeconds": 0, "template": {"spec": {
                "hostNetwork": False, "containers": [{"name": "c", "workingDir": "", "stdin": True,
                                                      "securityContext": {"privileged": False}}]}}}}
    decoded = decode(body, go_struct("io.k8s.api.apps.v1.Deployment"))
    assert decoded.error is None and decoded.unknown == []
    assert sorted(key for _, key in decoded.zeros or ()) == [
        "generation", "hostNetwork", "minReadySeconds", "paused", "workingDir"]
    assert decoded.drop_zeros() is True
    assert body == {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                    "spec": {"replicas": 0, "template": {"spec": {"containers": [
                        {"name": "c", "stdin": True, "securityContext": {"privileged": False}}]}}}}
