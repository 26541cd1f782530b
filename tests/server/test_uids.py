"""Object uids are random version-4 UUIDs drawn from the server's injected ``random.Random``."""

from __future__ import annotations

import random
import uuid

import httpx
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import KindRegistry, SystemClock
from kubeloop.server import App
from kubeloop.server._state import ServerState


async def test_created_objects_get_version_4_uuids_from_the_seeded_rng(app: App, client: httpx.AsyncClient) -> None:
    app.state.rng = random.Random(11)
    expected = random.Random(11)
    for i in range(50):
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"u{i}"}}
        r = await client.post("/api/v1/namespaces/default/configmaps", content=orjson.dumps(body))
        uid = r.json()["metadata"]["uid"]
        assert uid == str(uuid.UUID(int=expected.getrandbits(128), version=4))
        parsed = uuid.UUID(uid)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64))
def test_uid_text_is_the_uuid_modules_for_the_same_bits(seed: int) -> None:
    state = ServerState(store=None, clock=SystemClock(), kinds=KindRegistry(), rng=random.Random(seed))  # type: ignore[arg-type]
    expected = random.Random(seed)
    for _ in range(20):
        assert state.new_uid() == str(uuid.UUID(int=expected.getrandbits(128), version=4))
