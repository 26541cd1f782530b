"""Admission plugins see what each write is (operation, resource, namespace, name, subresource, dry run)
and cannot change it for the plugins after them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes
from kubeloop.server._options import WriteOptions

CM = "/api/v1/namespaces/default/configmaps"


class Recorder:
    def __init__(self) -> None:
        self.seen: list[AdmissionAttributes] = []

    async def __call__(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        self.seen.append(attributes)
        with pytest.raises(AttributeError):
            attributes.name = "other"  # type: ignore[misc]


async def test_plugins_see_each_writes_attributes_and_cannot_change_them(app: App, client: httpx.AsyncClient) -> None:
    recorder = Recorder()
    app.admission.append(recorder)
    assert (await client.post(CM, json={"metadata": {"name": "a"}})).status_code == 201
    assert (await client.post(f"{CM}?dryRun=All", json={"metadata": {"name": "b"}})).status_code == 201
    r = await client.patch(f"{CM}/a", json={"data": {"k": "v"}}, headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert (await client.delete(f"{CM}/a")).status_code == 200
    seen = [(a.operation, a.resource.plural, a.namespace, a.name, a.subresource, a.dry_run) for a in recorder.seen]
    assert seen == [
        ("CREATE", "configmaps", "default", "a", "", False),
        ("CREATE", "configmaps", "default", "b", "", True),
        ("UPDATE", "configmaps", "default", "a", "", False),
        ("DELETE", "configmaps", "default", "a", "", False),
    ]


async def test_a_creates_attributes_carry_its_user_and_the_namespace_read_it_commits_against(
    app: App, client: httpx.AsyncClient
) -> None:
    # The create path builds its attributes positionally (a named tuple's keyword ``__new__`` is
    # skipped): every field lands where a keyword construction puts it.
    recorder = Recorder()
    app.admission.append(recorder)
    assert (await client.post(CM, json={"metadata": {"name": "a"}})).status_code == 201
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "n1"}})).status_code == 201
    namespaced, cluster = recorder.seen
    assert isinstance(namespaced, AdmissionAttributes) and isinstance(cluster, AdmissionAttributes)
    state = namespaced.namespace_state
    assert state is not None and state[0] is not None
    assert state[0].key == "/registry/core/namespaces/default"
    # This app authenticates nobody: the request's user is None.
    # The request's warnings list and options ride along too (the admission webhooks report them).
    assert namespaced == AdmissionAttributes("CREATE", namespaced.resource, "default", "a", namespace_state=state,
                                             warnings=[], options=WriteOptions())
    assert (namespaced.subresource, namespaced.user, namespaced.dry_run) == ("", None, False)
    assert cluster == AdmissionAttributes("CREATE", cluster.resource, "", "n1", warnings=[], options=WriteOptions())
    assert (cluster.subresource, cluster.user, cluster.dry_run, cluster.namespace_state) == ("", None, False, None)
