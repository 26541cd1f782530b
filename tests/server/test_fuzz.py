"""Hypothesis fuzz of request bodies and query parameters: never a 5xx, every rejection is a 4xx
``Status`` that stores nothing, and the server keeps serving afterwards."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import httpx
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**40), max_value=2**40) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
names = st.one_of(st.sampled_from(["a", "b", "Bad_Name", "", "x" * 300, "-x", "ok.name"]), json_values)
metadata = st.fixed_dictionaries({}, optional={
    "name": names, "generateName": names, "namespace": st.sampled_from(["default", "other", ""]) | json_values,
    "labels": json_values | st.dictionaries(st.text(max_size=70), st.text(max_size=70), max_size=3),
    "annotations": json_values, "finalizers": json_values | st.lists(st.text(max_size=20), max_size=3),
    "ownerReferences": json_values, "resourceVersion": st.sampled_from(["1", "0", "abc", "-1", "999999"]) | json_values,
    "uid": json_values, "deletionTimestamp": json_values, "generation": json_values,
})
objects = st.fixed_dictionaries({}, optional={
    "apiVersion": st.sampled_from(["v1", "apps/v1", "bogus/v9"]) | json_values,
    "kind": st.sampled_from(["ConfigMap", "Deployment", "Scale", "Lease"]) | json_values,
    "metadata": metadata | json_values, "data": json_values, "spec": json_values, "status": json_values,
})
bodies = st.one_of(
    objects.map(orjson.dumps),
    json_values.map(orjson.dumps),
    st.lists(st.fixed_dictionaries({"op": st.sampled_from(["add", "remove", "replace", "test", "move", "bad"]),
                                     "path": st.sampled_from(["/data/x", "/metadata/name", "/spec", "", "x"])},
                                    optional={"value": json_values, "from": st.text(max_size=8)}), max_size=3).map(orjson.dumps),
    st.binary(max_size=40),
)
query_keys = ["dryRun", "fieldManager", "fieldValidation", "force", "labelSelector", "fieldSelector", "limit",
              "continue", "resourceVersion", "resourceVersionMatch", "gracePeriodSeconds", "propagationPolicy",
              "orphanDependents", "timeoutSeconds", "sendInitialEvents", "preconditions.uid", "includeObject"]
queries = st.dictionaries(st.sampled_from(query_keys), st.sampled_from(["All", "x", "", "1", "-5", "true", "Exact",
                                                                         "a in (", "a=b", "Orphan"]) | st.text(max_size=10),
                          max_size=3)
paths = st.sampled_from([
    "/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/configmaps/a",
    "/apis/apps/v1/namespaces/default/deployments/d", "/apis/apps/v1/namespaces/default/deployments/d/status",
    "/apis/apps/v1/namespaces/default/deployments/d/scale", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l",
    "/api/v1/namespaces/default/pods", "/api/v1/namespaces", "/api/v1/nodes/n",
])
content_types = st.sampled_from(["application/json", "application/merge-patch+json", "application/json-patch+json",
                                 "application/strategic-merge-patch+json", "application/apply-patch+yaml",
                                 "application/yaml", "text/plain", ""])
methods = st.sampled_from(["POST", "PUT", "PATCH", "DELETE", "GET"])


async def _setup(tmp: Path) -> tuple[SqliteStore, Any, httpx.AsyncClient]:
    store = await SqliteStore.open(tmp / "fuzz.db")
    app = create_app(store=store, clock=FakeClock(), rng=random.Random(3), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await app.startup()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kubeloop")
    await client.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "a"}, "data": {"x": "1"}})
    await client.post("/apis/apps/v1/namespaces/default/deployments", json={"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                                                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    return store, app, client


def test_fuzzed_requests_never_5xx_and_rejections_store_nothing(tmp_path: Path) -> None:
    with asyncio.Runner() as runner:
        store, app, client = runner.run(_setup(tmp_path))

        async def one(method: str, path: str, body: bytes, ctype: str, query: dict[str, str]) -> None:
            before = store.revision
            query.pop("watch", None)
            r = await client.request(method, path, params=query, content=body if method != "GET" else None,
                                     headers={"content-type": ctype})
            assert r.status_code < 500, (method, path, query, body, r.text)
            if r.status_code >= 400:
                status = r.json()
                assert status["kind"] == "Status" and status["code"] == r.status_code
                assert store.revision == before, "a rejected request stored something"
            health = await client.get("/healthz")
            assert health.status_code == 200

        examples: list[str] = []

        @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
        @given(methods, paths, bodies, content_types, queries)
        def check(method: str, path: str, body: bytes, ctype: str, query: dict[str, str]) -> None:
            runner.run(one(method, path, body, ctype, query))
            examples.append(method)

        try:
            check()
            assert len(examples) >= 100, "hypothesis ran the examples"
        finally:
            runner.run(client.aclose())
            runner.run(app.shutdown())
            runner.run(store.close())
