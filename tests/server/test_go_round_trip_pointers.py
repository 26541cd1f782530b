"""Optional Go pointers and slices without ``omitempty`` read ``null`` when unset, and the structs added to the
value-zero table drop exactly their value zeros (k8s.io/api, apiextensions-apiserver, apimachinery 1.32).

``encoding/json`` writes a field without ``omitempty`` whatever its value: a nil ``*string`` or slice as
``null``. A value scalar with ``omitempty`` at its zero is omitted, a pointer's explicit zero kept. Each case
names the Go field and its JSON tag; the bytes are those a GET returns (what the storage holds).
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

NS = "/api/v1/namespaces/default"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def _created(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """The create's answer, and the bytes a GET of the object then returns."""
    r = await client.post(url, json=body)
    assert r.status_code == 201, r.text
    read = await client.get(f"{url}/{body['metadata']['name']}")
    assert read.status_code == 200, read.text
    return r.json(), read.content


async def test_grpc_service_reads_null_when_unset_and_an_empty_one_is_kept(client: httpx.AsyncClient) -> None:
    # core/v1 GRPCAction: Service *string `json:"service"` (no omitempty): nil is written as null, and an
    # explicit "" is a non-nil pointer, kept.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "livenessProbe": {"grpc": {"port": 80}},
                                    "readinessProbe": {"grpc": {"port": 81, "service": ""}}}]}}
    created, stored = await _created(client, f"{NS}/pods", pod)
    container = created["spec"]["containers"][0]
    assert container["livenessProbe"]["grpc"] == {"port": 80, "service": None}
    assert container["readinessProbe"]["grpc"] == {"port": 81, "service": ""}
    assert b'"grpc":{"port":80,"service":null}' in stored
    # A body's null is the same nil pointer.
    pod["metadata"]["name"] = "q"
    pod["spec"]["containers"][0]["livenessProbe"]["grpc"]["service"] = None
    _, stored = await _created(client, f"{NS}/pods", pod)
    assert b'"grpc":{"port":80,"service":null}' in stored


async def test_projected_sources_read_null_when_empty_or_unset(client: httpx.AsyncClient) -> None:
    # core/v1 ProjectedVolumeSource: Sources []VolumeProjection `json:"sources"` (no omitempty): an empty slice
    # is stored (protobuf) as nil and encoded as null; DefaultMode *int32 is defaulted to 420.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}],
                    "volumes": [{"name": "empty", "projected": {"sources": []}}, {"name": "unset", "projected": {}}]}}
    created, stored = await _created(client, f"{NS}/pods", pod)
    assert [v["projected"] for v in created["spec"]["volumes"]] == [
        {"sources": None, "defaultMode": 420}, {"sources": None, "defaultMode": 420}]
    assert orjson.loads(stored)["spec"]["volumes"] == created["spec"]["volumes"]


async def test_a_claims_data_source_api_group_reads_null_and_so_does_the_copied_reference(
    client: httpx.AsyncClient,
) -> None:
    # core/v1 TypedLocalObjectReference and TypedObjectReference: APIGroup *string `json:"apiGroup"`. The
    # claim strategy's NormalizeDataSources copies dataSource into dataSourceRef with the same nil APIGroup
    # (pkg/api/persistentvolumeclaim/util.go), in the struct's field order.
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                      "dataSource": {"kind": "PersistentVolumeClaim", "name": "origin"}}}
    created, stored = await _created(client, f"{NS}/persistentvolumeclaims", claim)
    expected = {"apiGroup": None, "kind": "PersistentVolumeClaim", "name": "origin"}
    assert created["spec"]["dataSource"] == expected and created["spec"]["dataSourceRef"] == expected
    assert b'"dataSourceRef":{"apiGroup":null,"kind":"PersistentVolumeClaim","name":"origin"}' in stored


async def test_an_azure_file_volumes_secret_namespace_reads_null(client: httpx.AsyncClient) -> None:
    # core/v1 AzureFilePersistentVolumeSource: SecretNamespace *string `json:"secretNamespace"`; ReadOnly bool
    # `json:"readOnly,omitempty"` (false dropped).
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                   "azureFile": {"secretName": "s", "shareName": "share", "readOnly": False}}}
    r = await client.post("/api/v1/persistentvolumes", json=pv)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["azureFile"] == {"secretName": "s", "shareName": "share", "secretNamespace": None}


async def test_a_pod_failure_policys_unset_requirements_read_null(client: httpx.AsyncClient) -> None:
    # batch/v1 PodFailurePolicyRule: OnExitCodes *PodFailurePolicyOnExitCodesRequirement `json:"onExitCodes"`,
    # OnPodConditions []PodFailurePolicyOnPodConditionsPattern `json:"onPodConditions"`;
    # PodFailurePolicyOnExitCodesRequirement: ContainerName *string `json:"containerName"` (none omitempty).
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"podFailurePolicy": {"rules": [
               {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
               {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
               "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}
    created, stored = await _created(client, "/apis/batch/v1/namespaces/default/jobs", job)
    exit_codes, conditions = created["spec"]["podFailurePolicy"]["rules"]
    assert exit_codes["onExitCodes"]["containerName"] is None and exit_codes["onPodConditions"] is None
    assert conditions["onExitCodes"] is None
    assert orjson.loads(stored)["spec"]["podFailurePolicy"] == created["spec"]["podFailurePolicy"]


async def test_a_node_images_empty_names_read_null_and_a_zero_size_is_dropped(client: httpx.AsyncClient) -> None:
    # core/v1 ContainerImage: Names []string `json:"names"` (no omitempty), SizeBytes int64
    # `json:"sizeBytes,omitempty"`. Nodes keep the status they are created with (node strategy).
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"images": [{"names": [], "sizeBytes": 0}, {"names": ["nginx:1.25"], "sizeBytes": 5}]}}
    created, stored = await _created(client, "/api/v1/nodes", node)
    assert created["status"]["images"] == [{"names": None}, {"names": ["nginx:1.25"], "sizeBytes": 5}]
    assert b'"images":[{"names":null},' in stored


async def test_a_leases_zeros_are_all_pointers_and_kept(client: httpx.AsyncClient) -> None:
    # coordination/v1 LeaseSpec: HolderIdentity *string, LeaseDurationSeconds, LeaseTransitions *int32,
    # Strategy *CoordinatedLeaseStrategy, PreferredHolder *string: every explicit zero is a non-nil pointer.
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
             "spec": {"holderIdentity": "", "leaseDurationSeconds": 0, "leaseTransitions": 0}}
    created, _ = await _created(client, "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease)
    assert created["spec"] == lease["spec"]


async def test_a_meta_conditions_zero_observed_generation_is_dropped_and_empty_texts_written(
    client: httpx.AsyncClient,
) -> None:
    # apimachinery meta/v1 Condition: ObservedGeneration int64 `json:"observedGeneration,omitempty"`; Reason
    # and Message string without omitempty (written even when ""). PodDisruptionBudgetStatus holds them.
    url = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}}}
    created, _ = await _created(client, url, pdb)
    created["status"]["conditions"] = [{"type": "DisruptionAllowed", "status": "False", "observedGeneration": 0,
                                        "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "", "message": ""}]
    r = await client.put(f"{url}/b/status", json=created)
    assert r.status_code == 200, r.text
    (condition,) = r.json()["status"]["conditions"]
    assert condition == {"type": "DisruptionAllowed", "status": "False",
                         "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "", "message": ""}


def _crd(**version: Any) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "preserveUnknownFields": False,
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "deprecated": False, **version}]}}


async def test_a_crds_value_zeros_are_dropped_and_its_pointer_zeros_kept(client: httpx.AsyncClient) -> None:
    # apiextensions/v1 types.go: CustomResourceDefinitionSpec PreserveUnknownFields bool, ...Version Deprecated
    # bool, CustomResourceColumnDefinition Priority int32 / Description, Format string (all omitempty);
    # types_jsonschema.go JSONSchemaProps: Description, Type, Pattern string, Nullable, UniqueItems,
    # XEmbeddedResource, XIntOrString bool (omitempty values), MinLength *int64 and
    # XPreserveUnknownFields *bool (pointers); ValidationRule Message, FieldPath string (omitempty).
    spec = {"type": "object", "description": "", "nullable": False, "x-kubernetes-embedded-resource": False,
            "x-kubernetes-int-or-string": False,
            "properties": {"name": {"type": "string", "pattern": "", "uniqueItems": False, "minLength": 0,
                                    "x-kubernetes-validations": [{"rule": "self.size() < 10", "message": "",
                                                                  "fieldPath": ""}]}}}
    crd = _crd(additionalPrinterColumns=[{"name": "N", "type": "string", "jsonPath": ".spec.name", "priority": 0,
                                          "description": "", "format": ""}],
               schema={"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                           "properties": {"spec": spec}}})
    created, stored = await _created(client, CRDS, crd)
    assert "preserveUnknownFields" not in created["spec"]
    (version,) = created["spec"]["versions"]
    assert "deprecated" not in version
    assert version["additionalPrinterColumns"] == [{"name": "N", "type": "string", "jsonPath": ".spec.name"}]
    schema = version["schema"]["openAPIV3Schema"]
    assert schema["x-kubernetes-preserve-unknown-fields"] is True
    assert schema["properties"]["spec"] == {"type": "object", "properties": {"name": {
        "type": "string", "minLength": 0, "x-kubernetes-validations": [{"rule": "self.size() < 10"}]}}}
    assert orjson.loads(stored)["spec"] == created["spec"]


async def test_a_crds_status_conditions_read_null_on_create(client: httpx.AsyncClient) -> None:
    # apiextensions/v1 CustomResourceDefinitionStatus: Conditions []CustomResourceDefinitionCondition
    # `json:"conditions"` (no omitempty); PrepareForCreate sets a zero status with the storage version
    # (apiextensions-apiserver pkg/registry/customresourcedefinition/strategy.go). AcceptedNames is a value
    # struct whose Plural and Kind are written.
    crd = _crd(schema={"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}})
    r = await client.post(CRDS, json=crd)
    assert r.status_code == 201, r.text
    assert r.json()["status"] == {"conditions": None, "acceptedNames": {"plural": "", "kind": ""},
                                  "storedVersions": ["v1"]}
    assert b'"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":["v1"]}' in r.content


async def test_an_empty_ca_bundle_is_dropped_and_an_explicit_validation_pointer_zero_kept(
    client: httpx.AsyncClient,
) -> None:
    # apiextensions/v1 WebhookClientConfig: CABundle []byte `json:"caBundle,omitempty"`: "" decodes to an empty
    # slice, which omitempty drops. ServiceReference Port *int32 keeps its value.
    crd = _crd(schema={"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}})
    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"caBundle": "", "service": {"namespace": "default", "name": "conv", "port": 8443}}}}
    created, stored = await _created(client, CRDS, crd)
    config = created["spec"]["conversion"]["webhook"]["clientConfig"]
    assert config == {"service": {"namespace": "default", "name": "conv", "port": 8443}}
    assert b'"caBundle"' not in stored
    # ValidationRule OptionalOldSelf *bool: an explicit false is a non-nil pointer, which validation refuses
    # without oldSelf in the rule (as upstream's ValidateCustomResourceDefinitionOpenAPISchema does).
    bad = _crd(schema={"openAPIV3Schema": {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.size() < 10", "optionalOldSelf": False}]}})
    bad["metadata"]["name"] = "gadgets.example.com"
    bad["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    r = await client.post(CRDS, json=bad)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["message"] == (
        "Invalid value: false: may not be set if oldSelf is not used in rule")


async def test_schemas_under_items_and_additional_properties_drop_zeros_and_unknown_fields_silently(
    client: httpx.AsyncClient,
) -> None:
    # apiextensions/v1 marshal.go: JSONSchemaPropsOrArray (items) and JSONSchemaPropsOrBool
    # (additionalProperties) decode their schema with their own UnmarshalJSON through apimachinery's util/json,
    # which is not strict: an unknown field in there is dropped without a warning or a strict-decoding error,
    # and the JSONSchemaProps value zeros (Nullable bool, Description string, omitempty) are dropped as anywhere.
    spec = {"type": "object", "properties": {
        "list": {"type": "array", "items": {"type": "string", "nullable": False, "description": "", "typo": 1}},
        "map": {"type": "object", "additionalProperties": {"type": "integer", "uniqueItems": False,
                                                           "maxLength": 0}},
        "open": {"type": "object", "additionalProperties": True}}}
    crd = _crd(schema={"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}})
    r = await client.post(f"{CRDS}?fieldValidation=Strict", json=crd)
    assert r.status_code == 201, r.text
    assert "warning" not in r.headers
    props = r.json()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert props["list"]["items"] == {"type": "string"}
    assert props["map"]["additionalProperties"] == {"type": "integer", "maxLength": 0}  # MaxLength *int64
    assert props["open"]["additionalProperties"] is True
    read = (await client.get(f"{CRDS}/widgets.example.com")).json()
    assert read["spec"] == r.json()["spec"]


async def test_a_null_int_or_string_is_a_nil_pointer_or_a_zero_value(client: httpx.AsyncClient) -> None:
    # A null into *intstr.IntOrString leaves the pointer nil (encoding/json literalStore): policy/v1
    # PodDisruptionBudgetSpec MinAvailable/MaxUnavailable and apps/v1 RollingUpdateStatefulSetStrategy
    # MaxUnavailable are then absent, RollingUpdateDeployment MaxSurge is defaulted (SetDefaults_Deployment:
    # 25%). A null into a value IntOrString reaches its UnmarshalJSON, which leaves Type Int, IntVal 0
    # (util/intstr/intstr.go): core/v1 ServicePort TargetPort is then defaulted to the port
    # (SetDefaults_Service), HTTPGetAction Port fails validation as 0.
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"},
           "spec": {"minAvailable": None, "maxUnavailable": None, "selector": {"matchLabels": {"app": "a"}}}}
    created, _ = await _created(client, "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)
    assert created["spec"] == {"selector": {"matchLabels": {"app": "a"}}}
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
           "spec": {"serviceName": "s", "selector": {"matchLabels": {"app": "a"}}, "template": template,
                    "updateStrategy": {"type": "RollingUpdate",
                                       "rollingUpdate": {"partition": 0, "maxUnavailable": None}}}}
    created, _ = await _created(client, "/apis/apps/v1/namespaces/default/statefulsets", sts)
    assert created["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template,
                       "strategy": {"rollingUpdate": {"maxSurge": None, "maxUnavailable": 1}}}}
    created, _ = await _created(client, "/apis/apps/v1/namespaces/default/deployments", deploy)
    assert created["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": "25%"}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
               "spec": {"selector": {"app": "a"}, "ports": [{"port": 80, "targetPort": None}]}}
    created, _ = await _created(client, f"{NS}/services", service)
    assert created["spec"]["ports"][0]["targetPort"] == 80
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
           "spec": {"containers": [{"name": "c", "image": "i", "readinessProbe": {"httpGet": {"port": None}}}]}}
    r = await client.post(f"{NS}/pods", json=pod)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "message": "Invalid value: 0: must be between 1 and 65535, inclusive",
        "field": "spec.containers[0].readinessProbe.httpGet.port"}]
