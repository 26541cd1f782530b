"""The pod spec checks read JSON as a client sent it: wrong shapes are skipped (the decoder's job), never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from kubeloop.api._pod_spec_validation import validate_pod_create, validate_pod_spec, validate_pod_template

ODD_VALUES: list[Any] = [None, "x", 3, True, [], {}, [None, "x", 3], {"a": None}]


@pytest.mark.parametrize("value", ODD_VALUES)
@pytest.mark.parametrize("key", ["volumes", "containers", "initContainers", "ephemeralContainers", "hostNetwork",
                                 "restartPolicy", "dnsPolicy"])
def test_a_spec_field_of_the_wrong_shape_is_skipped(key: str, value: Any) -> None:
    spec = {"containers": [{"name": "c", "image": "nginx"}], key: value}
    errors = validate_pod_spec(spec, "spec", is_pod=True)
    assert all(e.field.startswith("spec.") for e in errors)


@pytest.mark.parametrize("value", ODD_VALUES)
@pytest.mark.parametrize("key", ["ports", "env", "envFrom", "volumeMounts", "volumeDevices", "resources", "name",
                                 "image", "imagePullPolicy", "terminationMessagePolicy", "restartPolicy",
                                 "lifecycle", "livenessProbe", "readinessProbe", "startupProbe"])
def test_a_container_field_of_the_wrong_shape_is_skipped(key: str, value: Any) -> None:
    container = {"name": "c", "image": "nginx", key: value}
    for spec in ({"containers": [container]}, {"containers": [{"name": "m", "image": "x"}], "initContainers": [container],
                                               "ephemeralContainers": [container]}):
        validate_pod_spec(spec, "spec", is_pod=True)


@pytest.mark.parametrize("value", ODD_VALUES)
def test_odd_items_inside_lists_are_skipped(value: Any) -> None:
    container = {"name": "c", "image": "nginx", "ports": [value], "env": [{"name": "A", "valueFrom": value}],
                 "envFrom": [value], "volumeMounts": [value], "resources": {"limits": value, "requests": {"cpu": value}}}
    container["livenessProbe"] = {"httpGet": {"port": value, "httpHeaders": [value]}, "exec": value}
    container["lifecycle"] = {"preStop": value, "postStart": {"sleep": {"seconds": value}}}
    volumes = [value, {"name": "v", "projected": {"sources": [value, {"secret": value}]}},
               {"name": "w", "downwardAPI": {"items": [value]}}, {"name": "x", "configMap": {"items": value}}]
    validate_pod_spec({"containers": [container], "volumes": volumes}, "spec", is_pod=True)


def test_a_pod_or_workload_without_a_spec_needs_containers() -> None:
    assert [str(e) for e in validate_pod_create({"metadata": {"name": "p"}})] == ["spec.containers: Required value"]
    assert [str(e) for e in validate_pod_template({"spec": "not an object"}, kind="ReplicaSet")] == [
        "spec.template.spec.containers: Required value"]


def test_a_boolean_is_not_read_as_an_integer_field() -> None:
    # JSON true is no Go int32: the port reads as unset (Python's True == 1 must not pass as port 1).
    def port_errors(port: Any) -> list[tuple[str, str]]:
        spec = {"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": port}]}]}
        return [(e.field, e.type) for e in validate_pod_spec(spec, "spec", is_pod=True)]

    assert port_errors(True) == [("spec.containers[0].ports[0].containerPort", "required")]
    assert port_errors(1) == []
