"""Pods and the workloads that embed a pod template answer a valid but unwise write with upstream's
``Warning`` headers, in upstream's order (release 1.32).

Upstream: k/k ``pkg/api/pod/warnings.go`` (``GetWarningsForPod``, ``GetWarningsForPodTemplate``,
``warningsForPodSpecAndMeta``, ``warningsForOverlappingVirtualPaths``), ``pkg/api/node/util.go``
(``deprecatedNodeLabels``, ``GetWarningsForNodeSelectorTerm``), and the strategies that call them:
``pkg/registry/core/pod/strategy.go`` (create only), ``pkg/registry/apps/{deployment,replicaset,
statefulset}/strategy.go`` (create, and an update that moved the generation; a DNS-label warning on the
name of a Deployment or ReplicaSet).
"""

from __future__ import annotations

import copy
from typing import Any

import httpx

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
REPLICASETS = "/apis/apps/v1/namespaces/default/replicasets"
STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"
MERGE = {"Content-Type": "application/merge-patch+json"}
NULL_SELECTOR = "a null labelSelector results in matching no pod"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def warnings(r: httpx.Response) -> list[str]:
    """The texts of the ``Warning: 299 - "<text>"`` headers, unquoted."""
    out = []
    for header in r.headers.get_list("warning"):
        assert header.startswith('299 - "') and header.endswith('"'), header
        out.append(header[len('299 - "'):-1].replace('\\"', '"').replace("\\\\", "\\"))
    return out


def pod(name: str = "p", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


def deployment(name: str = "web", *, template_spec: dict[str, Any] | None = None,
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"metadata": {"labels": {"app": "web"}},
                                "spec": template_spec or {"containers": [{"name": "c", "image": "nginx"}]}}
    if annotations:
        template["metadata"]["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template}}


async def create(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> list[str]:
    r = await client.post(url, json=body)
    assert r.status_code == 201, r.text
    return warnings(r)


# -- a pod ---------------------------------------------------------------------------------------------


async def test_a_plain_pod_gets_no_warning(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS, json=pod(containers=[{
        "name": "c", "image": "nginx", "ports": [{"containerPort": 80}, {"containerPort": 443}],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "resources": {"limits": {"memory": "128Mi", "ephemeral-storage": "1G"}, "requests": {"memory": "64M"}}}]))
    assert r.status_code == 201, r.text
    assert "warning" not in r.headers


async def test_a_pod_create_warns_in_upstreams_order(client: httpx.AsyncClient) -> None:
    annotations = {"scheduler.alpha.kubernetes.io/critical-pod": "",
                   "security.alpha.kubernetes.io/sysctls": "kernel.shm_rmid_forced=1",
                   "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
                   "container.seccomp.security.alpha.kubernetes.io/c": "runtime/default"}
    body = pod(
        annotations=annotations,
        nodeSelector={"beta.kubernetes.io/os": "linux", "kubernetes.io/os": "linux"},
        affinity={
            "nodeAffinity": {
                REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "beta.kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]},
                PREFERRED: [{"weight": 1, "preference": {"matchExpressions": [
                    {"key": "node-role.kubernetes.io/master", "operator": "Exists"}]}}]},
            "podAffinity": {PREFERRED: [{"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}]},
            "podAntiAffinity": {REQUIRED: [{"topologyKey": "kubernetes.io/hostname"}]}},
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "failure-domain.beta.kubernetes.io/zone",
                                    "whenUnsatisfiable": "DoNotSchedule"}],
        hostAliases=[{"ip": "10.0.0.1", "hostnames": ["a"]}, {"ip": "10.0.0.1", "hostnames": ["b"]}],
        imagePullSecrets=[{"name": "registry"}, {"name": "registry"}, {"name": ""}],
        terminationGracePeriodSeconds=-1,
        volumes=[{"name": "repo", "gitRepo": {"repository": "https://example.com/r.git"}}],
        containers=[{"name": "c", "image": "nginx",
                     "resources": {"limits": {"memory": "1.5", "ephemeral-storage": "2.5"},
                                   "requests": {"memory": "500m"}},
                     "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}])
    assert await create(client, PODS, body) == [
        'spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead',
        f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[1].key: "
        'beta.kubernetes.io/arch is deprecated since v1.14; use "kubernetes.io/arch" instead',
        f"spec.affinity.nodeAffinity.{PREFERRED}[0].preference.matchExpressions[0].key: "
        'node-role.kubernetes.io/master is use "node-role.kubernetes.io/control-plane" instead',
        "spec.topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/zone is "
        'deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
        f"spec.topologySpreadConstraints[0].labelSelector: {NULL_SELECTOR}",
        "metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: "
        'non-functional in v1.16+; use the "priorityClassName" field instead',
        "metadata.annotations[security.alpha.kubernetes.io/sysctls]: "
        'non-functional in v1.11+; use the "sysctls" field instead',
        "spec.volumes[0].gitRepo: deprecated in v1.11",
        'spec.hostAliases[1].ip: duplicate ip "10.0.0.1"',
        'spec.imagePullSecrets[1].name: duplicate name "registry"',
        'spec.imagePullSecrets[2].name: invalid empty name ""',
        "metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: "
        'non-functional in v1.27+; use the "seccompProfile" field instead',
        "metadata.annotations[container.seccomp.security.alpha.kubernetes.io/c]: "
        'non-functional in v1.27+; use the "seccompProfile" field instead',
        'spec.containers[0].resources.limits[memory]: fractional byte value "1500m" is invalid, must be an integer',
        'spec.containers[0].resources.requests[memory]: fractional byte value "500m" is invalid, must be an integer',
        "spec.containers[0].resources.limits[ephemeral-storage]: "
        'fractional byte value "2500m" is invalid, must be an integer',
        # The request was defaulted from the limit (SetDefaults_Pod) before the strategy looked.
        "spec.containers[0].resources.requests[ephemeral-storage]: "
        'fractional byte value "2500m" is invalid, must be an integer',
        'spec.containers[0].env[1]: hides previous definition of "A", which may be dropped when using apply',
        "spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1",
        f"spec.affinity.podAffinity.{PREFERRED}[0].podAffinityTerm.labelSelector: {NULL_SELECTOR}",
        f"spec.affinity.podAntiAffinity.{REQUIRED}[0].labelSelector: {NULL_SELECTOR}",
    ]


async def test_fields_that_replace_the_annotations_silence_their_warnings(client: httpx.AsyncClient) -> None:
    annotations = {"seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
                   "container.seccomp.security.alpha.kubernetes.io/c": "runtime/default"}
    profile = {"seccompProfile": {"type": "RuntimeDefault"}}
    r = await client.post(PODS, json=pod(annotations=annotations, securityContext=profile,
                                         containers=[{"name": "c", "image": "nginx", "securityContext": profile}]))
    assert r.status_code == 201, r.text
    assert warnings(r) == []


async def test_an_env_entry_that_builds_on_the_one_it_repeats_is_not_warned_of(client: httpx.AsyncClient) -> None:
    env = [{"name": "PATH", "value": "/bin"}, {"name": "PATH", "value": "$(PATH):/usr/local/bin"},
           {"name": "X", "value": "1"}, {"name": "X", "value": "$(X)"},
           {"name": "Y", "value": "1"}, {"name": "Y", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    assert await create(client, PODS, pod(containers=[{"name": "c", "image": "nginx", "env": env}])) == [
        'spec.containers[0].env[3]: hides previous definition of "X", which may be dropped when using apply',
        'spec.containers[0].env[5]: hides previous definition of "Y", which may be dropped when using apply',
    ]


async def test_ports_are_compared_across_init_and_regular_containers(client: httpx.AsyncClient) -> None:
    init = {"name": "i", "image": "busybox", "ports": [{"containerPort": 53, "protocol": "UDP"}]}
    main = {"name": "c", "image": "nginx", "ports": [
        {"containerPort": 53, "protocol": "UDP"},
        {"containerPort": 53},  # TCP: another port
        {"name": "m", "containerPort": 9090, "hostIP": "10.0.0.2"},
        {"containerPort": 80, "hostPort": 8080},
        {"containerPort": 80, "hostPort": 8081},
        {"containerPort": 80},
        {"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.3"},
    ]}
    assert await create(client, PODS, pod(initContainers=[init], containers=[main])) == [
        "spec.containers[0].ports[0]: duplicate port definition with spec.initContainers[0].ports[0]",
        "spec.containers[0].ports[2]: hostIP set without hostPort: "
        "{Name:m HostPort:0 ContainerPort:9090 Protocol:TCP HostIP:10.0.0.2}",
        "spec.containers[0].ports[5]: overlapping port definition with spec.containers[0].ports[3]",
        "spec.containers[0].ports[5]: overlapping port definition with spec.containers[0].ports[4]",
        "spec.containers[0].ports[6]: dangerously ambiguous port definition with spec.containers[0].ports[3]",
        "spec.containers[0].ports[6]: overlapping port definition with spec.containers[0].ports[5]",
    ]


async def test_volumes_warn_of_old_plugins_then_of_overlapping_paths(client: httpx.AsyncClient) -> None:
    claim = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1.5"}}}}
    volumes = [
        {"name": "cm", "configMap": {"name": "cfg", "items": [
            {"key": "a", "path": "etc"}, {"key": "b", "path": "etc/app/"}, {"key": "c", "path": "etcetera"}]}},
        {"name": "s", "secret": {"secretName": "creds", "items": [{"key": "a", "path": "x"}, {"key": "b", "path": "x"}]}},
        {"name": "d", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                                                {"path": "labels/x", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "eph", "ephemeral": {"volumeClaimTemplate": claim}},
        {"name": "pj", "projected": {"sources": [
            {"configMap": {"name": "cfg", "items": [{"key": "a", "path": "token"}]}},
            {"serviceAccountToken": {"path": "token"}},
            {"secret": {"name": "creds", "items": [{"key": "k", "path": "token/key"}]}}]}},
    ]
    # A projected token needs a service account (validatePodMetadataAndSpec; this app runs without the
    # ServiceAccount admission plugin, as envtest does).
    assert await create(client, PODS, pod(volumes=volumes, serviceAccountName="default")) == [
        "spec.volumes[3].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: "
        'fractional byte value "1500m" is invalid, must be an integer',
        'volume "cm" (ConfigMap "cfg"): overlapping paths: "etc/app" with "etc"',
        'volume "s" (Secret "creds"): overlapping paths: "x" with "x"',
        'volume "d" (DownwardAPI): overlapping paths: "labels/x" with "labels"',
        'volume "pj" (Projected): overlapping paths: "token" (ServiceAccountToken) with "token" (ConfigMap "cfg")',
        'volume "pj" (Projected): overlapping paths: "token/key" (Secret "creds") with "token" (ConfigMap "cfg")',
        'volume "pj" (Projected): overlapping paths: "token/key" (Secret "creds") with "token" (ServiceAccountToken)',
    ]


async def test_a_projected_source_without_paths_checks_the_previous_ones_again(client: httpx.AsyncClient) -> None:
    # warningsForOverlappingVirtualPaths keeps one sourcePaths variable across the sources: 1.32 warns
    # here, the earlier paths colliding with themselves.
    volumes = [{"name": "pj", "projected": {"sources": [
        {"configMap": {"name": "cfg", "items": [{"key": "a", "path": "a"}]}},
        {"configMap": {"name": "all-keys"}}]}}]
    assert await create(client, PODS, pod(volumes=volumes)) == [
        'volume "pj" (Projected): overlapping paths: "a" (ConfigMap "cfg") with "a" (ConfigMap "cfg")',
    ]


async def test_a_pod_update_says_nothing(client: httpx.AsyncClient) -> None:
    stored = (await client.post(PODS, json=pod(nodeSelector={"beta.kubernetes.io/os": "linux"}))).json()
    stored["metadata"]["labels"] = {"a": "b"}
    r = await client.put(f"{PODS}/p", json=stored)
    assert r.status_code == 200, r.text
    assert warnings(r) == []


async def test_an_invalid_pod_gets_its_error_without_these_warnings(client: httpx.AsyncClient) -> None:
    body = pod(nodeSelector={"beta.kubernetes.io/os": "linux"}, terminationGracePeriodSeconds=-1)
    body["spec"]["containers"][0]["image"] = ""
    r = await client.post(PODS, json=body)
    assert r.status_code == 422, r.text
    assert warnings(r) == []
    assert (await client.get(f"{PODS}/p")).status_code == 404


# -- workloads -----------------------------------------------------------------------------------------

TEMPLATE_SPEC: dict[str, Any] = {
    "nodeSelector": {"failure-domain.beta.kubernetes.io/region": "r"},
    "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"memory": "0.5"}}}],
}
TEMPLATE_WARNINGS = [
    "spec.template.spec.nodeSelector[failure-domain.beta.kubernetes.io/region]: "
    'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
    "spec.template.spec.containers[0].resources.requests[memory]: "
    'fractional byte value "500m" is invalid, must be an integer',
]
NAME_WARNING = ("metadata.name: this is used in Pod names and hostnames, which can result in surprising "
                "behavior; a DNS label is recommended: [must not contain dots]")


async def test_a_deployment_create_warns_of_its_name_then_its_template(client: httpx.AsyncClient) -> None:
    apparmor = {"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}
    body = deployment("web.v1", template_spec=copy.deepcopy(TEMPLATE_SPEC), annotations=apparmor)
    assert await create(client, DEPLOYMENTS, body) == [
        NAME_WARNING,
        TEMPLATE_WARNINGS[0],
        # A template's AppArmor annotation is warned of here (a pod's, upstream, while it syncs the field).
        "spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: "
        'deprecated since v1.30; use the "appArmorProfile" field instead',
        TEMPLATE_WARNINGS[1],
    ]
    assert await create(client, DEPLOYMENTS, deployment("plain")) == []


async def test_a_deployment_update_warns_only_when_the_generation_moves(client: httpx.AsyncClient) -> None:
    await create(client, DEPLOYMENTS, deployment(template_spec=copy.deepcopy(TEMPLATE_SPEC)))
    url = f"{DEPLOYMENTS}/web"
    # Labels do not move the generation: nothing to say, however the template looks.
    r = await client.patch(url, json={"metadata": {"labels": {"tier": "front"}}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert (r.json()["metadata"]["generation"], warnings(r)) == (1, [])
    # An annotation moves a Deployment's generation: the template is warned of again.
    r = await client.patch(url, json={"metadata": {"annotations": {"note": "x"}}}, headers=MERGE)
    assert (r.json()["metadata"]["generation"], warnings(r)) == (2, TEMPLATE_WARNINGS)
    # /scale updates through the main strategy (ScaleREST), and a new replica count moves the generation.
    r = await client.patch(f"{url}/scale", json={"spec": {"replicas": 3}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert warnings(r) == TEMPLATE_WARNINGS
    # The status strategy says nothing.
    status = (await client.get(url)).json()
    status["status"] = {"observedGeneration": 3, "replicas": 0}
    r = await client.put(f"{url}/status", json=status)
    assert r.status_code == 200, r.text
    assert warnings(r) == []


async def test_a_replicaset_warns_as_a_deployment_does(client: httpx.AsyncClient) -> None:
    body = deployment("rs.v1", template_spec=copy.deepcopy(TEMPLATE_SPEC))
    body["kind"] = "ReplicaSet"
    assert await create(client, REPLICASETS, body) == [NAME_WARNING, *TEMPLATE_WARNINGS]
    r = await client.patch(f"{REPLICASETS}/rs.v1", json={"spec": {"replicas": 2}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert warnings(r) == TEMPLATE_WARNINGS
    r = await client.patch(f"{REPLICASETS}/rs.v1", json={"metadata": {"annotations": {"a": "b"}}}, headers=MERGE)
    assert warnings(r) == []  # a ReplicaSet's generation follows its spec only


async def test_a_statefulset_warns_of_its_template_then_its_claim_templates(client: httpx.AsyncClient) -> None:
    body = deployment("db", template_spec=copy.deepcopy(TEMPLATE_SPEC))
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = "db"
    body["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1.5"}}}}]
    body["metadata"]["name"] = "db"  # a StatefulSet's name must be a DNS label: no name warning to give
    claim_warning = 'resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer'
    assert await create(client, STATEFULSETS, body) == [
        *TEMPLATE_WARNINGS, f"spec.volumeClaimTemplates[0].{claim_warning}"]
    r = await client.patch(f"{STATEFULSETS}/db", json={"metadata": {"labels": {"a": "b"}}}, headers=MERGE)
    assert warnings(r) == [f"spec.volumeClaimTemplates[0].Spec.{claim_warning}"]
    r = await client.patch(f"{STATEFULSETS}/db", json={"spec": {"replicas": 2}}, headers=MERGE)
    assert warnings(r) == [*TEMPLATE_WARNINGS, f"spec.volumeClaimTemplates[0].Spec.{claim_warning}"]


async def test_a_persistent_volume_warns_of_every_deprecated_node_label(client: httpx.AsyncClient) -> None:
    # The volume's node affinity shares deprecatedNodeLabels with pods (pkg/api/node/util.go).
    keys = ["node-role.kubernetes.io/master", "app.kubernetes.io/created-by",
            "scheduler.alpha.kubernetes.io/preferAvoidPods", "beta.kubernetes.io/instance-type"]
    volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"},
              "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt"},
                       "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                           {"key": key, "operator": "Exists"} for key in keys]}]}}}}
    path = "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions"
    assert await create(client, "/api/v1/persistentvolumes", volume) == [
        f'{path}[0].key: node-role.kubernetes.io/master is use "node-role.kubernetes.io/control-plane" instead',
        f"{path}[1].key: app.kubernetes.io/created-by is deprecated since v1.9",
        f"{path}[2].key: scheduler.alpha.kubernetes.io/preferAvoidPods is deprecated since v1.22; "
        "use Taints and Tolerations instead",
        f"{path}[3].key: beta.kubernetes.io/instance-type is deprecated since v1.17; "
        'use "node.kubernetes.io/instance-type" instead',
    ]


# -- a pod's AppArmor annotations (applyAppArmorVersionSkew warns while it syncs them) -------------------

APPARMOR = "container.apparmor.security.beta.kubernetes.io/"
APPARMOR_TEXT = 'deprecated since v1.30; use the "appArmorProfile" field instead'


async def test_a_pods_apparmor_annotation_is_warned_of_first(client: httpx.AsyncClient) -> None:
    body = pod(annotations={f"{APPARMOR}c": "runtime/default"}, nodeSelector={"beta.kubernetes.io/arch": "amd64"})
    r = await client.post(PODS, json=body)
    assert r.status_code == 201, r.text
    assert warnings(r) == [
        f"metadata.annotations[{APPARMOR}c]: {APPARMOR_TEXT}",  # PrepareForCreate, before WarningsOnCreate
        'spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead',
    ]
    assert r.json()["spec"]["containers"][0]["securityContext"]["appArmorProfile"] == {"type": "RuntimeDefault"}


async def test_an_apparmor_annotation_that_repeats_the_pods_profile_is_not(client: httpx.AsyncClient) -> None:
    body = pod(annotations={f"{APPARMOR}c": "runtime/default"},
               securityContext={"appArmorProfile": {"type": "RuntimeDefault"}})
    r = await client.post(PODS, json=body)
    assert r.status_code == 201, r.text
    assert warnings(r) == []
    assert "appArmorProfile" not in r.json()["spec"]["containers"][0].get("securityContext", {})


async def test_an_unusable_apparmor_annotation_is_warned_of_with_the_error(client: httpx.AsyncClient) -> None:
    # Recorded while preparing, before validation refuses the value: it goes out with the 422.
    r = await client.post(PODS, json=pod(annotations={f"{APPARMOR}c": "bogus"}))
    assert r.status_code == 422, r.text
    assert warnings(r) == [f"metadata.annotations[{APPARMOR}c]: {APPARMOR_TEXT}"]
    assert (await client.get(f"{PODS}/p")).status_code == 404
