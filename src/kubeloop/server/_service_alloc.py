"""Cluster IP and node port allocation for Services: never one address or port for two Services.

Contract. :class:`ServiceAllocator` hands out cluster IPs from the service CIDR (``10.96.0.0/12``,
kube-apiserver's ``--service-cluster-ip-range`` default) and node ports from ``30000-32767``
(``--service-node-port-range``). What is in use is derived from the stored Services themselves: the
first allocation reads every stored Service (so allocations survive a restart) and opens a store watch
on the Services' prefix; every later allocation first takes the changes that watch has pending, so a
deleted Service's address and ports are free again, and a created one's are taken. SqliteStore feeds a
watch in the commit itself, so the state an allocation sees includes every committed write. An address
or port handed out but not yet committed is *reserved* until its :class:`Allocation` is finished
(committed or not), so two concurrent creates never get the same one. Dry-run allocations check and
pick but reserve nothing. A watch that falls behind (Compacted) is replaced by reading everything again.

Upstream (k/k release-1.32) keeps allocation bitmaps in etcd (``pkg/registry/core/service/ipallocator``,
``portallocator``, repaired by ``pkg/registry/core/service/ipallocator/controller/repair.go``); the
outcome is the same: the allocated set is what stored Services hold. Dynamic choices follow the bitmap
allocator's ``randomScanStrategyWithOffset``: a random free value above the range's offset
(``calculateRangeOffset``: 256 addresses, 86 ports) first, the low part (kept for static requests,
e.g. ``10.96.0.1`` for the ``kubernetes`` Service) only when the high part is full. Randomness is the
server's seeded ``rng``. Errors carry upstream's texts (``ErrAllocated``, ``ErrNotInRange``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeloop.store import Compacted, Store, StoreWatch

__all__ = [
    "IP_ALLOCATED",
    "PORT_ALLOCATED",
    "SERVICE_CIDR",
    "Allocation",
    "AllocationError",
    "ServiceAllocator",
    "service_allocations",
]

SERVICE_CIDR = "10.96.0.0/12"
NODE_PORT_RANGE = (30000, 32767)
IP_ALLOCATED = "provided IP is already allocated"
PORT_ALLOCATED = "provided port is already allocated"
_PREFIX = "/registry/core/services/"


class AllocationError(Exception):
    """A requested value cannot be had (its text is upstream's), or a range is full (``full``)."""

    def __init__(self, message: str, *, full: bool = False) -> None:
        super().__init__(message)
        self.full = full


def service_allocations(obj: Any) -> tuple[frozenset[str], frozenset[int]]:
    """The cluster IPs and node ports (health check node port included) a stored Service holds."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return frozenset(), frozenset()
    ips = {ip for ip in (spec.get("clusterIPs") or [spec.get("clusterIP")]) if isinstance(ip, str) and ip and ip != "None"}
    ports = {p.get("nodePort") for p in spec.get("ports") or [] if isinstance(p, dict)}
    ports.add(spec.get("healthCheckNodePort"))
    return frozenset(ips), frozenset(p for p in ports if isinstance(p, int) and not isinstance(p, bool) and p)


@dataclass(slots=True)
class Allocation:
    """What one write reserved; ``finish()`` (idempotent) hands the reservations back once the write has
    committed (the stored Service now holds them) or failed (nobody does)."""

    allocator: ServiceAllocator
    dry_run: bool
    ips: list[int] = field(default_factory=list)  # addresses as integers
    ports: list[int] = field(default_factory=list)

    def finish(self) -> None:
        if not self.dry_run:
            self.allocator._release(self)
        self.ips.clear()
        self.ports.clear()


class _Range:
    """One range of integers (addresses as offsets, or ports) with a static low part."""

    def __init__(self, first: int, size: int, offset: int) -> None:
        self.first, self.size, self.offset = first, size, offset

    def contains(self, value: int) -> bool:
        return self.first <= value < self.first + self.size

    def pick(self, taken: Callable[[int], bool], rng: random.Random) -> int | None:
        """randomScanStrategyWithOffset: a random free value of the upper part, else of the lower part."""
        for low, high in ((self.offset, self.size), (0, self.offset)):
            count = high - low
            if count <= 0:
                continue
            start = rng.randrange(count)
            for i in range(count):
                value = self.first + low + (start + i) % count
                if not taken(value):
                    return value
        return None


def _offset(size: int, *, minimum: int, maximum: int, step: int) -> int:
    """calculateRangeOffset (ipallocator: 16, 256, /16; portallocator: 16, 128, /32)."""
    return min(max(minimum, size // step), maximum) if size >= minimum else 0


class ServiceAllocator:
    """Cluster IPs and node ports in use, from the stored Services. One per API server (ServerState)."""

    def __init__(self, store: Store, rng: random.Random, *, cidr: str = SERVICE_CIDR,
                 node_ports: tuple[int, int] = NODE_PORT_RANGE) -> None:
        self._store = store
        self._rng = rng
        self.network = ipaddress.ip_network(cidr)
        # The network and broadcast addresses are never handed out (ipallocator NewAllocatorCIDRRange).
        size = self.network.num_addresses - 2
        self._ips = _Range(int(self.network.network_address) + 1, size, _offset(size, minimum=16, maximum=256, step=16))
        port_size = node_ports[1] - node_ports[0] + 1
        self.node_ports = node_ports
        self._ports = _Range(node_ports[0], port_size, _offset(port_size, minimum=16, maximum=128, step=32))
        self._held: dict[str, tuple[frozenset[str], frozenset[int]]] = {}  # store key -> what it holds
        self._ip_users: dict[int, int] = {}  # address (as an integer) -> how many stored Services hold it
        self._port_users: dict[int, int] = {}
        self._reserved_ips: set[int] = set()
        self._reserved_ports: set[int] = set()
        self._watch: StoreWatch | None = None
        self._lock: asyncio.Lock | None = None

    # -- the stored state ------------------------------------------------------------------------
    async def sync(self) -> None:
        """Bring the in-use sets up to the store's committed state (read everything the first time)."""
        if self._watch is not None:
            try:
                events = self._watch.poll()
            except Compacted:
                self._watch = None
            else:
                for event in events:
                    self._hold(event.kv.key, None if event.type == "DELETE" else orjson.loads(event.kv.value))
                return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._watch is not None:
                return
            result = await self._store.range(_PREFIX)
            self._held.clear()
            self._ip_users.clear()
            self._port_users.clear()
            for kv in result.items:
                self._hold(kv.key, orjson.loads(kv.value))
            self._watch = self._store.watch(_PREFIX, after=result.revision)

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def _hold(self, key: str, obj: Any) -> None:
        before = self._held.pop(key, (frozenset(), frozenset()))
        after = service_allocations(obj) if obj is not None else (frozenset(), frozenset())
        _count(self._ip_users, _addresses(before[0]), -1)
        _count(self._port_users, before[1], -1)
        _count(self._ip_users, _addresses(after[0]), 1)
        _count(self._port_users, after[1], 1)
        if after[0] or after[1]:
            self._held[key] = after

    def held_by(self, key: str) -> tuple[frozenset[str], frozenset[int]]:
        return self._held.get(key, (frozenset(), frozenset()))

    # -- allocation ----------------------------------------------------------------------------------
    def start(self, *, dry_run: bool) -> Allocation:
        """A new allocation; a dry-run one checks and picks but reserves nothing."""
        return Allocation(self, dry_run)

    def allocate_ip(self, allocation: Allocation, requested: str) -> str:
        """``requested`` (if free and in range) or a free address when it is ""."""
        if requested:
            address = ipaddress.ip_address(requested)
            if address.version != self.network.version or not self._ips.contains(int(address)):
                raise AllocationError(f"provided IP is not in the valid range. The range of valid IPs is {self.network}")
            value = int(address)
            if self._ip_taken(value, allocation):
                raise AllocationError(IP_ALLOCATED)
        else:
            picked = self._ips.pick(lambda v: self._ip_taken(v, allocation), self._rng)
            if picked is None:
                raise AllocationError("range is full", full=True)
            value = picked
        if not allocation.dry_run:
            self._reserved_ips.add(value)
        allocation.ips.append(value)
        return str(ipaddress.ip_address(value))

    def _ip_taken(self, value: int, allocation: Allocation) -> bool:
        return value in self._ip_users or value in self._reserved_ips or value in allocation.ips

    def allocate_port(self, allocation: Allocation, requested: int) -> int:
        """``requested`` (if free and in range) or a free node port when it is 0."""
        if requested:
            if not self._ports.contains(requested):
                low, high = self.node_ports
                raise AllocationError(f"provided port is not in the valid range. The range of valid ports is {low}-{high}")
            if self._port_taken(requested, allocation):
                raise AllocationError(PORT_ALLOCATED)
            port = requested
        else:
            picked = self._ports.pick(lambda v: self._port_taken(v, allocation), self._rng)
            if picked is None:
                raise AllocationError("range is full", full=True)
            port = picked
        if not allocation.dry_run:
            self._reserved_ports.add(port)
        allocation.ports.append(port)
        return port

    def _port_taken(self, value: int, allocation: Allocation) -> bool:
        return value in self._port_users or value in self._reserved_ports or value in allocation.ports

    def _release(self, allocation: Allocation) -> None:
        self._reserved_ips.difference_update(allocation.ips)
        self._reserved_ports.difference_update(allocation.ports)


def _addresses(ips: Iterable[str]) -> list[int]:
    found: list[int] = []
    for ip in ips:
        try:
            found.append(int(ipaddress.ip_address(ip)))
        except ValueError:
            continue
    return found


def _count(users: dict[Any, int], values: Iterable[Any], delta: int) -> None:
    for value in values:
        count = users.get(value, 0) + delta
        if count > 0:
            users[value] = count
        else:
            users.pop(value, None)
