"""The Service allocator on a real store: full ranges, and a watch that falls behind is replaced by a
fresh read, never by handing out an address twice (k/k ipallocator / portallocator semantics)."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from kubeloop.server._service_alloc import AllocationError, ServiceAllocator
from kubeloop.store import SqliteStore


def _stored(name: str, ip: str, node_port: int | None = None) -> bytes:
    port: dict[str, object] = {"port": 80}
    if node_port:
        port["nodePort"] = node_port
    return orjson.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
                         "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [port]}})


async def test_a_full_range_says_so_and_a_release_makes_room(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "db")
    try:
        allocator = ServiceAllocator(store, random.Random(1), cidr="10.0.0.0/29", node_ports=(30000, 30001))
        await allocator.sync()
        allocation = allocator.start(dry_run=False)
        ips = {allocator.allocate_ip(allocation, "") for _ in range(6)}  # /29 less network and broadcast
        assert ips == {f"10.0.0.{i}" for i in range(1, 7)}
        with pytest.raises(AllocationError) as full:
            allocator.allocate_ip(allocation, "")
        assert full.value.full
        ports = {allocator.allocate_port(allocation, 0) for _ in range(2)}
        assert ports == {30000, 30001}
        with pytest.raises(AllocationError, match="provided port is already allocated"):
            allocator.allocate_port(allocator.start(dry_run=False), 30000)
        allocation.finish()  # nothing was stored: everything is free again
        assert allocator.allocate_ip(allocator.start(dry_run=True), "10.0.0.3") == "10.0.0.3"
    finally:
        await store.close()


async def test_a_watch_that_falls_behind_is_replaced_by_a_fresh_read(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "db", watch_buffer=2)
    try:
        allocator = ServiceAllocator(store, random.Random(2))
        await allocator.sync()
        for i in range(5):  # more changes than the watch holds: it overflows
            await store.create(f"/registry/core/services/default/s{i}", lambda _rev, i=i: _stored(f"s{i}", f"10.96.0.{10 + i}", 30010 + i))
        await allocator.sync()
        for i in range(5):
            with pytest.raises(AllocationError, match="provided IP is already allocated"):
                allocator.allocate_ip(allocator.start(dry_run=True), f"10.96.0.{10 + i}")
            with pytest.raises(AllocationError, match="provided port is already allocated"):
                allocator.allocate_port(allocator.start(dry_run=True), 30010 + i)
        await store.delete("/registry/core/services/default/s0", expected_revision=None)
        await allocator.sync()
        assert allocator.allocate_ip(allocator.start(dry_run=True), "10.96.0.10") == "10.96.0.10"
        allocator.close()
    finally:
        await store.close()
