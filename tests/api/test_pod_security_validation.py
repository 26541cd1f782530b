"""The security, resize and resource rules of ``ValidatePodSpec`` on pod specs, as pure functions.

What the HTTP API cannot reach on its own is checked here: ephemeral containers (kubeloop has no
``ephemeralcontainers`` subresource, and a create refuses them), and upstream's arithmetic quirks.
Upstream: k/k ``pkg/apis/core/validation/validation.go`` (1.32), ``pkg/api/pod/util.go``,
k8s.io/component-helpers ``node/util/sysctl``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeloop.api._pod_security_validation import container_security_errors, security_options_from
from kubeloop.api._pod_spec_validation import validate_pod_create, validate_pod_spec_update


def spec(**fields: Any) -> dict[str, Any]:
    return {"containers": [{"name": "app", "image": "nginx"}], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30, **fields}


def causes(pod_spec: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.field, str(e)) for e in validate_pod_create({"metadata": {"name": "p"}, "spec": pod_spec})]


def ephemeral_causes(pod_spec: dict[str, Any]) -> list[str]:
    """The causes of an update that adds ephemeral containers (what the subresource validates)."""
    pod = {"metadata": {"name": "p"}, "spec": pod_spec}
    return [e.field for e in validate_pod_spec_update(pod, pod)]


def test_ephemeral_containers_are_held_to_the_container_security_rules() -> None:
    debug = {"name": "debug", "image": "busybox", "targetContainerName": "app",
             "securityContext": {"runAsUser": -1, "procMount": "Unmasked"},
             "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}
    assert ephemeral_causes(spec(ephemeralContainers=[debug])) == [
        "spec.ephemeralContainers[0].securityContext.runAsUser",
        "spec.ephemeralContainers[0].securityContext.procMount",
        # validateFieldAllowList: a resize policy is not for an ephemeral container at all.
        "spec.ephemeralContainers[0].resizePolicy",
    ]


def test_an_ephemeral_container_in_its_own_user_namespace_may_unmask_proc() -> None:
    debug = {"name": "debug", "image": "busybox", "securityContext": {"procMount": "Unmasked"}}
    assert ephemeral_causes(spec(ephemeralContainers=[debug], hostUsers=False)) == []


@pytest.mark.parametrize(("quantity", "whole"), [
    ("3", True), ("3000m", True), ("3k", True), ("1500m", False), ("1.5", False), ("0.5", False),
    # MilliValue rounds up away from zero before the test, so 1.9999 passes upstream's check.
    ("1.9999", True), ("1n", False), ("0", True),
])
def test_extended_resources_take_what_upstreams_milli_value_test_calls_whole(quantity: str, whole: bool) -> None:
    container = {"name": "app", "image": "nginx", "resources": {"limits": {"example.com/dev": quantity},
                                                                "requests": {"example.com/dev": quantity}}}
    errors = causes(spec(containers=[container]))
    assert (errors == []) is whole, errors


@pytest.mark.parametrize(("name", "quantity", "whole"), [
    ("hugepages-2Mi", "4Mi", True), ("hugepages-2Mi", "3Mi", False), ("hugepages-1Gi", "2Gi", True),
    # A page size that is no quantity, or not a whole number of bytes, divides nothing.
    ("hugepages-big", "2Mi", False), ("hugepages-1500m", "3", False),
])
def test_hugepages_are_whole_pages(name: str, quantity: str, whole: bool) -> None:
    container = {"name": "app", "image": "nginx", "resources": {"limits": {name: quantity, "memory": "1Gi"},
                                                                "requests": {name: quantity, "memory": "1Gi"}}}
    errors = [field for field, text in causes(spec(containers=[container])) if "not positive integer multiple" in text]
    assert (errors == []) is whole


@pytest.mark.parametrize(("sysctl", "host", "refused"), [
    ("net.ipv4.tcp_syncookies", "hostNetwork", True), ("net/ipv4/conf/eth0.100/rp_filter", "hostNetwork", True),
    ("kernel.shmmax", "hostIPC", True), ("kernel.sem", "hostIPC", True), ("fs.mqueue.msg_max", "hostIPC", True),
    ("kernel.msgmax", "hostNetwork", False), ("net.core.somaxconn", "hostIPC", False), ("vm.swappiness", "hostIPC", False),
])
def test_a_pod_sharing_a_host_namespace_sets_none_of_its_sysctls(sysctl: str, host: str, refused: bool) -> None:
    pod_spec = spec(securityContext={"sysctls": [{"name": sysctl, "value": "1"}]}, **{host: True})
    assert bool(causes(pod_spec)) is refused
    # A stored pod that already had one keeps it on update (AllowNamespacedSysctlsForHostNetAndHostIPC).
    assert security_options_from(pod_spec).allow_host_sysctls is refused
    pod = {"metadata": {"name": "p"}, "spec": pod_spec}
    assert validate_pod_spec_update(pod, pod) == []


@pytest.mark.parametrize(("name", "message"), [
    ("", "runAsUserName cannot be an empty string"),
    ("a\tb", "runAsUserName cannot contain control characters"),
    ("a\\b\\c", "runAsUserName cannot contain more than one backslash"),
    ("x" * 256 + "\\user", "runAsUserName's Domain length must be under 256 characters"),
    (".dom\\user", "runAsUserName's Domain doesn't match the NetBios nor the DNS format"),
    ("dom\\", "runAsUserName's User cannot be empty"),
    ("u" * 105, "runAsUserName's User length must not be longer than 104 characters"),
    ("...", "runAsUserName's User cannot contain only periods or spaces"),
    ("us:er", "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]"),
])
def test_windows_user_names_follow_upstreams_rules(name: str, message: str) -> None:
    errors = container_security_errors({"windowsOptions": {"runAsUserName": name}}, "c", host_users=True)
    assert [(e.field, e.detail) for e in errors][:1] == [("c.windowsOptions.runAsUserName", message)]


def test_a_trailing_newline_does_not_pass_an_anchored_pattern() -> None:
    # Go's "$" is the end of the text; Python's would also match before a final newline.
    errors = causes(spec(securityContext={"sysctls": [{"name": "kernel.msgmax\n", "value": "1"}]}))
    assert [field for field, _ in errors] == ["spec.securityContext.sysctls[0].name"]


def test_valid_windows_user_names_pass() -> None:
    for name in ("ContainerUser", "NT AUTHORITY\\SYSTEM", "example.com\\svc", "NETBIOS15CHARSX\\u"):
        assert container_security_errors({"windowsOptions": {"runAsUserName": name}}, "c", host_users=True) == []


def test_a_stored_non_recursive_selinux_change_policy_is_kept() -> None:
    pod_spec = spec(securityContext={"seLinuxChangePolicy": "MountOption"})
    assert [field for field, _ in causes(pod_spec)] == ["spec.securityContext.seLinuxChangePolicy"]
    pod = {"metadata": {"name": "p"}, "spec": pod_spec}
    assert validate_pod_spec_update(pod, pod) == []
    assert security_options_from(None).only_recursive_selinux_change


def test_shapes_that_are_not_json_objects_are_skipped() -> None:
    assert causes(spec(securityContext="x", os="linux", resourceClaims=[1, None])) == []
    assert container_security_errors(["not", "an", "object"], "c", host_users=True) == []
    broken = {"name": "app", "image": "nginx", "securityContext": {"seccompProfile": "x", "appArmorProfile": 3,
                                                                   "windowsOptions": [], "capabilities": {"add": "CAP_SYS_ADMIN"}},
              "resources": {"claims": "gpu"}, "resizePolicy": "cpu"}
    assert causes(spec(containers=[broken])) == []
