"""A bad ``resource.Quantity`` in a create or update body fails the decode, so it is answered before any
check of the write (namespace, name, resourceVersion, admission) and before fieldValidation=Strict's
unknown and duplicate field errors; patches and server-side apply keep their own answers
(tests/server/test_quantities.py).

Upstream: apimachinery ``runtime/serializer/json/json.go`` Decode (the strict pass reports unknown and
duplicate fields only when the plain unmarshal, which runs ``Quantity.UnmarshalJSON``, succeeded),
apiserver ``handlers/create.go``/``update.go`` (decode, then ``transformDecodeError``: 400 ``<Kind> in
version "v1" cannot be handled as a <Kind>: <error>``; the name, namespace and resourceVersion checks
come after the decode).
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import orjson

from kubeloop.server import App

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
BAD_POD = f'Pod in version "v1" cannot be handled as a Pod: {FORMAT_WRONG}'


def pod(name: str = "p", cpu: Any = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}}


def _with_cpu(obj: dict[str, Any], cpu: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return out


async def test_a_stale_put_with_a_bad_quantity_is_a_decode_error_not_a_conflict(client: httpx.AsyncClient) -> None:
    created = (await client.post(PODS, json=pod())).json()
    labelled = copy.deepcopy(created)
    labelled["metadata"]["labels"] = {"a": "b"}
    assert (await client.put(f"{PODS}/p", json=labelled)).status_code == 200  # created's resourceVersion is now stale
    r = await client.put(f"{PODS}/p", json=_with_cpu(created, "lots"))
    assert r.status_code == 400, r.text
    assert (r.json()["reason"], r.json()["message"]) == ("BadRequest", BAD_POD)
    # The same stale body with a good quantity is the conflict.
    assert (await client.put(f"{PODS}/p", json=created)).status_code == 409


async def test_a_bad_quantity_comes_before_the_name_and_namespace_checks(client: httpx.AsyncClient) -> None:
    created = (await client.post(PODS, json=pod())).json()
    renamed = _with_cpu(created, "1x")
    renamed["metadata"]["name"] = "other"
    r = await client.put(f"{PODS}/p", json=renamed)
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith('Pod in version "v1" cannot be handled as a Pod: ')
    elsewhere = pod("q", cpu="1x")
    elsewhere["metadata"]["namespace"] = "kube-system"
    r = await client.post(PODS, json=elsewhere)
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith('Pod in version "v1" cannot be handled as a Pod: ')
    # Even in a namespace that does not exist (NamespaceLifecycle admission comes later).
    r = await client.post("/api/v1/namespaces/nowhere/pods", json=pod(cpu="1x"))
    assert r.status_code == 400, r.text


async def test_under_strict_field_validation_the_bad_quantity_is_reported_first(client: httpx.AsyncClient) -> None:
    body = pod(cpu="lots")
    body["spec"]["unknownField"] = 1
    r = await client.post(f"{PODS}?fieldValidation=Strict", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == BAD_POD
    # A duplicate field too: the typed decode fails before the strict pass looks for them.
    raw = b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "name": "p"}, "spec": {"containers": [' \
          b'{"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "lots"}}}]}}'
    r = await client.post(f"{PODS}?fieldValidation=Strict", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == BAD_POD
    # Without the bad quantity, Strict reports the unknown field.
    body["spec"]["containers"][0]["resources"] = {}
    r = await client.post(f"{PODS}?fieldValidation=Strict", json=body)
    assert r.status_code == 400, r.text
    assert 'unknown field "spec.unknownField"' in r.json()["message"]
    # And on update: Strict, an unknown field, a stale resourceVersion and a bad quantity.
    created = (await client.post(PODS, json=pod("s"))).json()
    stale = _with_cpu(created, "lots")
    stale["metadata"]["resourceVersion"] = "1"
    stale["spec"]["unknownField"] = 1
    r = await client.put(f"{PODS}/s?fieldValidation=Strict", json=stale)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == BAD_POD


async def test_a_bad_quantity_in_a_template_or_a_yaml_body_is_refused_at_decode(client: httpx.AsyncClient) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
            {"name": "c", "image": "nginx", "resources": {"limits": {"memory": "1mi"}}}]}}}}
    r = await client.post(DEPLOYMENTS, json=deployment)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == ("Deployment in version \"v1\" cannot be handled as a Deployment: "
                                   "unable to parse quantity's suffix")
    yaml_body = b"apiVersion: v1\nkind: Pod\nmetadata: {name: y}\nspec:\n  containers:\n  - name: c\n" \
                b"    image: nginx\n    resources: {requests: {cpu: lots}}\n"
    r = await client.post(PODS, content=yaml_body, headers={"content-type": "application/yaml"})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == BAD_POD


async def test_admission_sees_a_bodys_quantities_decoded(app: App, client: httpx.AsyncClient) -> None:
    """Mutating admission gets the typed object: quantities already canonical."""
    seen: list[Any] = []

    class Peek:
        def mutate(self, attributes: Any, obj: Any, old: Any) -> None:
            if attributes.resource.plural == "pods" and obj is not None:
                seen.append(copy.deepcopy(obj["spec"]["containers"][0]["resources"]))

        async def __call__(self, attributes: Any, obj: Any, old: Any) -> None:
            self.mutate(attributes, obj, old)

    app.admission.append(Peek())
    assert (await client.post(PODS, json=pod(cpu="1000m"))).status_code == 201
    assert seen == [{"requests": {"cpu": "1"}}]


async def test_a_retried_put_is_decoded_again_before_admission(app: App, client: httpx.AsyncClient) -> None:
    """An unconditional PUT that loses a race is retried from its body, decoded afresh: admission sees its
    quantities canonical on every attempt, as the stored result has them."""
    stored = (await client.post(PODS, json=pod())).json()
    seen: list[Any] = []

    class RacesOnce:
        def mutate(self, attributes: Any, obj: Any, old: Any) -> Any:
            if attributes.operation != "UPDATE" or attributes.resource.plural != "pods":
                return None
            seen.append(copy.deepcopy(obj["spec"]["containers"][0]["resources"]))
            return self._race() if len(seen) == 1 else None

        async def _race(self) -> None:  # a concurrent write: this attempt's compare-and-swap loses
            r = await client.patch(f"{PODS}/p", json={"metadata": {"labels": {"race": "1"}}},
                                   headers={"content-type": "application/merge-patch+json"})
            assert r.status_code == 200, r.text

        async def __call__(self, attributes: Any, obj: Any, old: Any) -> None:
            pending = self.mutate(attributes, obj, old)
            if pending is not None:
                await pending

    app.admission.append(RacesOnce())
    body = pod(cpu="1000m")  # only known fields: its first attempt decodes it in place, a retry its bytes
    body["spec"]["tolerations"] = stored["spec"]["tolerations"]
    body["metadata"]["annotations"] = {"a": "b"}
    raw = orjson.dumps(body)
    r = await client.put(f"{PODS}/p", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    assert seen == [{"requests": {"cpu": "1"}}] * 3  # the PATCH's own update, then the retried PUT
    out = r.json()
    assert out["metadata"]["annotations"] == {"a": "b"} and "labels" not in out["metadata"]  # the PUT won, last
    assert out["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}
