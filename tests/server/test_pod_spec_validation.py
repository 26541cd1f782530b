"""Pods and pod templates with bad containers or volumes are refused with upstream's 422 causes.

Upstream: k/k ``pkg/apis/core/validation/validation.go`` (``ValidatePodSpec`` → ``ValidateVolumes`` /
``validateVolumeSource``, ``validateContainers`` / ``validateInitContainers`` /
``validateEphemeralContainers`` / ``validateContainerCommon``, ``validateContainerPorts``, ``ValidateEnv``,
``ValidateEnvFrom``, ``ValidateVolumeMounts``, ``ValidateVolumeDevices``, ``validatePullPolicy``,
``ValidateContainerResourceRequirements``, ``validateRestartPolicy``, ``validateDNSPolicy``;
``ValidatePodCreate``, ``ValidatePodTemplateSpec``) and ``pkg/apis/apps/validation/validation.go``
(``ValidatePodTemplateSpecForReplicaSet``, ``ValidatePodTemplateSpecForStatefulSet``).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"
LABEL_REGEX = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
               "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
               "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def app(**fields: Any) -> dict[str, Any]:
    return {"name": "app", "image": "nginx:1.25", **fields}


def pod(*containers: dict[str, Any], name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": list(containers) or [app()], **spec}}


async def refused(client: httpx.AsyncClient, body: dict[str, Any], path: str = PODS) -> list[tuple[str, str, str]]:
    """POST ``body``: a 422 whose causes come back as (reason, field, message); nothing is stored."""
    r = await client.post(path, json=body)
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["kind"], status["status"], status["reason"], status["code"]) == ("Status", "Failure", "Invalid", 422)
    assert status["details"]["kind"] == body["kind"]
    assert (await client.get(f"{path}/{body['metadata']['name']}")).status_code == 404
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


# -- volumes -------------------------------------------------------------------------------------------


async def test_volumes_need_a_label_name_once_and_exactly_one_source(client: httpx.AsyncClient) -> None:
    volumes = [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}},
               {"name": "both", "emptyDir": {}, "configMap": {"name": "cm"}, "secret": {"secretName": "s"}},
               {"name": "none"}, {"name": "Bad_Name", "emptyDir": {}}, {"emptyDir": {}}]
    assert await refused(client, pod(volumes=volumes)) == [
        ("FieldValueDuplicate", "spec.volumes[1].name", 'Duplicate value: "data"'),
        # validateVolumeSource counts sources in its own order: secret before configMap.
        ("FieldValueForbidden", "spec.volumes[2].secret", "Forbidden: may not specify more than 1 volume type"),
        ("FieldValueForbidden", "spec.volumes[2].configMap", "Forbidden: may not specify more than 1 volume type"),
        # volumes[3] names no source: SetDefaults_Volume made it an emptyDir as the body was decoded, so
        # validateVolumeSource's "must specify a volume type" is never reached through the API.
        ("FieldValueInvalid", "spec.volumes[4].name", f'Invalid value: "Bad_Name": {LABEL_REGEX}'),
        ("FieldValueRequired", "spec.volumes[5].name", "Required value"),
    ]


async def test_a_volume_is_defaulted_as_upstreams_decoder_defaults_it(client: httpx.AsyncClient) -> None:
    # k/k pkg/apis/core/v1/defaults.go: SetDefaults_Volume (no source: emptyDir), DefaultMode 0644 of
    # secret, configMap, downwardAPI and projected sources, ExpirationSeconds 3600 of a projected
    # service account token, HostPathUnset, and the iSCSI/RBD/AzureDisk/ScaleIO source defaults.
    volumes = [
        {"name": "none"},
        {"name": "cm", "configMap": {"name": "c"}},
        {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "dapi", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
        {"name": "host", "hostPath": {"path": "/data"}},
        {"name": "rbd", "rbd": {"monitors": ["m:6789"], "image": "i"}},
    ]
    # A projected token needs a service account (validatePodMetadataAndSpec; no ServiceAccount admission here).
    body = pod(volumes=volumes, serviceAccountName="default")
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "none", "mountPath": "/x"}]
    r = await client.post(PODS, json=body)
    assert r.status_code == 201, r.text
    got = {v["name"]: v for v in r.json()["spec"]["volumes"]}
    assert got["none"] == {"name": "none", "emptyDir": {}}
    assert got["cm"]["configMap"] == {"name": "c", "defaultMode": 420}
    assert got["sec"]["secret"] == {"secretName": "s", "defaultMode": 256}  # a mode sent stays
    assert got["dapi"]["downwardAPI"]["defaultMode"] == 420
    assert got["dapi"]["downwardAPI"]["items"][0]["fieldRef"] == {"fieldPath": "metadata.name", "apiVersion": "v1"}
    assert got["proj"]["projected"] == {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}],
                                        "defaultMode": 420}
    assert got["host"]["hostPath"] == {"path": "/data", "type": ""}
    assert got["rbd"]["rbd"] == {"monitors": ["m:6789"], "image": "i", "pool": "rbd", "user": "admin",
                                 "keyring": "/etc/ceph/keyring"}
    # A Deployment's template is defaulted alike, and the writer owns what the defaults added.
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
               "metadata": {"labels": {"a": "b"}},
               "spec": {"containers": [{"name": "c", "image": "nginx"}], "volumes": [{"name": "cm", "configMap": {"name": "c"}}]}}}}
    r = await client.post(DEPLOYMENTS, json=dep)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["template"]["spec"]["volumes"] == [{"name": "cm", "configMap": {"name": "c", "defaultMode": 420}}]
    assert '"f:defaultMode"' in json.dumps(r.json()["metadata"]["managedFields"])


async def test_volume_sources_are_checked_with_upstreams_paths(client: httpx.AsyncClient) -> None:
    volumes = [
        {"name": "a", "hostPath": {"path": "/var/../etc", "type": "Folder"}},
        {"name": "b", "configMap": {"defaultMode": 512, "items": [{"key": "k", "path": "/abs"}]}},
        {"name": "c", "secret": {"items": [{"path": "..x"}]}},
        {"name": "d", "persistentVolumeClaim": {}},
        {"name": "e", "downwardAPI": {"items": [{"path": "f", "fieldRef": {"fieldPath": "spec.nodeName"}}]}},
        {"name": "f", "projected": {"sources": [{"configMap": {"name": "x", "items": [{"key": "k", "path": "p"}]},
                                                 "secret": {"name": "y"}},
                                                {"secret": {"name": "z", "items": [{"key": "k", "path": "p"}]}}]}},
        # downwardAPI as a second source is refused at upstream's misspelt key.
        {"name": "g", "emptyDir": {}, "downwardAPI": {}},
    ]
    assert await refused(client, pod(volumes=volumes)) == [
        ("FieldValueInvalid", "spec.volumes[0].hostPath.path", "Invalid value: \"/var/../etc\": must not contain '..'"),
        ("FieldValueNotSupported", "spec.volumes[0].hostPath.type", 'Unsupported value: "Folder": supported values: '
         '"", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"'),
        ("FieldValueRequired", "spec.volumes[1].configMap.name", "Required value"),
        ("FieldValueInvalid", "spec.volumes[1].configMap.defaultMode",
         "Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive"),
        ("FieldValueInvalid", "spec.volumes[1].configMap.items[0].path", 'Invalid value: "/abs": must be a relative path'),
        ("FieldValueRequired", "spec.volumes[2].secret.secretName", "Required value"),
        ("FieldValueRequired", "spec.volumes[2].secret.items[0].key", "Required value"),
        ("FieldValueInvalid", "spec.volumes[2].secret.items[0].path", "Invalid value: \"..x\": must not start with '..'"),
        ("FieldValueRequired", "spec.volumes[3].persistentVolumeClaim.claimName", "Required value"),
        ("FieldValueNotSupported", "spec.volumes[4].downwardAPI.fieldRef.fieldPath", 'Unsupported value: "spec.nodeName": '
         'supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"'),
        ("FieldValueForbidden", "spec.volumes[5].projected.sources[0]",
         "Forbidden: may not specify more than 1 volume type per source"),
        ("FieldValueInvalid", "spec.volumes[5].projected", 'Invalid value: "z": conflicting duplicate paths'),
        ("FieldValueForbidden", "spec.volumes[6].downwarAPI", "Forbidden: may not specify more than 1 volume type"),
    ]


# -- containers ----------------------------------------------------------------------------------------


async def test_containers_need_a_name_an_image_and_names_unique_across_kinds(client: httpx.AsyncClient) -> None:
    body = pod({"name": "app"}, app(), {"image": "nginx", "restartPolicy": "Always"},
               initContainers=[app(), {"name": "init", "image": "busybox", "restartPolicy": "OnFailure",
                                       "readinessProbe": {"exec": {"command": ["true"]}}}])
    assert await refused(client, body) == [
        ("FieldValueRequired", "spec.containers[0].image", "Required value"),
        ("FieldValueDuplicate", "spec.containers[1].name", 'Duplicate value: "app"'),
        ("FieldValueRequired", "spec.containers[2].name", "Required value"),
        ("FieldValueForbidden", "spec.containers[2].restartPolicy", "Forbidden: may not be set for non-init containers"),
        ("FieldValueDuplicate", "spec.initContainers[0].name", 'Duplicate value: "app"'),
        ("FieldValueNotSupported", "spec.initContainers[1].restartPolicy",
         'Unsupported value: "OnFailure": supported values: "Always"'),
        ("FieldValueForbidden", "spec.initContainers[1].readinessProbe",
         "Forbidden: may not be set for init containers without restartPolicy=Always"),
    ]
    r = await client.post(PODS, json={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}, "spec": {}})
    assert r.status_code == 422
    assert r.json()["message"] == 'Pod "empty" is invalid: spec.containers: Required value'


async def test_enumerated_fields_take_only_upstreams_values(client: httpx.AsyncClient) -> None:
    body = pod(app(imagePullPolicy="Sometimes", terminationMessagePolicy="Stdout"), restartPolicy="Sometimes",
               dnsPolicy="Google")
    assert await refused(client, body) == [
        ("FieldValueNotSupported", "spec.containers[0].terminationMessagePolicy",
         'Unsupported value: "Stdout": supported values: "File", "FallbackToLogsOnError"'),
        ("FieldValueNotSupported", "spec.containers[0].imagePullPolicy",
         'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"'),
        ("FieldValueNotSupported", "spec.restartPolicy",
         'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
        ("FieldValueNotSupported", "spec.dnsPolicy", 'Unsupported value: "Google": supported values: '
         '"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"'),
    ]


async def test_empty_defaulted_fields_are_defaulted_not_required(client: httpx.AsyncClient) -> None:
    # SetDefaults_*: a Go string's "" is unset, so defaulting fills it before validation looks.
    body = pod(app(imagePullPolicy="", terminationMessagePolicy="", ports=[{"containerPort": 80, "protocol": ""}]),
               restartPolicy="", dnsPolicy="")
    r = await client.post(PODS, json=body)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    container = spec["containers"][0]
    assert (container["imagePullPolicy"], container["terminationMessagePolicy"], container["ports"][0]["protocol"]) == (
        "IfNotPresent", "File", "TCP")
    assert (spec["restartPolicy"], spec["dnsPolicy"]) == ("Always", "ClusterFirst")


async def test_ports_are_checked_and_host_ports_unique(client: httpx.AsyncClient) -> None:
    ports = [{"name": "HTTP", "containerPort": 80}, {"name": "web", "containerPort": 0, "protocol": "HTTP"},
             {"name": "web", "containerPort": 70000, "hostPort": 8080}]
    body = pod(app(ports=ports), {"name": "side", "image": "busybox", "ports": [{"containerPort": 1, "hostPort": 8080}]})
    assert await refused(client, body) == [
        ("FieldValueInvalid", "spec.containers[0].ports[0].name",
         'Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'),
        ("FieldValueInvalid", "spec.containers[0].ports[0].name", 'Invalid value: "HTTP": must contain at least one letter (a-z)'),
        ("FieldValueRequired", "spec.containers[0].ports[1].containerPort", "Required value"),
        ("FieldValueNotSupported", "spec.containers[0].ports[1].protocol",
         'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'),
        ("FieldValueDuplicate", "spec.containers[0].ports[2].name", 'Duplicate value: "web"'),
        ("FieldValueInvalid", "spec.containers[0].ports[2].containerPort",
         "Invalid value: 70000: must be between 1 and 65535, inclusive"),
        ("FieldValueDuplicate", "spec.containers[1].ports[0].hostPort", 'Duplicate value: "TCP//8080"'),
    ]


async def test_host_network_pods_get_host_ports_and_a_different_one_is_invalid(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS, json=pod(app(ports=[{"containerPort": 80}]), hostNetwork=True))
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["containers"][0]["ports"][0]["hostPort"] == 80  # SetDefaults_Pod
    assert await refused(client, pod(app(ports=[{"containerPort": 80, "hostPort": 81}]), name="q", hostNetwork=True)) == [
        ("FieldValueInvalid", "spec.containers[0].ports[0].hostPort",
         "Invalid value: 81: must match `containerPort` when `hostNetwork` is true")]


async def test_env_names_and_value_sources(client: httpx.AsyncClient) -> None:
    env = [{"name": "A=B", "value": "x"}, {"value": "x"},
           {"name": "NONE", "valueFrom": {}},
           {"name": "TWO", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"},
                                         "secretKeyRef": {"name": "s", "key": "k"}}},
           {"name": "BOTH", "value": "x", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
           {"name": "REF", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}},
           {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a/b"}}}]
    env_from = [{"prefix": "P="}, {"configMapRef": {"name": "cm"}, "secretRef": {"name": "s"}}]
    assert await refused(client, pod(app(env=env, envFrom=env_from))) == [
        ("FieldValueInvalid", "spec.containers[0].env[0].name", 'Invalid value: "A=B": a valid environment variable '
         "name must consist only of printable ASCII characters other than '='"),
        ("FieldValueRequired", "spec.containers[0].env[1].name", "Required value"),
        ("FieldValueInvalid", "spec.containers[0].env[2].valueFrom", 'Invalid value: "": must specify one of: '
         "`fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"),
        ("FieldValueInvalid", "spec.containers[0].env[3].valueFrom",
         'Invalid value: "": may not have more than one field specified at a time'),
        ("FieldValueInvalid", "spec.containers[0].env[4].valueFrom",
         'Invalid value: "": may not be specified when `value` is not empty'),
        ("FieldValueNotSupported", "spec.containers[0].env[5].valueFrom.fieldRef.fieldPath",
         'Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", "metadata.uid", '
         '"spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"'),
        ("FieldValueInvalid", "spec.containers[0].env[6].valueFrom.configMapKeyRef.key",
         "Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
         "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"),
        ("FieldValueInvalid", "spec.containers[0].envFrom[0].prefix", 'Invalid value: "P=": a valid environment variable '
         "name must consist only of printable ASCII characters other than '='"),
        # ValidateEnvFrom reports the source count at the list, not the item.
        ("FieldValueInvalid", "spec.containers[0].envFrom",
         'Invalid value: "": must specify one of: `configMapRef` or `secretRef`'),
        ("FieldValueInvalid", "spec.containers[0].envFrom",
         'Invalid value: "": may not have more than one field specified at a time'),
    ]


async def test_volume_mounts_and_devices_name_existing_volumes(client: httpx.AsyncClient) -> None:
    volumes = [{"name": "data", "emptyDir": {}}, {"name": "claim", "persistentVolumeClaim": {"claimName": "c"}},
               {"name": "scratch", "emptyDir": {}}]
    mounts = [{"name": "data", "mountPath": "/data", "subPath": "../up"}, {"name": "missing", "mountPath": "/data"},
              {"name": "data", "mountPath": "/x", "mountPropagation": "Bidirectional"}]
    devices = [{"name": "scratch", "devicePath": "/dev/x"}, {"name": "claim", "devicePath": "/x"}]
    assert await refused(client, pod(app(volumeMounts=mounts, volumeDevices=devices), volumes=volumes)) == [
        # ValidateVolumeMounts names subPath and mountPropagation errors without the mount's index.
        ("FieldValueInvalid", "spec.containers[0].volumeMounts.subPath", "Invalid value: \"../up\": must not contain '..'"),
        ("FieldValueNotFound", "spec.containers[0].volumeMounts[1].name", 'Not found: "missing"'),
        ("FieldValueInvalid", "spec.containers[0].volumeMounts[1].mountPath", 'Invalid value: "/data": must be unique'),
        ("FieldValueInvalid", "spec.containers[0].volumeMounts[2].mountPath",
         'Invalid value: "/x": must not already exist as a path in volumeDevices'),
        ("FieldValueForbidden", "spec.containers[0].volumeMounts.mountPropagation",
         "Forbidden: Bidirectional mount propagation is available only to privileged containers"),
        ("FieldValueInvalid", "spec.containers[0].volumeDevices[0].name", 'Invalid value: "scratch": can only use volume '
         "source type of PersistentVolumeClaim or Ephemeral for block mode"),
        ("FieldValueInvalid", "spec.containers[0].volumeDevices[1].devicePath",
         'Invalid value: "/x": must not already exist as a path in volumeMounts'),
    ]


async def test_a_mount_of_a_volume_with_an_error_is_not_found_too(client: httpx.AsyncClient) -> None:
    body = pod(app(volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]), volumes=[{"name": "cfg", "configMap": {}}])
    assert await refused(client, body) == [
        ("FieldValueRequired", "spec.volumes[0].configMap.name", "Required value"),
        ("FieldValueNotFound", "spec.containers[0].volumeMounts[0].name", 'Not found: "cfg"'),
    ]


async def test_requests_stay_within_limits(client: httpx.AsyncClient) -> None:
    resources = {"requests": {"cpu": "2", "example.com/gpu": "1", "gpu": "1"}, "limits": {"cpu": "500m", "memory": "-1"}}
    assert await refused(client, pod(app(resources=resources))) == [
        ("FieldValueInvalid", "spec.containers[0].resources.limits[memory]",
         'Invalid value: "-1": must be greater than or equal to 0'),
        ("FieldValueInvalid", "spec.containers[0].resources.requests",
         'Invalid value: "2": must be less than or equal to cpu limit of 500m'),
        # Extended resources are not overcommitable: a request needs an equal limit.
        ("FieldValueRequired", "spec.containers[0].resources.limits",
         "Required value: Limit must be set for non overcommitable resources"),
        ("FieldValueInvalid", "spec.containers[0].resources.requests[gpu]",
         'Invalid value: "gpu": must be a standard resource type or fully qualified'),
        ("FieldValueInvalid", "spec.containers[0].resources.requests[gpu]",
         'Invalid value: "gpu": must be a standard resource for containers'),
        # SetDefaults_Pod copied the limit into the requests before validation.
        ("FieldValueInvalid", "spec.containers[0].resources.requests[memory]",
         'Invalid value: "-1": must be greater than or equal to 0'),
    ]


async def test_ephemeral_containers_cannot_be_set_on_create(client: httpx.AsyncClient) -> None:
    debug = {"name": "app", "image": "busybox", "targetContainerName": "ghost", "ports": [{"containerPort": 80}]}
    assert await refused(client, pod(ephemeralContainers=[debug])) == [
        ("FieldValueDuplicate", "spec.ephemeralContainers[0].name", 'Duplicate value: "app"'),
        ("FieldValueNotFound", "spec.ephemeralContainers[0].targetContainerName", 'Not found: "ghost"'),
        ("FieldValueForbidden", "spec.ephemeralContainers[0].ports", "Forbidden: cannot be set for an Ephemeral Container"),
        ("FieldValueForbidden", "spec.ephemeralContainers", "Forbidden: cannot be set on create"),
    ]


async def test_an_update_is_validated_like_a_create(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS, json=pod())
    assert r.status_code == 201
    stored = r.json()
    stored["spec"]["containers"][0]["image"] = " nginx:1.27"
    r = await client.put(f"{PODS}/p", json=stored)
    assert r.status_code == 422
    # validateContainersOnlyForPod, then ValidateContainerUpdates: the same cause twice, named once.
    assert [c["field"] for c in r.json()["details"]["causes"]] == ["spec.containers[0].image"] * 2
    assert r.json()["message"] == ('Pod "p" is invalid: spec.containers[0].image: Invalid value: " nginx:1.27": '
                                   "must not have leading or trailing whitespace")


# -- pod templates -------------------------------------------------------------------------------------


def deployment(template_spec: dict[str, Any], name: str = "d") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}}, "spec": template_spec}}}


async def test_a_deployment_template_is_a_pod_spec_that_always_restarts(client: httpx.AsyncClient) -> None:
    spec = {"containers": [app(volumeMounts=[{"name": "data", "mountPath": "/d"}]), {"name": "app", "image": ""}],
            "restartPolicy": "Never", "activeDeadlineSeconds": 30, "ephemeralContainers": [{"name": "dbg", "image": "x"}]}
    assert await refused(client, deployment(spec), DEPLOYMENTS) == [
        ("FieldValueNotFound", "spec.template.spec.containers[0].volumeMounts[0].name", 'Not found: "data"'),
        ("FieldValueRequired", "spec.template.spec.containers[1].image", "Required value"),
        ("FieldValueDuplicate", "spec.template.spec.containers[1].name", 'Duplicate value: "app"'),
        ("FieldValueForbidden", "spec.template.spec.ephemeralContainers",
         "Forbidden: ephemeral containers not allowed in pod template"),
        ("FieldValueNotSupported", "spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"'),
        ("FieldValueForbidden", "spec.template.spec.activeDeadlineSeconds",
         "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"),
    ]


@pytest.mark.parametrize("host_port", [0, 8080])
async def test_a_template_may_leave_a_host_network_host_port_unset(client: httpx.AsyncClient, host_port: int) -> None:
    port = {"containerPort": 80, **({"hostPort": host_port} if host_port else {})}
    r = await client.post(DEPLOYMENTS, json=deployment({"containers": [app(ports=[port])], "hostNetwork": True}))
    assert r.status_code == (201 if not host_port else 422), r.text


async def test_a_statefulset_template_may_mount_its_claim_templates(client: httpx.AsyncClient) -> None:
    # ValidatePodTemplateSpecForStatefulSet does not run ValidatePodSpec: "data" is a claim template.
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [app(volumeMounts=[{"name": "data", "mountPath": "/d"}])]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}
    r = await client.post(STATEFULSETS, json=body)
    assert r.status_code == 201, r.text
    body["metadata"]["name"] = "db2"
    body["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    assert await refused(client, body, STATEFULSETS) == [
        ("FieldValueForbidden", "spec.template.spec.activeDeadlineSeconds",
         "Forbidden: activeDeadlineSeconds in StatefulSet is not Supported")]


async def test_probes_and_hooks_name_one_handler(client: httpx.AsyncClient) -> None:
    container = app(
        lifecycle={"preStop": {"sleep": {"seconds": 60}}, "postStart": {}},
        livenessProbe={"exec": {"command": []}, "httpGet": {"port": 80}, "successThreshold": 2},
        readinessProbe={"httpGet": {"port": "HTTP", "scheme": "FTP", "httpHeaders": [{"name": "X Y", "value": "1"}]},
                        "terminationGracePeriodSeconds": 5},
        startupProbe={"tcpSocket": {}, "periodSeconds": -1})
    sidecar = {"name": "side", "image": "busybox", "restartPolicy": "Always", "startupProbe": {"grpc": {"port": 70000}}}
    assert await refused(client, pod(container, initContainers=[sidecar])) == [
        ("FieldValueRequired", "spec.containers[0].lifecycle.postStart", "Required value: must specify a handler type"),
        # validateSleepAction: no longer than the pod's (defaulted) grace period of 30 seconds.
        ("FieldValueInvalid", "spec.containers[0].lifecycle.preStop.sleep", "Invalid value: 60: must be greater than 0 and "
         "less than terminationGracePeriodSeconds (30). Enable AllowPodLifecycleSleepActionZeroValue feature gate for "
         "zero sleep."),
        ("FieldValueRequired", "spec.containers[0].livenessProbe.exec.command", "Required value"),
        ("FieldValueForbidden", "spec.containers[0].livenessProbe.httpGet",
         "Forbidden: may not specify more than 1 handler type"),
        ("FieldValueInvalid", "spec.containers[0].livenessProbe.successThreshold", "Invalid value: 2: must be 1"),
        ("FieldValueInvalid", "spec.containers[0].readinessProbe.httpGet.port",
         'Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'),
        ("FieldValueInvalid", "spec.containers[0].readinessProbe.httpGet.port",
         'Invalid value: "HTTP": must contain at least one letter (a-z)'),
        ("FieldValueNotSupported", "spec.containers[0].readinessProbe.httpGet.scheme",
         'Unsupported value: "FTP": supported values: "HTTP", "HTTPS"'),
        ("FieldValueInvalid", "spec.containers[0].readinessProbe.httpGet.httpHeaders", "Invalid value: \"X Y\": a valid "
         "HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation "
         "is '[-A-Za-z0-9]+')"),
        ("FieldValueInvalid", "spec.containers[0].readinessProbe.terminationGracePeriodSeconds",
         "Invalid value: 5: must not be set for readinessProbes"),
        ("FieldValueInvalid", "spec.containers[0].startupProbe.tcpSocket.port",
         "Invalid value: 0: must be between 1 and 65535, inclusive"),
        ("FieldValueInvalid", "spec.containers[0].startupProbe.periodSeconds",
         "Invalid value: -1: must be greater than or equal to 0"),
        # A sidecar (an init container that always restarts) may have probes, checked the same way.
        ("FieldValueInvalid", "spec.initContainers[0].startupProbe.grpc.port",
         "Invalid value: 70000: must be between 1 and 65535, inclusive"),
    ]
    ok = app(livenessProbe={"httpGet": {"port": 8080}}, readinessProbe={"tcpSocket": {"port": "http"}},
             lifecycle={"preStop": {"sleep": {"seconds": 5}}}, ports=[{"name": "http", "containerPort": 80}])
    r = await client.post(PODS, json=pod(ok, name="ok"))
    assert r.status_code == 201, r.text
