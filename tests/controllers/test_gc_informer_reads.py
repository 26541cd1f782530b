"""The collector reads an observed item from its informer on the first attempt (upstream attemptToDeleteItem
GETs live and notes only virtual nodes need it). That a copy changed since it was read never leads to a
wrong write is test_gc_propagation's ``test_a_dependent_reparented_between_check_and_delete_is_not_deleted``:
the item is re-parented after the collector read it, its conditional delete gets 409, the retry reads live."""

from __future__ import annotations

from typing import Any

from kubeloop.client import Client
from kubeloop.controllers._gc_graph import ObjectReference
from kubeloop.testing import InProcessCluster, eventually, owner_ref

from .conftest import CONFIGMAPS, SECRETS, start_gc


class RecordingClient(Client):
    """Records the names the collector GETs and the preconditions of its deletes."""

    gets: list[str]
    deletes: list[dict[str, Any]]

    async def get(self, resource: Any, name: str, **kwargs: Any) -> dict[str, Any]:
        self.gets.append(name)
        return await super().get(resource, name, **kwargs)

    async def delete(self, resource: Any, name: str, **kwargs: Any) -> dict[str, Any]:
        self.deletes.append({"name": name, **(kwargs.get("preconditions") or {})})
        return await super().delete(resource, name, **kwargs)


def recording(cluster: InProcessCluster) -> RecordingClient:
    client: RecordingClient = cluster.new_client(RecordingClient)
    client.gets, client.deletes = [], []
    return client


async def test_an_observed_dependent_of_a_deleted_owner_is_deleted_without_a_live_read(
    cluster: InProcessCluster,
) -> None:
    owner = await cluster.create(CONFIGMAPS, "owner")
    child = await cluster.create(SECRETS, "child", owners=[owner_ref(owner)])
    client = recording(cluster)
    await start_gc(cluster, client)

    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns")

    await eventually(lambda: cluster.gone(SECRETS, "child"), clock=cluster.clock)
    assert "child" not in client.gets
    # The delete was conditional on the version the informer held.
    assert client.deletes == [{"name": "child", "uid": child["metadata"]["uid"],
                               "resourceVersion": child["metadata"]["resourceVersion"]}]


async def test_owners_that_go_in_a_burst_are_remembered_absent_so_their_dependents_cost_no_owner_reads(
    cluster: InProcessCluster,
) -> None:
    """More owners than upstream's 500-entry absent-owner cache disappear before the collector reaches
    their dependents: it still knows each owner is gone without asking the server."""
    owners = [await cluster.create(CONFIGMAPS, f"owner-{i}") for i in range(520)]
    for i, owner in enumerate(owners):
        await cluster.create(SECRETS, f"child-{i}", owners=[owner_ref(owner)])
    client = recording(cluster)
    gc = await start_gc(cluster, client)

    async def all_owners_gone() -> bool:
        return not any(uid in gc.graph.nodes for uid in (o["metadata"]["uid"] for o in owners))

    for i in range(520):
        await cluster.client.delete(CONFIGMAPS, f"owner-{i}", namespace="ns")
    await eventually(all_owners_gone, clock=cluster.clock)
    first = owners[0]["metadata"]
    assert ObjectReference("ns", first["name"], "v1", "ConfigMap", first["uid"]) in gc.graph.absent
    for i in (0, 519):
        await eventually(lambda i=i: cluster.gone(SECRETS, f"child-{i}"), clock=cluster.clock)  # type: ignore[misc]
    assert [name for name in client.gets if name.startswith("owner-")] == []
