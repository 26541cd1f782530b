"""What every handler shares: the store, clock, randomness, kinds, strategies, admission, validators.

One :class:`ServerState` per app. Keys follow the etcd layout upstream uses
(``/registry/<group or core>/<plural>/<namespace>/<name>``; cluster-scoped kinds have no namespace
segment), so a prefix read is a collection. Stored values are the JSON object with its own
``resourceVersion`` embedded (the store calls :func:`renderer` with the commit revision), which is
what lets reads and watches serve stored bytes unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeloop.api import ApiError, Clock, FieldError, KindRegistry, ResourceInfo, builtin_schema
from kubeloop.server._admission import Admission, AdmissionChain
from kubeloop.server._service_alloc import ServiceAllocator
from kubeloop.server._strategy import GenericStrategy, strategy_for
from kubeloop.store import KeyNotFound, Render, RevisionMismatch, Store

__all__ = [
    "GUARANTEED_UPDATE_RETRIES",
    "ServerState",
    "Validator",
    "collection_prefix",
    "guaranteed_update",
    "namespace_key",
    "object_key",
    "renderer",
]

# (object, the stored object on update or None, the request's warnings) -> what is wrong with it.
Validator = Callable[[dict[str, Any], dict[str, Any] | None, list[str]], list[FieldError]]
# A read-modify-write (update, delete) retries a lost compare-and-swap until it wins, as upstream's
# GuaranteedUpdate does; the cap only stops a livelock.
GUARANTEED_UPDATE_RETRIES = 1000
# apimachinery pkg/util/rand: no vowels (no words), no confusable characters.
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_PREFIX = 63 - 5


def object_key(info: ResourceInfo, namespace: str, name: str) -> str:
    group = info.group or "core"
    if info.namespaced:
        return f"/registry/{group}/{info.plural}/{namespace}/{name}"
    return f"/registry/{group}/{info.plural}/{name}"


def namespace_key(namespace: str) -> str:
    """The store key of a Namespace object."""
    return f"/registry/core/namespaces/{namespace}"


def collection_prefix(info: ResourceInfo, namespace: str) -> str:
    group = info.group or "core"
    if info.namespaced and namespace:
        return f"/registry/{group}/{info.plural}/{namespace}/"
    return f"/registry/{group}/{info.plural}/"


def renderer(obj: dict[str, Any]) -> Render:
    """A ``Render`` that stamps the commit revision into ``obj`` and serialises it (once)."""

    def render(revision: int) -> bytes:
        obj["metadata"]["resourceVersion"] = str(revision)
        return orjson.dumps(obj)

    return render


async def guaranteed_update(
    store: Store,
    key: str,
    mutate: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    missing: Callable[[], ApiError],
    dry_run: bool = False,
    attempts: int = GUARANTEED_UPDATE_RETRIES,
) -> bool:
    """Read ``key``, ``mutate`` the decoded object and compare-and-swap the result back, reading
    afresh after a lost race: upstream's ``GuaranteedUpdate`` straight on storage (no strategy, no
    admission), as subresources such as binding and eviction use it. An absent key raises
    ``missing()``; errors ``mutate`` raises propagate; ``dry_run`` mutates once and stores nothing.
    False when every one of ``attempts`` lost its race."""
    for _ in range(attempts):
        kv = await store.get(key)
        if kv is None:
            raise missing()
        obj = mutate(orjson.loads(kv.value))
        if dry_run:
            return True
        try:
            await store.update(key, renderer(obj), expected_revision=kv.mod_revision)
        except (RevisionMismatch, KeyNotFound):
            continue
        return True
    return False


# uuid.UUID(version=4): clear the variant and version bits, then set variant RFC 4122 and version 4.
_UUID_KEEP = ~((0xC000 << 48) | (0xF000 << 64)) & ((1 << 128) - 1)
_UUID_SET = (0x8000 << 48) | (4 << 76)


@dataclass
class ServerState:
    store: Store
    clock: Clock
    kinds: KindRegistry
    rng: random.Random
    admission: list[Admission] = field(default_factory=AdmissionChain)
    # Extra validation per (group, kind), e.g. a CRD's openAPIV3Schema (the CRD helper fills it).
    validators: dict[tuple[str, str], Validator] = field(default_factory=dict)
    strategies: dict[tuple[str, str], GenericStrategy] = field(default_factory=dict)
    # Records a write's manager in managedFields in place: (WriteRequest, new, old or None, the time).
    field_manager: Callable[[Any, dict[str, Any], dict[str, Any] | None, str, dict[str, Any] | None], None] | None = None
    # The openAPIV3Schema of a served custom kind (group, version, kind), for apply and managedFields.
    custom_schema: Callable[[str, str, str], Mapping[str, Any] | None] | None = None
    # The authorizer of the security chain in front of the app (set by it), for admission expressions
    # that ask what a user may do (``authorizer`` in CEL); None: every request is let through.
    authorizer: Any = None
    # The app's request metrics (a RequestMetrics): the watch handler counts the watches open there.
    request_metrics: Any = None

    # The last built-in kind schema() answered for, and its schema: a write asks twice (field
    # validation, managedFields) and writes come in runs of one kind. A built-in kind's schema never
    # changes (ResourceInfo is frozen; the definitions are loaded once).
    _last_schema: tuple[ResourceInfo | None, Mapping[str, Any] | None] = field(init=False, repr=False, compare=False)

    # Cluster IPs and node ports of Services (reads the store only when a Service is first written).
    service_allocator: ServiceAllocator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Set here, not by a field default: mypyc's compiled class leaves an init=False default unset.
        self._last_schema = (None, None)
        self.service_allocator = ServiceAllocator(self.store, self.rng)

    def schema(self, info: ResourceInfo) -> Mapping[str, Any] | None:
        last = self._last_schema
        if last[0] is info:
            return last[1]
        if info.custom:
            return self.custom_schema(info.group, info.version, info.kind) if self.custom_schema else None
        schema = builtin_schema(info.group, info.version, info.kind)
        self._last_schema = (info, schema)
        return schema

    def strategy(self, info: ResourceInfo) -> GenericStrategy:
        key = (info.group, info.kind)
        strategy = self.strategies.get(key)
        if strategy is None or (strategy.info is not info and strategy.info != info):
            strategy = strategy_for(info, clock=self.clock, allocator=self.service_allocator)
            self.strategies[key] = strategy
        return strategy

    def new_uid(self) -> str:
        """A random (version 4, RFC 4122 variant) UUID from ``rng``: ``str(uuid.UUID(int=bits,
        version=4))``, formatted without building the UUID object."""
        # Hex in dash-separated groups of four digits (8 groups), then the three dashes UUID text has
        # not (8-4-4-4-12): the first by replace, the last two by one rsplit and join (three slices
        # and two concatenations cost about 1k instructions more: each is a bytecode step and an object).
        text = (self.rng.getrandbits(128) & _UUID_KEEP | _UUID_SET).to_bytes(16, "big").hex("-", 2).replace("-", "", 1)
        return "".join(text.rsplit("-", 2))

    def generate_name(self, prefix: str) -> str:
        """apiserver pkg/storage/names SimpleNameGenerator: prefix (cut to 58) plus 5 random chars."""
        suffix = "".join(self.rng.choice(_GENERATE_ALPHABET) for _ in range(5))
        return prefix[:_MAX_GENERATED_PREFIX] + suffix
