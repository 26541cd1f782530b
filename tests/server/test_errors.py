"""Rejected requests: each gets upstream's Status (code, reason, message) and stores nothing."""

from __future__ import annotations

import httpx
import pytest

from kubeloop.server import App

CM = "/api/v1/namespaces/default/configmaps"


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def assert_status(r: httpx.Response, code: int, reason: str, message: str | None = None) -> dict[str, object]:
    assert r.status_code == code, r.text
    body = r.json()
    assert body["kind"] == "Status" and body["status"] == "Failure"
    assert (body["code"], body.get("reason", "")) == (code, reason)
    if not reason:  # StatusReasonUnknown: "" and omitted, json:"reason,omitempty" (meta/v1 types.go)
        assert "reason" not in body
    if message is not None:
        assert body["message"] == message
    return body


async def test_malformed_json_is_400_and_nothing_stored(app: App, client: httpx.AsyncClient) -> None:
    before = app.state.store.revision
    r = await client.post(CM, content=b'{"metadata": {', headers={"content-type": "application/json"})
    await assert_status(r, 400, "BadRequest")
    assert app.state.store.revision == before


async def test_body_that_is_not_an_object_is_400(client: httpx.AsyncClient) -> None:
    await assert_status(await client.post(CM, json=[1, 2]), 400, "BadRequest")


async def test_wrong_metadata_types_of_a_builtin_kind_are_400_as_go_decodes_them(client: httpx.AsyncClient) -> None:
    # A built-in body is decoded into its Go struct: ObjectMeta.Labels is a map[string]string.
    r = await client.post(CM, json={"metadata": {"name": "a", "labels": "nope"}})
    await assert_status(r, 400, "BadRequest",
                        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal string '
                        "into Go struct field ObjectMeta.metadata.labels of type map[string]string")


async def test_body_over_3_mib_is_413(client: httpx.AsyncClient) -> None:
    big = b'{"metadata":{"name":"a"},"data":{"x":"' + b"a" * (3 * 1024 * 1024) + b'"}}'
    await assert_status(await client.post(CM, content=big), 413, "RequestEntityTooLarge",
                        "Request entity too large: limit is 3145728")
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_unknown_content_type_is_415(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, content=b"x", headers={"content-type": "text/plain"})
    body = await assert_status(r, 415, "UnsupportedMediaType")
    assert str(body["message"]).startswith("the body of the request was in an unknown format - accepted media types include: application/json")


async def test_missing_content_type_means_json(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, content=b'{"metadata":{"name":"a"}}', headers={"content-type": ""})
    assert r.status_code == 201


async def test_yaml_body_is_accepted(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, content=b"metadata:\n  name: y\ndata:\n  a: b\n", headers={"content-type": "application/yaml"})
    assert r.status_code == 201 and r.json()["data"] == {"a": "b"}


@pytest.mark.parametrize("accept", ["*/*", "application/json", "application/vnd.kubernetes.protobuf,application/json",
                                    "application/*"])
async def test_accept_json_compatible_answers_json(client: httpx.AsyncClient, accept: str) -> None:
    r = await client.get("/api/v1/namespaces/default", headers={"accept": accept})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"


async def test_accept_only_unsupported_is_406(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/namespaces/default", headers={"accept": "application/vnd.kubernetes.protobuf"})
    await assert_status(r, 406, "NotAcceptable")


async def test_unknown_resource_is_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/namespaces/default/widgets")
    await assert_status(r, 404, "NotFound", "the server could not find the requested resource")
    await assert_status(await client.get("/apis/nope.example.com/v1/things"), 404, "NotFound")


async def test_cluster_scoped_kind_under_a_namespace_is_404(client: httpx.AsyncClient) -> None:
    await assert_status(await client.get("/api/v1/namespaces/default/nodes"), 404, "NotFound")


async def test_wrong_method_is_405(client: httpx.AsyncClient) -> None:
    await assert_status(await client.post(f"{CM}/x", json=configmap("x")), 405, "MethodNotAllowed")
    await assert_status(await client.put(CM, json=configmap("x")), 405, "MethodNotAllowed")
    await assert_status(await client.post("/api/v1/configmaps", json=configmap("x")), 405, "MethodNotAllowed")


async def test_api_version_mismatch_is_400(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json={"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    await assert_status(r, 400, "BadRequest",
                        "the API version in the data (apps/v1) does not match the expected API version (v1)")


async def test_namespace_mismatch_is_400(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json={"metadata": {"name": "a", "namespace": "other"}})
    await assert_status(r, 400, "BadRequest",
                        "the namespace of the provided object does not match the namespace sent on the request")


async def test_name_mismatch_on_update_is_400(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a"))
    r = await client.put(f"{CM}/a", json=configmap("b"))
    await assert_status(r, 400, "BadRequest", "the name of the object (b) does not match the name on the URL (a)")


async def test_invalid_name_is_422_with_upstream_text(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json=configmap("Bad_Name"))
    body = await assert_status(r, 422, "Invalid")
    assert str(body["message"]).startswith('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
                                           "a lowercase RFC 1123 subdomain must consist of")
    assert body["details"] == {"name": "Bad_Name", "kind": "ConfigMap", "causes": body["details"]["causes"]}  # type: ignore[index]


async def test_missing_name_is_422(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json={"metadata": {}})
    await assert_status(r, 422, "Invalid",
                        'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required')


async def test_resource_version_on_create_is_500_with_status_reason_unknown(client: httpx.AsyncClient) -> None:
    # etcd3 store.Create's plain error; ErrorToAPIStatus makes it 500 with StatusReasonUnknown, which is "".
    r = await client.post(CM, json={"metadata": {"name": "a", "resourceVersion": "12"}})
    await assert_status(r, 500, "", "resourceVersion should not be set on objects to be created")


async def test_two_controller_owner_references_are_422(client: httpx.AsyncClient) -> None:
    refs = [{"apiVersion": "v1", "kind": "K1", "name": n, "uid": n, "controller": True} for n in ("n1", "n2")]
    r = await client.post(CM, json={"metadata": {"name": "a", "ownerReferences": refs}})
    body = await assert_status(r, 422, "Invalid")
    assert "Only one reference can have Controller set to true" in str(body["message"])


async def test_invalid_dry_run_value_is_422(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{CM}?dryRun=Bogus", json=configmap("a"))
    await assert_status(r, 422, "Invalid",
                        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: '
                        'supported values: "All"')
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_errors_never_leak_as_500_for_odd_queries(client: httpx.AsyncClient) -> None:
    for query in ("limit=abc", "labelSelector=a%20in%20(", "fieldSelector=spec.foo%3Dx", "continue=%%%",
                  "resourceVersionMatch=Exact", "timeoutSeconds=x"):
        r = await client.get(f"{CM}?{query}")
        assert 400 <= r.status_code < 500, (query, r.text)
