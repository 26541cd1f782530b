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
    # Not in the table: every zero kept (core/v1 NodeRuntimeHandler's Name tag was not read).
    assert "io.k8s.api.core.v1.NodeRuntimeHandler" not in POINTER_SCALARS
    assert _zeros("io.k8s.api.core.v1.NodeRuntimeHandler") == frozenset()
    # coordination/v1 LeaseSpec: every scalar a pointer (*string holderIdentity, *int32 leaseTransitions ...).
    assert _zeros("io.k8s.api.coordination.v1.LeaseSpec") == frozenset()
    # meta/v1 Condition: ObservedGeneration int64 `json:"observedGeneration,omitempty"`; reason and message
    # have no omitempty (the schema's required).
    assert _zeros("io.k8s.apimachinery.pkg.apis.meta.v1.Condition") == {"observedGeneration"}
    # apiextensions/v1 JSONSchemaProps: the value fields with omitempty, none of the pointers.
    props = _zeros("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")
    assert {"type", "description", "nullable", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string",
            "exclusiveMaximum", "uniqueItems", "pattern"} <= props
    assert not {"maxLength", "minimum", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-list-type",
                "$ref"} & props
    # A []byte with omitempty drops its empty value (WebhookClientConfig.CABundle `json:"caBundle,omitempty"`).
    assert _zeros("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.WebhookClientConfig") == {"caBundle"}


def test_pointers_without_omitempty_are_rows_of_the_table() -> None:
    # A pointer scalar written ``null`` when unset (GRPCAction's Service *string `json:"service"`) is both in
    # _go_encode._NOT_OMITEMPTY and a pointer of its struct's row, whose zero the encoding then writes as null.
    from kubeloop.api._go_encode import go_encoding

    grpc = go_encoding("io.k8s.api.core.v1.GRPCAction")
    assert "service" in POINTER_SCALARS["io.k8s.api.core.v1.GRPCAction"]
    assert grpc.always.get("service", "absent") is None
    local = go_encoding("io.k8s.api.core.v1.TypedLocalObjectReference")
    assert local.always.get("apiGroup", "absent") is None


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
