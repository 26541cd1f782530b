"""The ServiceAccount admission plugin (k/k plugin/pkg/admission/serviceaccount/admission.go, 1.32), through the API.

The server here is kube-apiserver's default chain (the plugin on), on a fake clock; ServiceAccounts are
created by the tests as the ServiceAccount controller would.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import ApiError, Forbidden, Invalid, KindRegistry, NotFound, ResourceInfo
from kubeloop.client import Client
from kubeloop.server import create_app
from kubeloop.server._app import DEFAULT_ADMISSION_PLUGINS
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

KINDS = KindRegistry()
NAMESPACES: ResourceInfo = KINDS.by_kind("", "Namespace")  # type: ignore[assignment]
PODS: ResourceInfo = KINDS.by_kind("", "Pod")  # type: ignore[assignment]
SERVICEACCOUNTS: ResourceInfo = KINDS.by_kind("", "ServiceAccount")  # type: ignore[assignment]
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME = re.compile(r"^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$")
PROJECTED = {
    "defaultMode": 420,
    "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ],
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def api(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Client]:
    store = await SqliteStore.open(tmp_path / "db")
    app = create_app(store=store, clock=clock, rng=random.Random(3))
    await app.startup()
    client = Client.from_asgi(app, default_namespace="ns")
    await client.create(NAMESPACES, {"metadata": {"name": "ns"}})
    await client.create(SERVICEACCOUNTS, {"metadata": {"name": "default"}})
    try:
        yield client
    finally:
        await client.close()
        await app.shutdown()
        await store.close()


def pod(name: str, **spec: Any) -> dict[str, Any]:
    body_spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx"}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body_spec}


def test_service_account_runs_between_limit_ranger_and_priority_as_upstream_orders_it() -> None:
    # kube-apiserver's AllOrderedPlugins (pkg/kubeapiserver/options/plugins.go).
    names = list(DEFAULT_ADMISSION_PLUGINS)
    assert names.index("LimitRanger") + 1 == names.index("ServiceAccount") == names.index("Priority") - 1


async def test_pod_gets_default_service_account_and_projected_token_volume(api: Client) -> None:
    created = await api.create(PODS, pod("web", initContainers=[{"name": "init", "image": "busybox"}]))
    spec = created["spec"]
    assert spec["serviceAccountName"] == "default"
    assert spec["serviceAccount"] == "default"
    [volume] = spec["volumes"]
    assert TOKEN_VOLUME.match(volume["name"])
    assert volume["projected"] == PROJECTED
    mount = {"name": volume["name"], "readOnly": True, "mountPath": MOUNT_PATH}
    assert spec["containers"][0]["volumeMounts"] == [mount]
    assert spec["initContainers"][0]["volumeMounts"] == [mount]
    assert (await api.get(PODS, "web"))["spec"] == spec


async def test_each_pod_gets_its_own_volume_name(api: Client) -> None:
    a = (await api.create(PODS, pod("a")))["spec"]["volumes"][0]["name"]
    b = (await api.create(PODS, pod("b")))["spec"]["volumes"][0]["name"]
    assert a != b


@pytest.mark.parametrize(("pod_says", "sa_says", "mounted"), [
    (False, None, False), (None, False, False), (True, False, True), (False, True, False), (None, True, True),
])
async def test_automount_follows_the_pod_then_the_service_account(
    api: Client, pod_says: bool | None, sa_says: bool | None, mounted: bool
) -> None:
    sa: dict[str, Any] = {"metadata": {"name": "robot"}}
    if sa_says is not None:
        sa["automountServiceAccountToken"] = sa_says
    await api.create(SERVICEACCOUNTS, sa)
    extra: dict[str, Any] = {"serviceAccountName": "robot"}
    if pod_says is not None:
        extra["automountServiceAccountToken"] = pod_says
    spec = (await api.create(PODS, pod("p", **extra)))["spec"]
    assert ("volumes" in spec) is mounted
    assert ("volumeMounts" in spec["containers"][0]) is mounted
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "robot"


async def test_container_that_already_mounts_the_path_keeps_its_own_mount(api: Client) -> None:
    own = {"name": "mine", "mountPath": MOUNT_PATH}
    body = pod("p", volumes=[{"name": "mine", "emptyDir": {}}])
    body["spec"]["containers"] = [{"name": "a", "image": "nginx", "volumeMounts": [own]},
                                  {"name": "b", "image": "nginx"}]
    spec = (await api.create(PODS, body))["spec"]
    assert spec["containers"][0]["volumeMounts"] == [own]
    token = spec["volumes"][1]["name"]
    assert TOKEN_VOLUME.match(token)
    assert spec["containers"][1]["volumeMounts"] == [{"name": token, "readOnly": True, "mountPath": MOUNT_PATH}]


async def test_no_volume_when_every_container_mounts_the_path_itself(api: Client) -> None:
    body = pod("p", volumes=[{"name": "mine", "emptyDir": {}}])
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "mine", "mountPath": MOUNT_PATH}]
    spec = (await api.create(PODS, body))["spec"]
    assert [v["name"] for v in spec["volumes"]] == ["mine"]


async def test_an_existing_kube_api_access_volume_is_reused(api: Client) -> None:
    body = pod("p", volumes=[{"name": "kube-api-access-abcde", "emptyDir": {}}])
    spec = (await api.create(PODS, body))["spec"]
    assert spec["volumes"] == [{"name": "kube-api-access-abcde", "emptyDir": {}}]
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "kube-api-access-abcde", "readOnly": True, "mountPath": MOUNT_PATH}]


async def test_missing_named_service_account_is_forbidden_at_once_and_nothing_is_stored(api: Client) -> None:
    with pytest.raises(Forbidden) as caught:
        await api.create(PODS, pod("p", serviceAccountName="ghost"))
    assert caught.value.message == (
        'pods "p" is forbidden: error looking up service account ns/ghost: serviceaccount "ghost" not found')
    assert caught.value.details["name"] == "p"
    assert caught.value.details["kind"] == "pods"
    with pytest.raises(NotFound):
        await api.get(PODS, "p")


async def test_generate_name_pod_is_named_by_its_prefix_when_refused(api: Client) -> None:
    body = pod("", serviceAccountName="ghost")
    body["metadata"] = {"generateName": "web-"}
    with pytest.raises(Forbidden) as caught:
        await api.create(PODS, body)
    assert caught.value.message.startswith('pods "web-" is forbidden: error looking up service account ns/ghost')


async def test_missing_default_is_awaited_ten_times_then_forbidden(api: Client, clock: FakeClock) -> None:
    await api.delete(SERVICEACCOUNTS, "default")
    creating = asyncio.ensure_future(api.create(PODS, pod("p")))
    waited = 0.0
    while not creating.done():
        await asyncio.sleep(0)
        if clock.sleepers:
            await clock.advance(0.01)
            waited += 0.01
    with pytest.raises(Forbidden) as caught:
        await creating
    assert caught.value.message == (
        'pods "p" is forbidden: error looking up service account ns/default: serviceaccount "default" not found')
    # Nine waits of 100-199 ms between ten reads (getServiceAccount's retry of the default account).
    assert 0.9 <= waited < 1.8


async def test_default_created_while_the_pod_waits_admits_the_pod(api: Client, clock: FakeClock) -> None:
    await api.delete(SERVICEACCOUNTS, "default")
    creating = asyncio.ensure_future(api.create(PODS, pod("p")))
    while not clock.sleepers:
        await asyncio.sleep(0)
    await api.create(SERVICEACCOUNTS, {"metadata": {"name": "default"}})
    while not creating.done():
        await clock.advance(0.05)
        await asyncio.sleep(0)
    assert (await creating)["spec"]["serviceAccountName"] == "default"


async def test_image_pull_secrets_come_from_the_service_account_when_the_pod_has_none(api: Client) -> None:
    await api.create(SERVICEACCOUNTS, {"metadata": {"name": "puller"}, "imagePullSecrets": [{"name": "regcred"}]})
    spec = (await api.create(PODS, pod("a", serviceAccountName="puller")))["spec"]
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    spec = (await api.create(PODS, pod("b", serviceAccountName="puller", imagePullSecrets=[{"name": "own"}])))["spec"]
    assert spec["imagePullSecrets"] == [{"name": "own"}]


async def test_mirror_pod_is_not_changed_and_may_not_name_a_service_account(api: Client) -> None:
    mirror = pod("static")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    spec = (await api.create(PODS, mirror))["spec"]
    assert "serviceAccountName" not in spec
    assert "volumes" not in spec
    named = pod("static2", serviceAccountName="default")
    named["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    with pytest.raises(Forbidden) as caught:
        await api.create(PODS, named)
    assert caught.value.message == 'pods "static2" is forbidden: a mirror pod may not reference service accounts'
    secret = pod("static3", volumes=[{"name": "s", "secret": {"secretName": "x"}}])
    secret["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    with pytest.raises(Forbidden) as caught:
        await api.create(PODS, secret)
    assert caught.value.message == 'pods "static3" is forbidden: a mirror pod may not reference secrets'


async def test_enforce_mountable_secrets_limits_secret_volumes_to_the_listed_ones(api: Client) -> None:
    await api.create(SERVICEACCOUNTS, {"metadata": {"name": "strict",
                                                    "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
                                       "secrets": [{"name": "allowed"}]})
    ok = pod("ok", serviceAccountName="strict", volumes=[{"name": "s", "secret": {"secretName": "allowed"}}])
    assert (await api.create(PODS, ok))["spec"]["serviceAccountName"] == "strict"
    bad = pod("bad", serviceAccountName="strict", volumes=[{"name": "s", "secret": {"secretName": "other"}}])
    with pytest.raises(Forbidden) as caught:
        await api.create(PODS, bad)
    assert caught.value.message == ('pods "bad" is forbidden: volume with secret.secretName="other" is not allowed '
                                    "because service account strict does not reference that secret")


async def test_deprecated_service_account_field_names_the_account(api: Client) -> None:
    await api.create(SERVICEACCOUNTS, {"metadata": {"name": "robot"}})
    spec = (await api.create(PODS, pod("p", serviceAccount="robot")))["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "robot"


async def test_a_pods_service_account_cannot_change(api: Client) -> None:
    await api.create(SERVICEACCOUNTS, {"metadata": {"name": "robot"}})
    created = await api.create(PODS, pod("p"))
    created["spec"]["serviceAccountName"] = created["spec"]["serviceAccount"] = "robot"
    with pytest.raises(Invalid):
        await api.update(PODS, created)
    assert (await api.get(PODS, "p"))["spec"]["serviceAccountName"] == "default"


async def test_other_kinds_are_not_touched(api: Client) -> None:
    configmaps: ResourceInfo = KINDS.by_kind("", "ConfigMap")  # type: ignore[assignment]
    created = await api.create(configmaps, {"metadata": {"name": "c"}, "data": {"a": "b"}})
    assert created["data"] == {"a": "b"}


async def test_ephemeral_containers_may_use_only_the_secrets_an_enforcing_account_lists(api: Client) -> None:
    # limitEphemeralContainerSecretReferences: an UPDATE of pods/ephemeralcontainers; the secret refusal is a
    # plain error upstream, so the API server answers it as a 500 without a reason.
    await api.create(SERVICEACCOUNTS, {"metadata": {"name": "strict",
                                                    "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
                                       "secrets": [{"name": "allowed"}]})
    await api.create(PODS, pod("p", serviceAccountName="strict"))

    def debugger(name: str, **fields: Any) -> dict[str, Any]:
        return {"spec": {"ephemeralContainers": [{"name": name, "image": "busybox", **fields}]}}

    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "other", "key": "t"}}}]
    with pytest.raises(ApiError) as caught:
        await api.patch(PODS, "p", debugger("d", env=env), patch_type="strategic", subresource="ephemeralcontainers")
    assert (caught.value.code, caught.value.message) == (
        500, 'ephemeral container d with envVar TOKEN referencing secret.secretName="other" is not allowed '
                 "because service account strict does not reference that secret")
    with pytest.raises(ApiError) as caught:
        await api.patch(PODS, "p", debugger("d", envFrom=[{"secretRef": {"name": "other"}}]), patch_type="strategic",
                        subresource="ephemeralcontainers")
    assert caught.value.message == ('ephemeral container d with envFrom referencing secret.secretName="other" is not '
                                    "allowed because service account strict does not reference that secret")
    assert "ephemeralContainers" not in (await api.get(PODS, "p"))["spec"]
    allowed = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "allowed", "key": "t"}}}]
    patched = await api.patch(PODS, "p", debugger("d", env=allowed), patch_type="strategic",
                              subresource="ephemeralcontainers")
    assert [c["name"] for c in patched["spec"]["ephemeralContainers"]] == ["d"]
    # The ephemeral container gets no token mount: the plugin mutates pods on create only.
    assert "volumeMounts" not in patched["spec"]["ephemeralContainers"][0]
