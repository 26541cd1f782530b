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
