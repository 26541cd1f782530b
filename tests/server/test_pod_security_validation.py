"""Security contexts, resize policies, resource claims and integer resources are validated as upstream's.

Upstream: k/k ``pkg/apis/core/validation/validation.go`` (1.32) ``ValidatePodSpec`` →
``validatePodSpecSecurityContext`` (``validateSysctls``, ``ValidateHostSysctl``, ``validateSeccompProfileField``,
``ValidateAppArmorProfileField``, ``validateWindowsSecurityContextOptions``), ``validateContainerCommon`` →
``ValidateSecurityContext``, ``validateResizePolicy``, ``ValidateContainerResourceRequirements``
(``ValidateResourceQuantityValue``, ``validateResourceQuantityHugePageValue``, ``validateResourceClaimNames``),
``validatePodResourceClaims``, ``validateWindowsHostProcessPod``, ``validateHostUsers``, ``validateOS`` /
``validateLinux`` / ``validateWindows``; the update relaxations of ``GetValidationOptionsFromPodSpecAndMeta``
and ``GetValidationOptionsFromPodTemplate`` (k/k ``pkg/api/pod/util.go``).
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from kubeloop.store import SqliteStore

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"
MERGE = {"Content-Type": "application/merge-patch+json"}
ID_RANGE = "must be between 0 and 2147483647, inclusive"
SYSCTL_REGEX = "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"


def app(**fields: Any) -> dict[str, Any]:
    return {"name": "app", "image": "nginx:1.25", **fields}


def pod(*containers: dict[str, Any], name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": list(containers) or [app()], **spec}}


def deployment(template_spec: dict[str, Any], name: str = "d", kind: str = "Deployment") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec}}}


async def refused(client: httpx.AsyncClient, body: dict[str, Any], path: str = PODS) -> list[tuple[str, str, str]]:
    """POST ``body``: a 422 whose causes come back as (reason, field, message); nothing is stored."""
    r = await client.post(path, json=body)
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["code"], status["details"]["kind"]) == ("Invalid", 422, body["kind"])
    assert (await client.get(f"{path}/{body['metadata']['name']}")).status_code == 404
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def created(client: httpx.AsyncClient, body: dict[str, Any], path: str = PODS) -> dict[str, Any]:
    r = await client.post(path, json=body)
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


_SEEDED = 0


async def refused_on_update(client: httpx.AsyncClient, store: SqliteStore, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """A pod stored while its fields' feature gates were on (seeded in the store, as an older or
    differently configured server wrote it): upstream keeps a gated field the stored pod already uses
    (``DropDisabledPodFields``' InUse checks), so an update validates it. PATCH a label: 422 causes."""
    global _SEEDED
    _SEEDED += 1
    name = body["metadata"]["name"]
    seeded = {**body, "metadata": {**body["metadata"], "namespace": "default",
                                   "uid": f"0b5b1d6e-8d51-4a53-9c32-{_SEEDED:012d}",
                                   "creationTimestamp": "2026-01-01T00:00:00Z"}}
    await _store_raw(store, f"/registry/core/pods/default/{name}", seeded)
    r = await client.patch(f"{PODS}/{name}", json={"metadata": {"labels": {"touched": "yes"}}}, headers=MERGE)
    assert r.status_code == 422, r.text
    return [(c["reason"], c["field"], c["message"]) for c in r.json()["details"]["causes"]]


# -- the pod's security context ------------------------------------------------------------------------


async def test_pod_ids_sysctls_and_policies_are_checked_in_upstreams_order(client: httpx.AsyncClient,
                                                                           store: SqliteStore) -> None:
    context = {"runAsUser": -1, "runAsGroup": 2**31, "fsGroup": -5, "supplementalGroups": [1, -2],
               "sysctls": [{"name": "net.core.somaxconn", "value": "1"}, {"name": "Bad!"}, {"name": "net.core.somaxconn"},
                           {"name": ""}, {"name": "kernel/shm_rmid_forced"}],
               "fsGroupChangePolicy": "Sometimes", "seccompProfile": {"type": "Localhost"},
               "appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "x"},
               "supplementalGroupsPolicy": "Loose", "seLinuxChangePolicy": "MountOption"}
    gated = {key: context.pop(key) for key in ("supplementalGroupsPolicy", "seLinuxChangePolicy")}
    causes = await refused(client, pod(securityContext=context, hostNetwork=True, hostIPC=True, hostPID=True,
                                       shareProcessNamespace=True))
    host_net = "may not be specified when 'hostNetwork' is true"
    assert causes == [
        ("FieldValueInvalid", "spec.securityContext.fsGroup", f"Invalid value: -5: {ID_RANGE}"),
        ("FieldValueInvalid", "spec.securityContext.runAsUser", f"Invalid value: -1: {ID_RANGE}"),
        ("FieldValueInvalid", "spec.securityContext.runAsGroup", f"Invalid value: 2147483648: {ID_RANGE}"),
        ("FieldValueInvalid", "spec.securityContext.supplementalGroups[1]", f"Invalid value: -2: {ID_RANGE}"),
        # Upstream keeps shareProcessNamespace in its internal pod security context, and names it there.
        ("FieldValueInvalid", "spec.securityContext.shareProcessNamespace",
         "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"),
        ("FieldValueInvalid", "spec.securityContext.sysctls[0].name", f'Invalid value: "net.core.somaxconn": {host_net}'),
        ("FieldValueInvalid", "spec.securityContext.sysctls[1].name",
         f'Invalid value: "Bad!": must have at most 253 characters and match regex {SYSCTL_REGEX}'),
        ("FieldValueDuplicate", "spec.securityContext.sysctls[2].name", 'Duplicate value: "net.core.somaxconn"'),
        ("FieldValueInvalid", "spec.securityContext.sysctls[2].name", f'Invalid value: "net.core.somaxconn": {host_net}'),
        ("FieldValueRequired", "spec.securityContext.sysctls[3].name", "Required value"),
        # A "/"-separated name is read with "/" as "." (sysctl.NormalizeName): an IPC sysctl.
        ("FieldValueInvalid", "spec.securityContext.sysctls[4].name",
         "Invalid value: \"kernel/shm_rmid_forced\": may not be specified when 'hostIPC' is true"),
        ("FieldValueNotSupported", "spec.securityContext.fsGroupChangePolicy",
         'Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"'),
        ("FieldValueRequired", "spec.securityContext.seccompProfile.localhostProfile",
         "Required value: must be set when seccomp type is Localhost"),
        ("FieldValueInvalid", "spec.securityContext.appArmorProfile.localhostProfile",
         'Invalid value: "x": can only be set when AppArmor type is Localhost'),
    ]
    # SupplementalGroupsPolicy and SELinuxChangePolicy are off by default in 1.32: a new pod's two fields
    # are dropped before validation (DropDisabledPodFields). A pod stored with them keeps them, and its
    # update checks them; as the stored pod already has a policy, any known one is allowed
    # (useOnlyRecursiveSELinuxChangePolicy), not only Recursive.
    assert await refused_on_update(client, store, pod(name="stored", securityContext=gated)) == [
        ("FieldValueNotSupported", "spec.securityContext.supplementalGroupsPolicy",
         'Unsupported value: "Loose": supported values: "Merge", "Strict"'),
    ]
    gated["seLinuxChangePolicy"] = "Sometimes"
    assert await refused_on_update(client, store, pod(name="other", securityContext=gated)) == [
        ("FieldValueNotSupported", "spec.securityContext.supplementalGroupsPolicy",
         'Unsupported value: "Loose": supported values: "Merge", "Strict"'),
        ("FieldValueNotSupported", "spec.securityContext.seLinuxChangePolicy",
         'Unsupported value: "Sometimes": supported values: "MountOption", "Recursive"'),
    ]


async def test_profiles_need_a_type_and_a_local_localhost_profile(client: httpx.AsyncClient) -> None:
    context = {"appArmorProfile": {"type": "Localhost", "localhostProfile": " x"},
               "seccompProfile": {"type": "Localhost", "localhostProfile": "/abs/../x"}}
    container = app(securityContext={"appArmorProfile": {"type": "Complain"}, "seccompProfile": {},
                                     "windowsOptions": {"runAsUserName": "dom.ain\\us?er", "gmsaCredentialSpec": ""}})
    assert await refused(client, pod(container, securityContext=context)) == [
        ("FieldValueRequired", "spec.containers[0].securityContext.seccompProfile.type",
         "Required value: type is required when seccompProfile is set"),
        ("FieldValueInvalid", "spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpec",
         'Invalid value: "": gmsaCredentialSpec cannot be an empty string'),
        ("FieldValueInvalid", "spec.containers[0].securityContext.windowsOptions.runAsUserName",
         'Invalid value: "dom.ain\\\\us?er": runAsUserName\'s User cannot contain the following characters: "/\\:;|=,+*?<>@[]'),
        ("FieldValueNotSupported", "spec.containers[0].securityContext.appArmorProfile.type",
         'Unsupported value: "Complain": supported values: "Localhost", "RuntimeDefault", "Unconfined"'),
        ("FieldValueInvalid", "spec.securityContext.seccompProfile.localhostProfile", 'Invalid value: "/abs/../x": must be a relative path'),
        ("FieldValueInvalid", "spec.securityContext.seccompProfile.localhostProfile", "Invalid value: \"/abs/../x\": must not contain '..'"),
        ("FieldValueInvalid", "spec.securityContext.appArmorProfile.localhostProfile",
         'Invalid value: " x": must not be padded with whitespace'),
    ]


async def test_a_valid_security_context_is_stored_as_sent(client: httpx.AsyncClient) -> None:
    context = {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000, "supplementalGroups": [4000], "runAsNonRoot": True,
               "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}],
               "seccompProfile": {"type": "RuntimeDefault"}, "appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-x"},
               "fsGroupChangePolicy": "OnRootMismatch", "seLinuxOptions": {"level": "s0:c123,c456"}}
    container = app(securityContext={"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                     "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}, "procMount": "Default",
                                     "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/audit.json"}})
    stored = await created(client, pod(container, securityContext=context, os={"name": "linux"}))
    assert stored["spec"]["securityContext"] == context
    assert stored["spec"]["containers"][0]["securityContext"] == container["securityContext"]


# -- containers ----------------------------------------------------------------------------------------


async def test_container_rules_apply_to_containers_and_init_containers(client: httpx.AsyncClient,
                                                                        store: SqliteStore) -> None:
    # ProcMountType is off by default in 1.32: a new pod's procMount is stored as Default, so these
    # rules bite on a pod stored with another value (kept on update: dropDisabledProcMountField).
    context = {"privileged": True, "allowPrivilegeEscalation": False, "runAsUser": -1, "procMount": "Unmasked",
               "capabilities": {"add": ["CAP_SYS_ADMIN"]}}
    text = ('{"allowPrivilegeEscalation": false, "capabilities": {"add": ["CAP_SYS_ADMIN"]}, "privileged": true, '
            '"procMount": "Unmasked", "runAsUser": -1}')
    init = {"name": "init", "image": "busybox", "securityContext": {"procMount": "Weird", "runAsGroup": -3}}
    assert await refused_on_update(client, store, pod(app(securityContext=context), initContainers=[init])) == [
        ("FieldValueInvalid", "spec.containers[0].securityContext.runAsUser", f"Invalid value: -1: {ID_RANGE}"),
        ("FieldValueInvalid", "spec.containers[0].securityContext.procMount",
         'Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`'),
        ("FieldValueInvalid", "spec.containers[0].securityContext",
         f"Invalid value: {text}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
        ("FieldValueInvalid", "spec.containers[0].securityContext",
         f"Invalid value: {text}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"),
        ("FieldValueInvalid", "spec.initContainers[0].securityContext.runAsGroup", f"Invalid value: -3: {ID_RANGE}"),
        ("FieldValueNotSupported", "spec.initContainers[0].securityContext.procMount",
         'Unsupported value: "Weird": supported values: "Default", "Unmasked"'),
    ]


async def test_unmasked_proc_mount_needs_its_own_user_namespace(client: httpx.AsyncClient, store: SqliteStore) -> None:
    # UserNamespacesSupport and ProcMountType are off by default in 1.32: a new pod is stored without
    # hostUsers and with procMount Default; a pod stored with them keeps them, and an update checks them.
    container = app(securityContext={"procMount": "Unmasked"})
    stored = await created(client, pod(container, hostUsers=False))
    assert "hostUsers" not in stored["spec"]
    assert stored["spec"]["containers"][0]["securityContext"] == {"procMount": "Default"}
    assert await refused_on_update(client, store, pod(container, name="q", hostUsers=False, hostNetwork=True,
                                                      hostPID=True, hostIPC=True)) == [
        # validateHostUsers, with upstream's own spellings of the paths.
        ("FieldValueForbidden", "spec.hostNetwork", "Forbidden: when `pod.Spec.HostUsers` is false"),
        ("FieldValueForbidden", "spec.HostPID", "Forbidden: when `pod.Spec.HostUsers` is false"),
        ("FieldValueForbidden", "spec.HostIPC", "Forbidden: when `pod.Spec.HostUsers` is false"),
    ]


async def test_resize_policies_name_cpu_or_memory_once_and_never_on_init_containers(client: httpx.AsyncClient,
                                                                                    store: SqliteStore) -> None:
    # InPlacePodVerticalScaling is off by default in 1.32: a new pod's resizePolicy is dropped; a pod
    # stored with one keeps it, and an update checks it.
    policies = [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}, {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                {"resourceName": "gpu", "restartPolicy": "Sometimes"}, {}]
    init = {"name": "init", "image": "busybox", "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}
    never = "must be 'NotRequired' when `restartPolicy` is 'Never'"
    assert await refused_on_update(client, store, pod(app(resizePolicy=policies), initContainers=[init],
                                                      restartPolicy="Never")) == [
        ("FieldValueInvalid", "spec.containers[0].resizePolicy", f'Invalid value: "RestartContainer": {never}'),
        ("FieldValueDuplicate", "spec.containers[0].resizePolicy[1]", 'Duplicate value: "cpu"'),
        ("FieldValueNotSupported", "spec.containers[0].resizePolicy", 'Unsupported value: "gpu": supported values: "cpu", "memory"'),
        ("FieldValueNotSupported", "spec.containers[0].resizePolicy",
         'Unsupported value: "Sometimes": supported values: "NotRequired", "RestartContainer"'),
        ("FieldValueInvalid", "spec.containers[0].resizePolicy", f'Invalid value: "Sometimes": {never}'),
        ("FieldValueRequired", "spec.containers[0].resizePolicy", "Required value"),
        ("FieldValueRequired", "spec.containers[0].resizePolicy", "Required value"),
        ("FieldValueInvalid", "spec.containers[0].resizePolicy", f'Invalid value: "": {never}'),
        ("FieldValueInvalid", "spec.initContainers[0].resizePolicy",
         'Invalid value: [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]: must not be set for init containers'),
    ]
    fine = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}, {"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    assert "resizePolicy" not in (await created(client, pod(app(resizePolicy=fine), name="fine")))["spec"]["containers"][0]


# -- resources -----------------------------------------------------------------------------------------


async def test_extended_resources_are_whole_numbers_and_hugepages_whole_pages(client: httpx.AsyncClient) -> None:
    resources = {"limits": {"example.com/foo": "1500m", "hugepages-2Mi": "3Mi", "memory": "1Gi"},
                 "requests": {"example.com/foo": "1500m", "hugepages-2Mi": "3Mi"}}
    assert await refused(client, pod(app(resources=resources))) == [
        ("FieldValueInvalid", "spec.containers[0].resources.limits[example.com/foo]", 'Invalid value: "1500m": must be an integer'),
        ("FieldValueInvalid", "spec.containers[0].resources.limits[hugepages-2Mi]",
         'Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi'),
        ("FieldValueInvalid", "spec.containers[0].resources.requests[example.com/foo]", 'Invalid value: "1500m": must be an integer'),
        ("FieldValueInvalid", "spec.containers[0].resources.requests[hugepages-2Mi]",
         'Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi'),
    ]
    # 3000m is a whole number (it reads back as "3"), and 4Mi two pages.
    fine = {"limits": {"example.com/foo": "3000m", "hugepages-2Mi": "4Mi", "memory": "1Gi"}}
    stored = await created(client, pod(app(resources=fine)))
    assert stored["spec"]["containers"][0]["resources"]["requests"] == {"example.com/foo": "3", "hugepages-2Mi": "4Mi", "memory": "1Gi"}


async def test_resource_claims_are_named_once_and_containers_name_them(client: httpx.AsyncClient,
                                                                       store: SqliteStore) -> None:
    # DynamicResourceAllocation is beta and off by default in 1.32: a new pod's claims are dropped; a pod
    # stored with resourceClaims keeps them (and its containers' claims), and an update checks them.
    claims = [{"name": "gpu", "resourceClaimName": "gpu-claim"}, {"name": "gpu", "resourceClaimTemplateName": "t"},
              {"name": "Bad", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}, {"name": ""},
              {"name": "x", "resourceClaimName": "Not_Valid"}]
    refs = [{"name": "gpu"}, {"name": "gpu", "request": "r1"}, {"name": "ghost"}, {"name": ""}, {"name": "x", "request": "R_1"}]
    causes = await refused_on_update(client, store, pod(app(resources={"claims": refs}), resourceClaims=claims))
    assert [(reason, field) for reason, field, _ in causes] == [
        ("FieldValueDuplicate", "spec.resourceClaims[1].name"),
        ("FieldValueInvalid", "spec.resourceClaims[2].name"),
        ("FieldValueInvalid", "spec.resourceClaims[2]"),
        ("FieldValueRequired", "spec.resourceClaims[3].name"),
        ("FieldValueInvalid", "spec.resourceClaims[3]"),
        ("FieldValueInvalid", "spec.resourceClaims[4].resourceClaimName"),
        ("FieldValueDuplicate", "spec.containers[0].resources.claims[1]"),
        ("FieldValueNotFound", "spec.containers[0].resources.claims[2]"),
        ("FieldValueRequired", "spec.containers[0].resources.claims[3]"),
        ("FieldValueInvalid", "spec.containers[0].resources.claims[4].request"),
    ]
    assert causes[2][2] == ('Invalid value: {"name": "Bad", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}: '
                            "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")
    assert causes[4][2] == 'Invalid value: {"name": ""}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`'
    assert causes[7][2] == 'Not found: "ghost": must be one of the names in pod.spec.resourceClaims: Bad, gpu, x'
    # A container's claim with no pod claims at all: the stored pod does not use DRA, so on create
    # (and on update) the container's claims are dropped too and nothing is refused.
    lone = await created(client, pod(app(resources={"claims": [{"name": "gpu"}]}), name="q"))
    assert lone["spec"]["containers"][0]["resources"] == {}
    stored = await created(client, pod(app(resources={"claims": [{"name": "gpu", "request": "a"}, {"name": "gpu", "request": "b"}]}),
                                       resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
                                       name="fine"))
    assert "resourceClaims" not in stored["spec"]


# -- the pod's OS --------------------------------------------------------------------------------------


async def test_a_windows_pod_sets_no_linux_settings_and_host_process_is_all_or_nothing(client: httpx.AsyncClient) -> None:
    context = {"seLinuxOptions": {"level": "s0"}, "fsGroup": 1, "runAsUser": 5, "windowsOptions": {"hostProcess": True}}
    containers = [app(securityContext={"privileged": False, "capabilities": {}, "windowsOptions": {"hostProcess": False}}),
                  app(name="b")]
    windows = "Forbidden: cannot be set for a windows pod"
    assert await refused(client, pod(*containers, os={"name": "windows"}, securityContext=context, hostPID=True)) == [
        ("FieldValueInvalid", "spec.containers[0].securityContext.windowsOptions.hostProcess",
         "Invalid value: false: pod hostProcess value must be identical if both are specified, was true"),
        ("FieldValueInvalid", "spec",
         'Invalid value: "": If pod contains any hostProcess containers then all containers must be HostProcess containers'),
        ("FieldValueInvalid", "spec.hostNetwork", "Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers"),
        ("FieldValueForbidden", "spec.securityContext.seLinuxOptions", windows),
        ("FieldValueForbidden", "spec.hostPID", windows),
        ("FieldValueForbidden", "spec.securityContext.fsGroup", windows),
        ("FieldValueForbidden", "spec.securityContext.runAsUser", windows),
        ("FieldValueForbidden", "spec.containers[0].securityContext.capabilities", windows),
        ("FieldValueForbidden", "spec.containers[0].securityContext.privileged", windows),
    ]
    host_process = {"windowsOptions": {"hostProcess": True, "runAsUserName": "NT AUTHORITY\\SYSTEM"}}
    await created(client, pod(app(), app(name="b"), name="w", os={"name": "windows"}, hostNetwork=True, securityContext=host_process))


async def test_a_linux_pod_sets_no_windows_options_and_the_os_is_known(client: httpx.AsyncClient) -> None:
    forbidden = "Forbidden: windows options cannot be set for a linux pod"
    assert await refused(client, pod(app(securityContext={"windowsOptions": {}}), os={"name": "linux"},
                                     securityContext={"windowsOptions": {"gmsaCredentialSpecName": "spec"}})) == [
        ("FieldValueForbidden", "spec.securityContext.windowsOptions", forbidden),
        ("FieldValueForbidden", "spec.containers[0].securityContext.windowsOptions", forbidden),
    ]
    assert await refused(client, pod(name="m", os={"name": "mac"})) == [
        ("FieldValueNotSupported", "spec.os", 'Unsupported value: "mac": supported values: "linux", "windows"')]
    assert await refused(client, pod(name="n", os={})) == [("FieldValueRequired", "spec.os.name", "Required value: cannot be empty")]


# -- templates and updates -----------------------------------------------------------------------------


async def test_workload_templates_follow_the_pod_rules_but_a_statefulsets_does_not(client: httpx.AsyncClient) -> None:
    spec = {"containers": [app(securityContext={"runAsUser": -1}, resizePolicy=[{"resourceName": "disk", "restartPolicy": "NotRequired"}])],
            "securityContext": {"sysctls": [{"name": "bad name"}]}}
    # InPlacePodVerticalScaling is off by default in 1.32: DropDisabledTemplateFields removes the
    # template's resizePolicy before validation, so only the other rules are reported.
    assert await refused(client, deployment(spec), DEPLOYMENTS) == [
        ("FieldValueInvalid", "spec.template.spec.containers[0].securityContext.runAsUser", f"Invalid value: -1: {ID_RANGE}"),
        ("FieldValueInvalid", "spec.template.spec.securityContext.sysctls[0].name",
         f'Invalid value: "bad name": must have at most 253 characters and match regex {SYSCTL_REGEX}'),
    ]
    # ValidatePodTemplateSpecForStatefulSet does not run ValidatePodSpec.
    await created(client, {**deployment(spec, name="s", kind="StatefulSet"), "spec": {
        **deployment(spec, name="s")["spec"], "serviceName": "s"}}, STATEFULSETS)


async def _store_raw(store: SqliteStore, key: str, body: dict[str, Any]) -> None:
    def render(revision: int) -> bytes:
        body["metadata"]["resourceVersion"] = str(revision)
        return orjson.dumps(body)

    await store.create(key, render)


async def test_an_update_keeps_what_the_stored_pod_already_had(client: httpx.AsyncClient, store: SqliteStore) -> None:
    spec = {"containers": [app(resources={"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"},
                                          "requests": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}})],
            "hostNetwork": True, "securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
            "volumes": [{"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "/abs/token"}}]}}],
            "serviceAccountName": "default"}  # a projected token needs one (validatePodMetadataAndSpec)
    fresh = await refused(client, pod(name="fresh", **spec))
    assert [field for _, field, _ in fresh] == [
        "spec.volumes[0].projected.path", "spec.containers[0].resources.limits[hugepages-2Mi]",
        "spec.containers[0].resources.requests[hugepages-2Mi]", "spec.securityContext.sysctls[0].name"]
    # Stored by an older release that let all three through (AllowIndivisibleHugePagesValues,
    # AllowNamespacedSysctlsForHostNetAndHostIPC, AllowNonLocalProjectedTokenPath): it stays writable.
    body = {**pod(name="old", **spec), "metadata": {"name": "old", "namespace": "default",
                                                   "uid": "0b5b1d6e-8d51-4a53-9c32-000000000007",
                                                   "creationTimestamp": "2026-01-01T00:00:00Z"}}
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80, "protocol": "TCP"}]
    await _store_raw(store, "/registry/core/pods/default/old", body)
    r = await client.patch(f"{PODS}/old", json={"metadata": {"labels": {"kept": "yes"}}}, headers=MERGE)
    assert r.status_code == 200, r.text
    # The rest is still checked.
    r = await client.patch(f"{PODS}/old", json={"metadata": {"labels": {"kept": "no"}}, "spec": {"activeDeadlineSeconds": -1}},
                           headers=MERGE)
    assert r.status_code == 422


async def test_a_deployment_update_keeps_what_the_stored_template_already_had(client: httpx.AsyncClient, store: SqliteStore) -> None:
    spec = {"containers": [app(resources={"limits": {"hugepages-1Gi": "1.5Gi", "cpu": "1"}})]}
    assert [field for _, field, _ in await refused(client, deployment(spec, name="fresh"), DEPLOYMENTS)] == [
        "spec.template.spec.containers[0].resources.limits[hugepages-1Gi]"]
    body = deployment(spec)
    body["metadata"] = {"name": "d", "namespace": "default", "uid": "0b5b1d6e-8d51-4a53-9c32-000000000008",
                        "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 1}
    body["spec"]["replicas"] = 1
    await _store_raw(store, "/registry/apps/deployments/default/d", body)
    r = await client.patch(f"{DEPLOYMENTS}/d", json={"spec": {"replicas": 0}}, headers=MERGE)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("quantity", ["1.5", "500m", "1e-3"])
async def test_a_fraction_of_an_extended_resource_is_refused(client: httpx.AsyncClient, quantity: str) -> None:
    causes = await refused(client, pod(app(resources={"limits": {"vendor.example/gpu": quantity}})))
    # The request defaults to the limit (SetDefaults_Pod), so both are named.
    assert [(reason, field) for reason, field, _ in causes] == [
        ("FieldValueInvalid", "spec.containers[0].resources.limits[vendor.example/gpu]"),
        ("FieldValueInvalid", "spec.containers[0].resources.requests[vendor.example/gpu]")]
    assert all(message.endswith(": must be an integer") for _, _, message in causes)


# -- the deprecated seccomp and AppArmor annotations ---------------------------------------------------

SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_APP = "container.seccomp.security.alpha.kubernetes.io/app"
APPARMOR = "container.apparmor.security.beta.kubernetes.io/"


def annotated(annotations: dict[str, str], name: str = "p", **spec: Any) -> dict[str, Any]:
    body = pod(name=name, **spec)
    body["metadata"]["annotations"] = annotations
    return body


async def test_seccomp_and_apparmor_annotations_name_known_profiles_and_containers(client: httpx.AsyncClient) -> None:
    annotations = {SECCOMP_POD: "localhost/../x", SECCOMP_APP: "bogus", f"{APPARMOR}ghost": "runtime/default",
                   f"{APPARMOR}app": "enforce"}
    assert await refused(client, annotated(annotations)) == [
        # ValidateSeccompPodAnnotations names the key as a path child, ValidateAppArmorPodAnnotations as a key.
        ("FieldValueInvalid", f"metadata.annotations.{SECCOMP_POD}", "Invalid value: \"../x\": must not contain '..'"),
        ("FieldValueInvalid", f"metadata.annotations.{SECCOMP_APP}", 'Invalid value: "bogus": must be a valid seccomp profile'),
        ("FieldValueInvalid", f"metadata.annotations[{APPARMOR}ghost]", 'Invalid value: "ghost": container not found'),
        ("FieldValueInvalid", f"metadata.annotations[{APPARMOR}app]", 'Invalid value: "enforce": invalid AppArmor profile name: "enforce"'),
    ]
    template = deployment({"containers": [app()]})
    template["spec"]["template"]["metadata"]["annotations"] = {SECCOMP_POD: "x"}
    assert await refused(client, template, DEPLOYMENTS) == [
        # ValidatePodTemplateSpec names the template's annotations without "metadata".
        ("FieldValueInvalid", f"spec.template.annotations.{SECCOMP_POD}", 'Invalid value: "x": must be a valid seccomp profile')]


async def test_a_new_pods_annotations_agree_with_its_profile_fields(client: httpx.AsyncClient) -> None:
    annotations = {SECCOMP_POD: "unconfined", SECCOMP_APP: "localhost/a.json", f"{APPARMOR}app": "localhost/other"}
    context = {"seccompProfile": {"type": "RuntimeDefault"}, "appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}
    container = app(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "b.json"},
                                     "appArmorProfile": {"type": "Localhost", "localhostProfile": "mine"}})
    assert await refused(client, annotated(annotations, securityContext=context, containers=[container])) == [
        ("FieldValueForbidden", "spec.securityContext.seccompProfile.type", "Forbidden: seccomp type in annotation and field must match"),
        ("FieldValueForbidden", "spec.containers[0].securityContext.seccompProfile.localhostProfile",
         "Forbidden: seccomp profile in annotation and field must match"),
        # The container's own AppArmor profile disagrees with its annotation.
        ("FieldValueForbidden", "spec.containers[0].securityContext.appArmorProfile.localhostProfile",
         "Forbidden: apparmor profile in annotation and field must match"),
    ]
    # A container with no AppArmor profile of its own gets the one its annotation names
    # (applyAppArmorVersionSkew, before validation): it then agrees, though the pod's differs.
    inherits = app(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "a.json"}})
    agreeing_seccomp = {SECCOMP_POD: "runtime/default", SECCOMP_APP: "localhost/a.json", f"{APPARMOR}app": "localhost/other"}
    stored = await created(client, annotated(agreeing_seccomp, name="synced", securityContext=context, containers=[inherits]))
    assert stored["spec"]["containers"][0]["securityContext"]["appArmorProfile"] == {
        "type": "Localhost", "localhostProfile": "other"}
    agreeing = {SECCOMP_POD: "runtime/default", f"{APPARMOR}app": "localhost/p"}
    await created(client, annotated(agreeing, securityContext=context))


async def test_apparmor_annotations_may_not_be_added_changed_or_removed(client: httpx.AsyncClient) -> None:
    await created(client, annotated({f"{APPARMOR}app": "runtime/default"}))
    for change, message in [({f"{APPARMOR}app": "unconfined"}, "may not remove or update AppArmor annotations"),
                            ({f"{APPARMOR}app": None}, "may not remove or update AppArmor annotations"),
                            ({f"{APPARMOR}other": "unconfined"}, "may not add AppArmor annotations")]:
        for path in (f"{PODS}/p", f"{PODS}/p/status"):
            r = await client.patch(path, json={"metadata": {"annotations": change}}, headers=MERGE)
            assert r.status_code == 422, r.text
            fields = [(c["field"], c["message"]) for c in r.json()["details"]["causes"]]
            assert (f"metadata.annotations[{next(iter(change))}]", f"Forbidden: {message}") in fields
    r = await client.patch(f"{PODS}/p", json={"metadata": {"annotations": {"other": "x"}}}, headers=MERGE)
    assert r.status_code == 200, r.text
