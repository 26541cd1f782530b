"""managedFields are recorded before mutating admission, as upstream 1.32 records them, over HTTP.

Upstream: apiserver ``handlers/create.go`` calls ``FieldManager.UpdateNoErrors`` and only then mutating
admission; ``update.go`` and ``patch.go`` do the same through ``objInfo.UpdatedObject``'s transformers
(field manager first, then admission); server-side apply computes ownership in ``applyPatcher`` before
``applyAdmission``. So decode-time defaults (``SetDefaults_*``) are the writer's, while what a mutating
plugin adds (DefaultTolerationSeconds' tolerations, Priority's ``spec.priority``/``preemptionPolicy``) is
nobody's, and another manager may apply those fields without a conflict. Admission is wrapped by
``fieldmanager.NewManagedFieldsValidatingAdmissionController`` (``handlers/fieldmanager/admission.go``):
managedFields a plugin leaves invalid are put back, with a warning.
"""

from __future__ import annotations

from typing import Any

import httpx
import yaml

from kubeloop.api import ResourceInfo
from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin

PODS = "/api/v1/namespaces/default/pods"
CM = "/api/v1/namespaces/default/configmaps"
APPLY = {"content-type": "application/apply-patch+yaml"}
MERGE = {"content-type": "application/merge-patch+json"}
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]
EXTRA_TOLERATION = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
INVALID = ('299 - ".metadata.managedFields was in an invalid state after admission; this could be caused by an '
           'outdated mutating admission controller; please fix your requests: ')


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}], **spec}}


def fields_of(obj: dict[str, Any], manager: str, operation: str = "Update") -> dict[str, Any]:
    entries = [e for e in obj["metadata"].get("managedFields", [])
               if e["manager"] == manager and e["operation"] == operation]
    assert len(entries) <= 1, entries
    return entries[0]["fieldsV1"] if entries else {}


def owners_of(obj: dict[str, Any], *path: str) -> list[str]:
    """The managers whose FieldsV1 holds ``path`` (``f:`` elements)."""
    owners = []
    for entry in obj["metadata"].get("managedFields", []):
        node: Any = entry["fieldsV1"]
        for element in path:
            node = node.get(element) if isinstance(node, dict) else None
        if node is not None:
            owners.append(entry["manager"])
    return owners


def apply_body(obj: dict[str, Any]) -> str:
    return yaml.safe_dump(obj)


async def test_a_pods_creator_owns_its_fields_and_the_defaults_not_what_admission_added(
        client: httpx.AsyncClient) -> None:
    r = await client.post(f"{PODS}?fieldManager=creator", json=pod("p"))
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["spec"]["tolerations"] == DEFAULT_TOLERATIONS
    assert created["spec"]["priority"] == 0 and created["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    spec = fields_of(created, "creator")["f:spec"]
    # Decode-time defaults (SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Container) are the creator's.
    for owned in ("f:restartPolicy", "f:dnsPolicy", "f:schedulerName", "f:terminationGracePeriodSeconds",
                  "f:enableServiceLinks", "f:securityContext"):
        assert owned in spec, owned
    assert spec["f:containers"]['k:{"name":"c"}']["f:imagePullPolicy"] == {}
    # DefaultTolerationSeconds and Priority ran after the field manager: nobody owns what they added.
    for added in ("f:tolerations", "f:priority", "f:preemptionPolicy"):
        assert added not in spec, added
        assert owners_of(created, "f:spec", added) == []
    assert (await client.get(f"{PODS}/p")).json()["metadata"]["managedFields"] == created["metadata"]["managedFields"]


async def test_another_manager_applies_the_admission_added_fields_without_a_conflict(client: httpx.AsyncClient) -> None:
    assert (await client.post(f"{PODS}?fieldManager=creator", json=pod("p"))).status_code == 201
    # A change of the (atomic) list: a conflict with its owner, if it had one (pod update validation lets a
    # toleration be added).
    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
              "spec": {"tolerations": [*DEFAULT_TOLERATIONS, EXTRA_TOLERATION]}}
    r = await client.patch(f"{PODS}/p?fieldManager=other", content=apply_body(config), headers=APPLY)
    assert r.status_code == 200, r.text
    applied = r.json()
    assert applied["spec"]["tolerations"] == [*DEFAULT_TOLERATIONS, EXTRA_TOLERATION]
    assert owners_of(applied, "f:spec", "f:tolerations") == ["other"]
    assert "f:restartPolicy" in fields_of(applied, "creator")["f:spec"]


async def test_a_namespaces_creator_owns_the_name_label_not_the_finalizer(client: httpx.AsyncClient) -> None:
    # SetDefaults_Namespace labels it at decode time; PrepareForCreate adds the ``kubernetes`` finalizer later.
    r = await client.post("/api/v1/namespaces?fieldManager=creator",
                          json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["spec"] == {"finalizers": ["kubernetes"]}
    assert fields_of(created, "creator") == {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}


async def test_a_put_without_the_admission_added_fields_leaves_them_to_nobody(client: httpx.AsyncClient) -> None:
    # The creator sent the default tolerations itself: it owns them, until a PUT leaves them out (the field
    # manager sees them removed; DefaultTolerationSeconds puts them back after it).
    r = await client.post(f"{PODS}?fieldManager=creator", json=pod("p", tolerations=DEFAULT_TOLERATIONS))
    assert r.status_code == 201, r.text
    assert owners_of(r.json(), "f:spec", "f:tolerations") == ["creator"]
    current = r.json()
    for field in ("tolerations", "priority", "preemptionPolicy"):
        del current["spec"][field]
    current["metadata"]["labels"] = {"edited": "yes"}
    r = await client.put(f"{PODS}/p?fieldManager=putter", json=current)
    assert r.status_code == 200, r.text
    updated = r.json()
    assert updated["spec"]["tolerations"] == DEFAULT_TOLERATIONS and updated["spec"]["priority"] == 0
    assert owners_of(updated, "f:spec", "f:tolerations") == []
    assert owners_of(updated, "f:spec", "f:priority") == []
    assert fields_of(updated, "putter") == {"f:metadata": {"f:labels": {".": {}, "f:edited": {}}}}
    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
              "spec": {"tolerations": [*DEFAULT_TOLERATIONS, EXTRA_TOLERATION]}}
    r = await client.patch(f"{PODS}/p?fieldManager=other", content=apply_body(config), headers=APPLY)
    assert r.status_code == 200, r.text  # the creator lost the list to the PUT: no conflict
    assert owners_of(r.json(), "f:spec", "f:tolerations") == ["other"]


class Stamp(MutatingPlugin):
    """Stamps every ConfigMap write with an annotation counting the writes it admitted."""

    def __init__(self) -> None:
        self.count = 0

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return resource.plural == "configmaps" and operation in ("CREATE", "UPDATE")

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        self.count += 1
        obj["metadata"].setdefault("annotations", {})["stamp"] = str(self.count)


async def test_update_patch_and_apply_do_not_own_what_a_plugin_changes(app: App, client: httpx.AsyncClient) -> None:
    app.admission.append(Stamp())
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    r = await client.post(f"{CM}?fieldManager=creator", json=cm)
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["annotations"] == {"stamp": "1"}
    assert fields_of(r.json(), "creator") == {"f:data": {".": {}, "f:a": {}}}
    current = r.json()
    current["data"]["b"] = "2"
    r = await client.put(f"{CM}/c?fieldManager=putter", json=current)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["annotations"] == {"stamp": "2"}
    assert fields_of(r.json(), "putter") == {"f:data": {"f:b": {}}}
    r = await client.patch(f"{CM}/c?fieldManager=patcher", json={"data": {"c": "3"}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["annotations"] == {"stamp": "3"}
    assert fields_of(r.json(), "patcher") == {"f:data": {"f:c": {}}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"d": "4"}}
    r = await client.patch(f"{CM}/c?fieldManager=applier", content=apply_body(config), headers=APPLY)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["annotations"] == {"stamp": "4"}
    assert fields_of(r.json(), "applier", "Apply") == {"f:data": {"f:d": {}}}
    assert owners_of(r.json(), "f:metadata", "f:annotations") == []
    # Nobody owns the stamp, so another manager applies it without a conflict.
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {"stamp": "mine"}}}
    r = await client.patch(f"{CM}/c?fieldManager=other", content=apply_body(config), headers=APPLY)
    assert r.status_code == 200, r.text
    assert owners_of(r.json(), "f:metadata", "f:annotations", "f:stamp") == ["other"]


class Garble(MutatingPlugin):
    """Replaces the managedFields of ConfigMaps named ``garbled-*`` with ``entries`` (an outdated plugin)."""

    def __init__(self, entries: Any) -> None:
        self.entries = entries

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return resource.plural == "configmaps"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        if obj["metadata"]["name"].startswith("garbled"):
            obj["metadata"]["managedFields"] = self.entries


def entry(**fields: Any) -> dict[str, Any]:
    base = {"manager": "plugin", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {}}}
    return {k: v for k, v in {**base, **fields}.items() if v is not None}


async def test_managed_fields_a_plugin_leaves_invalid_are_put_back_with_a_warning(
        app: App, client: httpx.AsyncClient) -> None:
    garble = Garble([entry(operation="Bogus")])
    app.admission.append(garble)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "garbled"}, "data": {"a": "1"}}
    r = await client.post(f"{CM}?fieldManager=creator", json=cm)
    assert r.status_code == 201, r.text
    assert r.headers.get_list("warning") == [INVALID + 'operation must be `Apply` or `Update`"']
    assert [e["manager"] for e in r.json()["metadata"]["managedFields"]] == ["creator"]
    assert fields_of(r.json(), "creator") == {"f:data": {".": {}, "f:a": {}}}
    # An update and a patch: the entries the field manager computed for them come back.
    garble.entries = [entry(fieldsType=None)]
    current = r.json()
    current["data"]["b"] = "2"
    r = await client.put(f"{CM}/garbled?fieldManager=putter", json=current)
    assert r.status_code == 200, r.text
    assert r.headers.get_list("warning") == [INVALID + 'missing fieldsType in managed fields entry 0"']
    assert [e["manager"] for e in r.json()["metadata"]["managedFields"]] == ["creator", "putter"]
    garble.entries = [entry(apiVersion="")]
    r = await client.patch(f"{CM}/garbled?fieldManager=patcher", json={"data": {"c": "3"}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert r.headers.get_list("warning") == [INVALID + 'apiVersion must not be empty"']
    assert fields_of(r.json(), "patcher") == {"f:data": {"f:c": {}}}
    garble.entries = [entry(fieldsType="FieldsV2")]
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "garbled"}, "data": {"d": "4"}}
    r = await client.patch(f"{CM}/garbled?fieldManager=applier", content=apply_body(config), headers=APPLY)
    assert r.status_code == 200, r.text
    assert r.headers.get_list("warning") == [INVALID + 'invalid fieldsType \\"FieldsV2\\" in managed fields entry 0"']
    assert fields_of(r.json(), "applier", "Apply") == {"f:data": {"f:d": {}}}
    stored = (await client.get(f"{CM}/garbled")).json()
    assert [e["manager"] for e in stored["metadata"]["managedFields"]] == ["applier", "creator", "patcher", "putter"]


async def test_managed_fields_a_plugin_leaves_valid_are_kept(app: App, client: httpx.AsyncClient) -> None:
    app.admission.append(Garble([entry()]))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "garbled"}, "data": {"a": "1"}}
    r = await client.post(f"{CM}?fieldManager=creator", json=cm)
    assert r.status_code == 201, r.text
    assert "warning" not in r.headers
    assert r.json()["metadata"]["managedFields"] == [entry()]


class AppendInPlace(MutatingPlugin):
    """Appends an entry whose FieldsV1 does not decode to the list the field manager wrote, in place."""

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return resource.plural == "configmaps"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        obj["metadata"]["managedFields"].append(entry(fieldsV1={"not-a-path": {}}))


async def test_an_entry_added_in_place_that_does_not_decode_is_dropped(app: App, client: httpx.AsyncClient) -> None:
    app.admission.append(AppendInPlace())
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    r = await client.post(f"{CM}?fieldManager=creator", json=cm)
    assert r.status_code == 201, r.text
    (text,) = r.headers.get_list("warning")
    assert text.startswith(INVALID + "error decoding versioned set from "), text
    assert [e["manager"] for e in r.json()["metadata"]["managedFields"]] == ["creator"]


class BreakEntryInPlace(MutatingPlugin):
    """On update, sets a field of the writer's one entry in place (the list and the entry stay the same objects)."""

    def __init__(self, key: str, value: Any) -> None:
        self.key, self.value = key, value

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return operation == "UPDATE" and resource.plural == "configmaps"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        (only,) = obj["metadata"]["managedFields"]
        only[self.key] = self.value


async def test_the_writers_one_entry_changed_in_place_on_update_is_still_checked(
        app: App, client: httpx.AsyncClient) -> None:
    # The update path skips the check for the field manager's one entry left as it was, only while the fields
    # the check reads are still valid (a plugin may change the very entry it was given).
    cases = (("operation", "Bogus", "operation must be `Apply` or `Update`"),
             ("apiVersion", "", "apiVersion must not be empty"),
             ("fieldsType", "FieldsV2", 'invalid fieldsType \\"FieldsV2\\" in managed fields entry 0'),
             (None, None, None))
    for i, (key, value, why) in enumerate(cases):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"a": "1"}}
        r = await client.post(f"{CM}?fieldManager=writer", json=cm)
        assert r.status_code == 201, r.text
        current = r.json()
        current["data"]["a"] = "2"
        plugin = BreakEntryInPlace(key, value) if key is not None else None
        if plugin is not None:
            app.admission.append(plugin)
        r = await client.put(f"{CM}/c{i}?fieldManager=writer", json=current)
        if plugin is not None:
            app.admission.remove(plugin)
        assert r.status_code == 200, r.text
        assert r.headers.get_list("warning") == ([INVALID + why + '"'] if why else []), key


async def test_a_creates_managed_fields_stay_last_in_metadata_as_object_metas_go_field_order(
    client: httpx.AsyncClient,
) -> None:
    # Recorded before the uid and creationTimestamp exist, the entry still comes after them and the
    # body's fields, as in Go's encoding of ObjectMeta (managedFields its last field, apimachinery
    # meta/v1 types.go); only the store's resourceVersion, written at commit, follows it.
    r = await client.post(f"{CM}?fieldManager=me", json={"metadata": {"name": "order", "labels": {"a": "b"}}})
    assert r.status_code == 201, r.text
    keys = [k for k in r.json()["metadata"] if k != "resourceVersion"]
    assert keys[-1] == "managedFields"
    assert keys.index("labels") < keys.index("uid") < keys.index("creationTimestamp") < keys.index("managedFields")
    r = await client.get(f"{CM}/order")
    assert [k for k in r.json()["metadata"] if k != "resourceVersion"][-1] == "managedFields"
