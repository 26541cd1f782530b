"""``InterceptedClient`` records and can fail every write, DELETECOLLECTION included (the namespace
controller's first way of emptying a namespace), against the real in-process server."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kubeloop.api import ApiError
from kubeloop.client import Client
from kubeloop.testing import FakeClock, InProcessCluster, InterceptedClient, RandomFaults, Write, resource

CONFIGMAPS = resource("", "ConfigMap")


async def test_delete_collection_is_a_recorded_write_that_faults_can_fail(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["team"]) as cluster:
        faults = RandomFaults(1.0, rng=random.Random(1), codes=(500,))
        faults.enabled = False
        client = InterceptedClient(cluster.new_client(Client), faults=faults)
        for name in ("a", "b"):
            await client.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": "team"}})

        faults.enabled = True
        with pytest.raises(ApiError) as failed:
            await client.delete_collection(CONFIGMAPS, namespace="team")
        assert failed.value.code == 500
        assert len((await client.list(CONFIGMAPS, namespace="team"))["items"]) == 2, "an injected fault sends nothing"

        faults.enabled = False
        deleted = await client.delete_collection(CONFIGMAPS, namespace="team")
        assert sorted(i["metadata"]["name"] for i in deleted["items"]) == ["a", "b"]
        assert (await client.list(CONFIGMAPS, namespace="team"))["items"] == []
        assert client.writes[-2:] == [
            Write("deletecollection", "configmaps", "team", "", outcome="injected:500", injected=True),
            Write("deletecollection", "configmaps", "team", ""),
        ]
        assert client.count(verb="deletecollection") == 1


async def test_an_intercepted_client_is_a_whole_client_on_the_wrapped_clients_connection(tmp_path: Path) -> None:
    clock = FakeClock()
    async with InProcessCluster(tmp_path, clock=clock, namespaces=["team"]) as cluster:
        inner = cluster.new_client(Client, default_namespace="team")
        client = InterceptedClient(inner)
        # What Client.__init__ establishes holds on the wrapper too (it never ran before).
        assert client.transport is inner.transport
        assert (client.base_url, client.auth, client.default_namespace) == (inner.base_url, inner.auth, "team")
        assert client.clock is clock and client.max_retries == inner.max_retries
        # A client built from its public connection reaches the same server (the connection is real).
        twin = Client(client.transport, base_url=client.base_url, auth=client.auth, default_namespace="team")
        await client.create(CONFIGMAPS, {"metadata": {"name": "seen"}, "data": {"k": "v"}})
        assert (await twin.get(CONFIGMAPS, "seen"))["data"] == {"k": "v"}
        # The base class's own write helpers still go through the interception.
        await client.apply(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}},
                           field_manager="test")
        assert client.writes == [Write("create", "configmaps", None, "seen"), Write("patch", "configmaps", "team", "applied")]
        async with client:  # __aexit__ closes the wrapped client
            pass
