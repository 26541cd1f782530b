"""Admission runs each plugin for exactly the operations and resources it declares it handles, calls a
plugin's synchronous ``admit`` in place of its coroutine, notices plugins added or removed at any time,
and judges a create's namespace from the one read the server made for its guarded create."""

from __future__ import annotations

import random
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from kubeloop.api import ResourceInfo
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, App, create_app
from kubeloop.server._admission import (
    Admission,
    AdmissionAttributes,
    AdmissionChain,
    NamespaceLifecycle,
    admit,
    run_admission,
)
from kubeloop.store import KeyValue, SqliteStore
from kubeloop.testing import FakeClock

from ._patchable import PatchableStore

CM = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
MERGE = {"content-type": "application/merge-patch+json"}


class CreatesOfConfigMaps:
    """Declares it handles CREATE of configmaps only; records every call, sync and async alike."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.called: list[tuple[str, str, str]] = []

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        self.asked.append((operation, resource.plural))
        return operation == "CREATE" and resource.plural == "configmaps"

    async def __call__(self, attributes: AdmissionAttributes, obj: Any, old: Any) -> None:
        raise AssertionError("admit is called in place of __call__")

    def admit(self, attributes: AdmissionAttributes, obj: Any, old: Any) -> Awaitable[None] | None:
        self.called.append((attributes.operation, attributes.resource.plural, attributes.name))
        return None


class Everything:
    """No ``handles``: called for every write."""

    def __init__(self) -> None:
        self.called: list[tuple[str, str, str]] = []

    async def __call__(self, attributes: AdmissionAttributes, obj: Any, old: Any) -> None:
        self.called.append((attributes.operation, attributes.resource.plural, attributes.name))


def _configmaps(app: App) -> ResourceInfo:
    info = app.state.kinds.get("", "v1", "configmaps")
    assert info is not None
    return info


async def _writes(client: httpx.AsyncClient, suffix: str) -> None:
    for base in (CM, SECRETS):
        assert (await client.post(base, json={"metadata": {"name": f"a{suffix}"}})).status_code == 201
        r = await client.patch(f"{base}/a{suffix}", json={"metadata": {"labels": {"x": "y"}}}, headers=MERGE)
        assert r.status_code == 200, r.text
        assert (await client.delete(f"{base}/a{suffix}")).status_code == 200


async def test_a_plugin_runs_for_exactly_the_operations_it_handles(app: App, client: httpx.AsyncClient) -> None:
    picky, every = CreatesOfConfigMaps(), Everything()
    app.admission.extend([picky, every])
    await _writes(client, "1")
    await _writes(client, "2")
    assert picky.called == [("CREATE", "configmaps", "a1"), ("CREATE", "configmaps", "a2")]
    assert every.called == [(op, plural, f"a{n}") for n in "12" for plural in ("configmaps", "secrets")
                            for op in ("CREATE", "UPDATE", "DELETE")]
    # Asked once per (operation, resource), not once per write.
    assert sorted(picky.asked) == sorted({(op, p) for op in ("CREATE", "UPDATE", "DELETE")
                                          for p in ("configmaps", "secrets")})


async def test_plugins_added_or_removed_later_are_seen_by_the_next_write(app: App, client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json={"metadata": {"name": "before"}})).status_code == 201
    picky = CreatesOfConfigMaps()
    app.admission.append(picky)
    assert (await client.post(CM, json={"metadata": {"name": "after"}})).status_code == 201
    app.admission.remove(picky)
    assert (await client.post(CM, json={"metadata": {"name": "removed"}})).status_code == 201
    app.admission.insert(0, picky)
    assert (await client.post(CM, json={"metadata": {"name": "inserted"}})).status_code == 201
    del app.admission[0]
    assert (await client.post(CM, json={"metadata": {"name": "deleted"}})).status_code == 201
    chain = app.admission
    chain += [picky]
    assert (await client.post(CM, json={"metadata": {"name": "added"}})).status_code == 201
    assert [name for _, _, name in picky.called] == ["after", "inserted", "added"]


MUTATIONS: dict[str, Any] = {
    "append": lambda c, p: c.append(p),
    "extend": lambda c, p: c.extend([p]),
    "insert": lambda c, p: c.insert(0, p),
    "iadd": lambda c, p: c.__iadd__([p]),
    "imul": lambda c, p: c.__imul__(2),
    "setitem": lambda c, p: c.__setitem__(0, p),
    "setslice": lambda c, p: c.__setitem__(slice(0, 1), [p]),
    "delitem": lambda c, p: c.__delitem__(0),
    "remove": lambda c, p: c.remove(c[0]),
    "pop": lambda c, p: c.pop(),
    "clear": lambda c, p: c.clear(),
    "sort": lambda c, p: c.sort(key=lambda plugin: type(plugin).__name__),
    "reverse": lambda c, p: c.reverse(),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_every_list_mutation_drops_the_cached_plans(app: App, mutation: str) -> None:
    configmaps = _configmaps(app)
    first, second = Everything(), CreatesOfConfigMaps()
    chain = AdmissionChain([first, second])
    for operation in ("CREATE", "DELETE"):
        chain.plan(operation, configmaps)  # cached before the change
    MUTATIONS[mutation](chain, Everything())
    for operation in ("CREATE", "DELETE"):
        fresh = AdmissionChain(list(chain)).plan(operation, configmaps)
        assert chain.plan(operation, configmaps) == fresh, mutation


async def test_a_plain_list_chain_runs_the_same_plugins(app: App) -> None:
    picky, every = CreatesOfConfigMaps(), Everything()
    configmaps = _configmaps(app)
    for operation in ("CREATE", "UPDATE", "DELETE"):
        attrs = AdmissionAttributes(operation, configmaps, "default", "x")
        await run_admission([picky, every], attrs, {}, None)
    assert picky.called == [("CREATE", "configmaps", "x")]
    assert [op for op, _, _ in every.called] == ["CREATE", "UPDATE", "DELETE"]


@pytest.mark.parametrize("phase", ["missing", "Active", "Terminating", "deleting"])
async def test_namespace_lifecycle_judges_a_passed_read_as_it_judges_its_own(
    app: App, store: SqliteStore, phase: str
) -> None:
    key = "/registry/core/namespaces/team"
    if phase != "missing":
        meta: dict[str, Any] = {"name": "team"}
        if phase == "deleting":
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        body = {"metadata": meta, "status": {"phase": "Terminating" if phase == "Terminating" else "Active"}}
        await store.create(key, lambda revision: orjson.dumps(body))
    configmaps = _configmaps(app)
    outcomes: list[tuple[type[Exception], str, Any] | None] = []
    for passed in (False, True):
        plugin = NamespaceLifecycle(store)
        state = (await store.get(key),) if passed else None
        attrs = AdmissionAttributes("CREATE", configmaps, "team", "x", namespace_state=state)
        try:
            await plugin(attrs, {}, None)
            outcomes.append(None)
        except Exception as error:
            outcomes.append((type(error), str(error), getattr(error, "details", None)))
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] is None) == (phase == "Active")


class Named:
    """Records its name in ``log``; waits first when ``waits`` (a coroutine plugin), else runs as ``admit``."""

    def __init__(self, name: str, log: list[str], *, waits: bool, refuses: bool = False) -> None:
        self.name, self.log, self.waits, self.refuses = name, log, waits, refuses

    async def __call__(self, attributes: AdmissionAttributes, obj: Any, old: Any) -> None:
        raise AssertionError("admit is called in place of __call__")

    def admit(self, attributes: AdmissionAttributes, obj: Any, old: Any) -> Awaitable[None] | None:
        if self.waits:
            return self._wait()
        self._run()
        return None

    async def _wait(self) -> None:
        self.log.append(f"{self.name}:waited")
        self._run()

    def _run(self) -> None:
        self.log.append(self.name)
        if self.refuses:
            raise PermissionError(self.name)


@pytest.mark.parametrize("shape", ["sss", "sws", "wsw", "www", "swr", "rws", "wrs"])
async def test_the_chain_runs_in_order_whether_plugins_wait_or_not(app: App, shape: str) -> None:
    """``admit`` (plain call, awaiting only from the first plugin that waits) and ``run_admission`` agree,
    over a plain list and an :class:`AdmissionChain`."""
    attrs = AdmissionAttributes("CREATE", _configmaps(app), "default", "x")
    expected: list[str] = []
    for i, c in enumerate(shape):
        expected += [f"p{i}:waited", f"p{i}"] if c == "w" else [f"p{i}"]
        if c == "r":
            expected.append("refused")
            break
    for chain_type in (list, AdmissionChain):
        for general in (False, True):
            log: list[str] = []
            chain: list[Admission] = chain_type(
                Named(f"p{i}", log, waits=c == "w", refuses=c == "r") for i, c in enumerate(shape))
            try:
                if general:
                    await run_admission(chain, attrs, {}, None)
                else:
                    pending = admit(chain, attrs, {}, None)
                    assert (pending is None) == ("w" not in shape.split("r")[0])
                    if pending is not None:
                        await pending
            except PermissionError:
                log.append("refused")
            assert log == expected, (chain_type, general)


class CountingStore(PatchableStore):
    """The real store, counting reads of each key (a wrapper: the compiled build's store takes no
    interpreted subclass)."""

    reads: dict[str, int]

    async def get(self, key: str, *, revision: int | None = None) -> KeyValue | None:
        self.reads[key] = self.reads.get(key, 0) + 1
        kv: KeyValue | None = await self.inner.get(key, revision=revision)
        return kv


async def test_a_create_reads_its_namespace_once_and_namespace_lifecycle_still_refuses(tmp_path: Path) -> None:
    store = CountingStore(await SqliteStore.open(tmp_path / "db"))
    store.reads = {}
    app = create_app(store=store, clock=FakeClock(), rng=random.Random(7), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kubeloop") as client:
            assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201
            store.reads.clear()
            r = await client.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "a"}})
            assert r.status_code == 201, r.text
            assert store.reads.get("/registry/core/namespaces/team") == 1
            r = await client.post("/api/v1/namespaces/nowhere/configmaps", json={"metadata": {"name": "a"}})
            assert r.status_code == 404, r.text
            assert r.json()["message"] == 'namespaces "nowhere" not found'
            assert (await client.delete("/api/v1/namespaces/team")).status_code == 200
            r = await client.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "b"}})
            assert r.status_code == 403, r.text
            assert "because it is being terminated" in r.json()["message"]
    finally:
        await app.shutdown()
        await store.close()
