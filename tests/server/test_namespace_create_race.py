"""No content lands in a namespace after its deletion committed, even when the create was admitted first.

Upstream's NamespaceLifecycle admission reads the namespace, then the write commits later; its namespace
controller waits ``namespaceDeletionGracePeriod`` (5 s, ``pkg/controller/namespace/namespace_controller.go``)
so such late creations become visible before it empties the namespace. Here the create commits only while
the namespace is still at the revision that was admitted (a guarded store create), else it is admitted again.
"""

from __future__ import annotations

from typing import Any

import httpx

from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes

CM = "/api/v1/namespaces/team/configmaps"


class DeleteNamespaceOnce:
    """An admission plugin that deletes the namespace while a create is between admission and commit."""

    def __init__(self, client: httpx.AsyncClient, *, label: bool = False) -> None:
        self.client = client
        self.label = label
        self.calls = 0

    async def __call__(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        if attributes.operation != "CREATE" or attributes.name != "late":
            return
        self.calls += 1
        if self.calls > 1:
            return
        if self.label:
            r = await self.client.patch("/api/v1/namespaces/team", json={"metadata": {"labels": {"x": "y"}}},
                                        headers={"content-type": "application/merge-patch+json"})
        else:
            r = await self.client.delete("/api/v1/namespaces/team")
        assert r.status_code == 200, r.text


async def test_a_create_admitted_before_the_namespace_was_deleted_is_refused(
    app: App, client: httpx.AsyncClient
) -> None:
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201
    plugin = DeleteNamespaceOnce(client)
    app.admission.append(plugin)
    r = await client.post(CM, json={"metadata": {"name": "late"}})
    assert r.status_code == 403, r.text
    assert r.json()["message"] == ('configmaps "late" is forbidden: unable to create new content in namespace team '
                                   "because it is being terminated")
    assert plugin.calls == 1  # admitted again: NamespaceLifecycle (first in the chain) now refuses
    assert (await client.get(f"{CM}/late")).status_code == 404


async def test_a_create_whose_namespace_only_changed_labels_is_admitted_again_and_stored(
    app: App, client: httpx.AsyncClient
) -> None:
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201
    plugin = DeleteNamespaceOnce(client, label=True)
    app.admission.append(plugin)
    r = await client.post(CM, json={"metadata": {"name": "late"}})
    assert r.status_code == 201, r.text
    assert plugin.calls == 2
    assert (await client.get(f"{CM}/late")).json()["metadata"]["uid"] == r.json()["metadata"]["uid"]
