"""Admission runs in upstream's two phases: mutating plugins before the strategy and validation (so they
can fix what validation would refuse, and what they change is validated), validating plugins after
(they see the object as it will be stored); a plugin that declares no phase runs in the validating one.

Upstream: apiserver ``pkg/admission/interfaces.go`` (MutationInterface, ValidationInterface),
``endpoints/handlers/create.go`` and ``update.go`` (mutating admission in the handler, before
``r.Create``/``r.Update``), ``registry/generic/registry/store.go`` Create/Update (``rest.BeforeCreate``/
``BeforeUpdate``, then ``createValidation``/``updateValidation``), ``rest.AdmissionToValidateObjectDeleteFunc``
(DELETE: both phases against the stored object), ``plugin/namespace/lifecycle`` (``Admit`` only).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable
from typing import Any

import httpx

from kubeloop.api import Forbidden, ResourceInfo
from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin, ValidatingPlugin

CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = {"content-type": "application/merge-patch+json"}


class LabelFixer(MutatingPlugin):
    """Mutating: spaces in a ConfigMap's label values become dashes (a value with a space is invalid)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, Any]]] = []

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return operation in ("CREATE", "UPDATE") and resource.plural == "configmaps"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        self.seen.append((attributes.operation, attributes.name, copy.deepcopy(obj)))
        labels = obj["metadata"].get("labels") or {}
        for key, value in labels.items():
            labels[key] = value.replace(" ", "-")


class LabelBreaker(MutatingPlugin):
    """Mutating: gives every ConfigMap a label value validation refuses."""

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return operation in ("CREATE", "UPDATE") and resource.plural == "configmaps"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        obj["metadata"].setdefault("labels", {})["broken"] = "not a valid value!"


class Recorder(ValidatingPlugin):
    """Validating: records the object it is shown (a copy) and the attributes."""

    def __init__(self) -> None:
        self.seen: list[tuple[AdmissionAttributes, dict[str, Any]]] = []

    def validate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        if obj is not None:
            self.seen.append((attributes, copy.deepcopy(obj)))


class Both(MutatingPlugin, ValidatingPlugin):
    """Both phases, logging which ran and whether the object had a uid by then."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, bool]] = []

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return resource.plural == "configmaps"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> Awaitable[None] | None:
        self.log.append(("mutate", attributes.operation, _has_uid(obj if obj is not None else old)))
        return None

    def validate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> Awaitable[None] | None:
        return self._validate(attributes, obj if obj is not None else old)

    async def _validate(self, attributes: AdmissionAttributes, obj: Any) -> None:  # one that waits
        self.log.append(("validate", attributes.operation, _has_uid(obj)))


def _has_uid(obj: Any) -> bool:
    return bool(isinstance(obj, dict) and (obj.get("metadata") or {}).get("uid"))


async def test_a_mutating_plugin_fixes_what_validation_would_refuse(app: App, client: httpx.AsyncClient) -> None:
    body = {"metadata": {"name": "a", "labels": {"tier": "front end"}}}
    assert (await client.post(CM, json=body)).status_code == 422  # no plugin: refused by validation
    fixer = LabelFixer()
    app.admission.append(fixer)
    r = await client.post(CM, json=body)
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["labels"] == {"tier": "front-end"}
    # The plugin saw the decoded, defaulted body: not yet prepared (no uid, no creationTimestamp).
    operation, name, seen = fixer.seen[0]
    assert (operation, name) == ("CREATE", "a")
    assert "uid" not in seen["metadata"] and "creationTimestamp" not in seen["metadata"]
    # On update too: a PUT whose label is invalid is fixed before it is validated.
    current = r.json()
    current["metadata"]["labels"] = {"tier": "back end"}
    r = await client.put(f"{CM}/a", json=current)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["labels"] == {"tier": "back-end"}


async def test_what_a_mutating_plugin_changes_is_validated(app: App, client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json={"metadata": {"name": "before"}})).status_code == 201
    app.admission.append(LabelBreaker())
    for r in (await client.post(CM, json={"metadata": {"name": "a"}}),
              await client.patch(f"{CM}/before", json={"data": {"k": "v"}}, headers=MERGE)):
        assert r.status_code == 422, r.text
        status = r.json()
        assert status["reason"] == "Invalid"
        assert [c["field"] for c in status["details"]["causes"]] == ["metadata.labels"]
        assert "not a valid value!" in status["message"]
    app.admission.pop()
    assert (await client.get(f"{CM}/a")).status_code == 404
    assert (await client.get(f"{CM}/before")).json().get("data") is None


async def test_a_validating_plugin_sees_the_prepared_validated_object(app: App, client: httpx.AsyncClient) -> None:
    fixer, recorder = LabelFixer(), Recorder()
    app.admission.extend([recorder, fixer])  # chain order does not put a validating plugin first
    r = await client.post(CM, json={"metadata": {"generateName": "gen-", "labels": {"x": "a b"}}})
    assert r.status_code == 201, r.text
    created = r.json()
    (attrs, seen), = recorder.seen
    # Mutated (label fixed), prepared (uid, creationTimestamp, a generated name) and named so in its attributes.
    assert seen["metadata"]["labels"] == {"x": "a-b"}
    assert seen["metadata"]["uid"] == created["metadata"]["uid"]
    assert seen["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert seen["metadata"]["name"] == created["metadata"]["name"] and attrs.name == created["metadata"]["name"]
    assert attrs.name.startswith("gen-")
    # The mutating phase ran before the name was generated: it saw none.
    assert fixer.seen[0][1] == ""


async def test_a_validating_plugin_sees_an_update_after_the_strategy(app: App, client: httpx.AsyncClient) -> None:
    deployment = {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}
    created = (await client.post(DEPLOYMENTS, json=deployment)).json()
    recorder = Recorder()
    app.admission.append(recorder)
    changed = copy.deepcopy(created)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    changed["status"] = {"replicas": 99}
    r = await client.put(f"{DEPLOYMENTS}/d", json=changed)
    assert r.status_code == 200, r.text
    (attrs, seen), = recorder.seen
    assert attrs.operation == "UPDATE"
    assert seen["metadata"]["generation"] == 2  # PrepareForUpdate bumped it
    assert seen["status"] == created["status"]  # and kept the stored status
    assert seen["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"  # defaulted


async def test_a_plugin_that_declares_no_phase_runs_where_it_always_did(app: App, client: httpx.AsyncClient) -> None:
    """Backward compatible: a plain coroutine plugin runs in the validating phase, after validation."""
    seen: list[dict[str, Any]] = []

    async def legacy(attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        if obj is not None:
            seen.append(copy.deepcopy(obj))

    app.admission.append(legacy)
    assert (await client.post(CM, json={"metadata": {"name": "a", "labels": {"x": "a b"}}})).status_code == 422
    assert seen == []  # validation refused first
    r = await client.post(CM, json={"metadata": {"name": "a"}})
    assert r.status_code == 201, r.text
    assert seen[0]["metadata"]["uid"] == r.json()["metadata"]["uid"]


async def test_a_plugin_of_both_phases_runs_each_at_its_place(app: App, client: httpx.AsyncClient) -> None:
    both = Both()
    app.admission.append(both)
    assert (await client.post(CM, json={"metadata": {"name": "a"}})).status_code == 201
    assert (await client.patch(f"{CM}/a", json={"data": {"k": "v"}}, headers=MERGE)).status_code == 200
    assert (await client.delete(f"{CM}/a")).status_code == 200
    assert both.log == [
        ("mutate", "CREATE", False), ("validate", "CREATE", True),
        # An update's object keeps the stored uid from the start; DELETE runs both against the stored object.
        ("mutate", "UPDATE", True), ("validate", "UPDATE", True),
        ("mutate", "DELETE", True), ("validate", "DELETE", True),
    ]


async def test_a_mutating_refusal_comes_before_validation_and_the_optimistic_lock(
    app: App, client: httpx.AsyncClient
) -> None:
    invalid = {"metadata": {"name": "Not_Valid"}}
    # NamespaceLifecycle is mutating upstream (Admit only): a missing namespace is 404 before the 422.
    r = await client.post("/api/v1/namespaces/nowhere/configmaps", json=invalid)
    assert r.status_code == 404, r.text
    assert r.json()["message"] == 'namespaces "nowhere" not found'
    created = (await client.post(CM, json={"metadata": {"name": "a"}})).json()

    class Refuses(MutatingPlugin):
        def mutate(self, attributes: AdmissionAttributes, obj: Any, old: Any) -> None:
            raise Forbidden(f'configmaps "{attributes.name}" is forbidden: no')

    app.admission.append(Refuses())
    stale = copy.deepcopy(created)
    stale["metadata"]["resourceVersion"] = "1"
    r = await client.put(f"{CM}/a", json=stale)
    assert r.status_code == 403, r.text  # objInfo.UpdatedObject (mutating admission) before the rv check
    r = await client.post(CM, json=invalid)
    assert r.status_code == 403, r.text


async def test_a_pod_put_without_default_tolerations_is_validated_with_them(app: App, client: httpx.AsyncClient) -> None:
    """DefaultTolerationSeconds is mutating: it restores the defaults a PUT drops before ValidatePodUpdate
    compares the tolerations (removing one is forbidden)."""
    pods = "/api/v1/namespaces/default/pods"
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}
    created = (await client.post(pods, json=pod)).json()
    assert len(created["spec"]["tolerations"]) == 2
    sent = copy.deepcopy(created)
    del sent["spec"]["tolerations"]
    sent["metadata"]["labels"] = {"x": "y"}
    r = await client.put(f"{pods}/p", json=sent)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["tolerations"] == created["spec"]["tolerations"]


async def test_a_create_admitted_again_validates_the_mutating_phase_again(app: App, client: httpx.AsyncClient) -> None:
    """When the namespace changes before a create commits, both phases run again on the object as it stands,
    with validation between them: a mutating plugin's second change is validated too."""
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201

    class RelabelsNamespaceThenBreaks(MutatingPlugin):
        calls = 0

        def handles(self, operation: str, resource: ResourceInfo) -> bool:
            return operation == "CREATE" and resource.plural == "configmaps"

        async def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
            assert obj is not None
            self.calls += 1
            if self.calls == 1:  # the namespace changes between this admission and the commit
                r = await client.patch("/api/v1/namespaces/team", json={"metadata": {"labels": {"x": "y"}}},
                                       headers=MERGE)
                assert r.status_code == 200, r.text
            else:
                obj["metadata"]["labels"] = {"broken": "not valid!"}

    plugin = RelabelsNamespaceThenBreaks()
    app.admission.append(plugin)
    r = await client.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "a"}})
    assert r.status_code == 422, r.text
    assert plugin.calls == 2
    assert (await client.get("/api/v1/namespaces/team/configmaps/a")).status_code == 404
