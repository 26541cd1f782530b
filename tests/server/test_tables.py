"""Table rendering matches upstream's printers (k/k pkg/printers/internalversion/printers.go)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeloop.api import BadRequest, KindRegistry, ResourceInfo, format_time
from kubeloop.server._tables import human_duration, jsonpath_values, table_for, wants_table

NOW = 1_700_000_000.0
REG = KindRegistry()


def _info(group: str, kind: str) -> ResourceInfo:
    info = REG.by_kind(group, kind)
    assert info is not None
    return info


def _meta(name: str, age: float = 300) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "creationTimestamp": format_time(NOW - age)}


def _headers(table: dict[str, Any], wide: bool = False) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"] if wide or c["priority"] == 0]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-5, "<invalid>"), (-1, "0s"), (59, "59s"), (119, "119s"), (150, "2m30s"), (180, "3m"), (900, "15m"),
     (3 * 3600 + 1200, "3h20m"), (10 * 3600, "10h"), (2 * 86400 + 5 * 3600, "2d5h"), (30 * 86400, "30d"),
     (400 * 86400 * 2, "2y70d"), (9 * 365 * 86400, "9y"), (120, "2m"), (3 * 3600, "3h"), (2 * 86400, "2d"),
     (730 * 86400, "2y")],
)
def test_ages_read_like_kubectl(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_kubectl_accept_header_asks_for_a_table() -> None:
    accept = ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
              "application/json")
    assert wants_table(accept)
    assert not wants_table("application/json")
    assert not wants_table("*/*")


def test_pod_columns_and_crash_loop_status() -> None:
    pod = {
        "metadata": _meta("web-1"),
        "spec": {"containers": [{"name": "app"}, {"name": "side"}], "nodeName": "node-1"},
        "status": {
            "phase": "Running", "podIP": "10.0.0.5",
            "containerStatuses": [
                {"name": "app", "ready": False, "restartCount": 4,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": format_time(NOW - 60)}}},
                {"name": "side", "ready": True, "restartCount": 0, "state": {"running": {}}},
            ],
        },
    }
    table = table_for(_info("", "Pod"), [pod], now=NOW)
    assert _headers(table) == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert _headers(table, wide=True)[5:7] == ["IP", "Node"]
    assert table["rows"][0]["cells"][:5] == ["web-1", "1/2", "CrashLoopBackOff", "4 (60s ago)", "5m"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_terminating_pod_says_terminating() -> None:
    pod = {"metadata": {**_meta("p"), "deletionTimestamp": format_time(NOW)}, "spec": {"containers": [{}]},
           "status": {"phase": "Running"}}
    assert table_for(_info("", "Pod"), [pod], now=NOW)["rows"][0]["cells"][2] == "Terminating"


def test_deployment_ready_up_to_date_available() -> None:
    d = {"metadata": _meta("web"), "spec": {"replicas": 10, "selector": {"matchLabels": {"app": "web"}},
                                             "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
         "status": {"readyReplicas": 5, "updatedReplicas": 7, "availableReplicas": 5}}
    table = table_for(_info("apps", "Deployment"), [d], now=NOW)
    assert _headers(table) == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    assert table["rows"][0]["cells"] == ["web", "5/10", 7, 5, "5m", "c", "nginx", "app=web"]


def test_namespace_and_pvc_columns() -> None:
    ns = {"metadata": _meta("team-a"), "status": {"phase": "Terminating"}}
    assert table_for(_info("", "Namespace"), [ns], now=NOW)["rows"][0]["cells"] == ["team-a", "Terminating", "5m"]
    pvc = {"metadata": _meta("data-db-0"), "spec": {"volumeName": "pv-1", "storageClassName": "standard"},
           "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}}
    table = table_for(_info("", "PersistentVolumeClaim"), [pvc], now=NOW)
    # k/k printers.go since 1.29: VolumeAttributesClass is a default column before Age.
    assert _headers(table) == ["Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass",
                               "VolumeAttributesClass", "Age"]
    assert table["rows"][0]["cells"][:8] == ["data-db-0", "Bound", "pv-1", "1Gi", "RWO", "standard", "<unset>", "5m"]


def test_kind_without_printer_gets_name_and_created_at() -> None:
    role = {"metadata": _meta("reader")}
    table = table_for(_info("rbac.authorization.k8s.io", "Role"), [role], now=NOW)
    assert _headers(table) == ["Name", "Created At"]
    assert table["columnDefinitions"][1]["type"] == "date"


def test_custom_resource_uses_additional_printer_columns() -> None:
    info = ResourceInfo("example.com", "v1", "Widget", "widgets", "widget", True, custom=True)
    columns = [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
               {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
               {"name": "Seen", "type": "date", "jsonPath": ".status.seen", "priority": 1}]
    w = {"metadata": _meta("w1"), "spec": {"size": 3},
         "status": {"conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}],
                    "seen": format_time(NOW - 150)}}
    table = table_for(info, [w], now=NOW, printer_columns=columns)
    # customresource_handler.go serveDefaultColumnsIfEmpty: declared columns get no extra Age column.
    assert _headers(table) == ["Name", "Size", "Ready"]
    assert table["rows"][0]["cells"] == ["w1", 3, "True", "2m30s"]


def test_custom_resource_without_printer_columns_gets_an_age_column() -> None:
    info = ResourceInfo("example.com", "v1", "Widget", "widgets", "widget", True, custom=True)
    table = table_for(info, [{"metadata": _meta("w1")}], now=NOW, printer_columns=None)
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [("Name", "string"), ("Age", "date")]
    assert table["rows"][0]["cells"] == ["w1", "5m"]


def test_include_object_modes() -> None:
    cm = {"metadata": _meta("c"), "data": {"a": "1"}}
    info = _info("", "ConfigMap")
    assert table_for(info, [cm], now=NOW, include_object="Object")["rows"][0]["object"] is cm
    assert table_for(info, [cm], now=NOW, include_object="None")["rows"][0]["object"] is None
    with pytest.raises(BadRequest):
        table_for(info, [cm], now=NOW, include_object="Bogus")


def test_jsonpath_subset() -> None:
    obj = {"a": {"b": [{"c": 1}, {"c": 2}]}}
    assert jsonpath_values(obj, ".a.b[1].c") == [2]
    assert jsonpath_values(obj, ".a.b[*].c") == [1, 2]
    assert jsonpath_values(obj, "{.a.missing}") == []


def test_controller_revision_names_its_controller() -> None:
    # k/k printers.go printControllerRevision: lower-cased Kind.group/name of the controller ref.
    cr = {"metadata": {**_meta("web-7d9"), "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": True}]},
        "revision": 2}
    table = table_for(_info("apps", "ControllerRevision"), [cr], now=NOW)
    assert _headers(table) == ["Name", "Controller", "Revision", "Age"]
    assert table["rows"][0]["cells"] == ["web-7d9", "statefulset.apps/web", 2, "5m"]
