"""ValidatingAdmissionPolicy on the requests around the usual writes: deletes, and a namespace not stored.

Upstream (k8s.io/apiserver release-1.32, ``pkg/admission/plugin/policy/validating/dispatcher.go``): a ``Warn``
action is ``warning.AddWarning`` on the request's context, whatever its verb (DELETE and deletecollection
included: the handlers write the recorded warnings on every answer); the namespace of a namespaced request
is read (``matcher.GetNamespace``: the lister, then a live GET) once a binding applies, and its error, a
404 for a namespace not stored, is returned as it is.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

from .test_admission_policy_admission import CONFIGMAP_RULE, CONFIGMAPS, binding, configmap, install, policy

WARNING = "299 - \"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': deleting {}\""


async def test_warn_on_delete_and_deletecollection_adds_the_warning_header(client: httpx.AsyncClient) -> None:
    await install(client, policy(rule=CONFIGMAP_RULE, validations=[{
        "expression": "request.operation != 'DELETE'", "messageExpression": "'deleting ' + oldObject.metadata.name"}]),
                  binding(validationActions=["Warn"]))
    for name in ("a", "b", "c"):
        assert (await client.post(CONFIGMAPS, json=configmap(name, {"k": "v"}))).status_code == 201
    deleted = await client.delete(f"{CONFIGMAPS}/a")
    assert deleted.status_code == 200, deleted.text
    assert deleted.headers.get_list("warning") == [WARNING.format("a")]
    collection = await client.delete(CONFIGMAPS)
    assert collection.status_code == 200, collection.text
    assert sorted(collection.headers.get_list("warning")) == [WARNING.format("b"), WARNING.format("c")]
    assert (await client.get(CONFIGMAPS)).json()["items"] == []


async def test_deny_on_delete_keeps_the_object(client: httpx.AsyncClient) -> None:
    await install(client, policy(rule=CONFIGMAP_RULE, validations=[{"expression": "request.operation != 'DELETE'",
                                                                   "reason": "Forbidden", "message": "kept"}]),
                  binding())
    assert (await client.post(CONFIGMAPS, json=configmap("a", {"k": "v"}))).status_code == 201
    refused = await client.delete(f"{CONFIGMAPS}/a")
    assert refused.status_code == 403, refused.text
    assert refused.json()["message"] == ('configmaps "a" is forbidden: ValidatingAdmissionPolicy \'p\' with binding '
                                         "'b' denied request: kept")
    assert (await client.get(f"{CONFIGMAPS}/a")).status_code == 200


@pytest.fixture
async def unguarded(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A server without NamespaceLifecycle: a write may name a namespace that is not stored."""
    store = await SqliteStore.open(tmp_path / "db")
    app = create_app(store=store, clock=FakeClock(), rng=random.Random(5),
                     disable_admission_plugins=(*ENVTEST_DISABLED_ADMISSION_PLUGINS, "NamespaceLifecycle"))
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://k") as client:
            yield client
    finally:
        await app.shutdown()
        await store.close()


async def test_a_namespace_not_stored_is_404_once_a_binding_applies(unguarded: httpx.AsyncClient) -> None:
    ghost = "/api/v1/namespaces/ghost/configmaps"
    before = await unguarded.post(ghost, json=configmap("early", {"k": "v"}, namespace="ghost"))
    assert before.status_code == 201, before.text  # no policy yet: nothing reads the namespace
    await install(unguarded, policy(rule=CONFIGMAP_RULE, validations=[{"expression": "namespaceObject != null"}]),
                  binding())
    r = await unguarded.post(ghost, json=configmap("late", {"k": "v"}, namespace="ghost"))
    assert r.status_code == 404, r.text
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": 'namespaces "ghost" not found', "reason": "NotFound",
                        "details": {"name": "ghost", "kind": "namespaces"}, "code": 404}
    assert (await unguarded.get(f"{ghost}/late")).status_code == 404
    # A binding that does not apply (its matchResources exclude the request) reads no namespace.
    await unguarded.patch("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/b",
                          json={"spec": {"matchResources": {"objectSelector": {"matchLabels": {"judged": "yes"}}}}},
                          headers={"content-type": "application/merge-patch+json"})
    assert (await unguarded.post(ghost, json=configmap("other", {"k": "v"}, namespace="ghost"))).status_code == 201
    # In a stored namespace the same policy allows the request.
    assert (await unguarded.post(CONFIGMAPS, json=configmap("home", {"k": "v"}, judged="yes"))).status_code == 201
