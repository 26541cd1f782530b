"""20 clients doing read-modify-write increments with resourceVersion preconditions lose nothing."""

from __future__ import annotations

import asyncio

import httpx

CM = "/api/v1/namespaces/default/configmaps"


async def test_concurrent_increments_with_preconditions_lose_nothing(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"metadata": {"name": "counter"}, "data": {"n": "0"}})
    conflicts = 0

    async def increment() -> None:
        nonlocal conflicts
        while True:
            current = (await client.get(f"{CM}/counter")).json()
            current["data"]["n"] = str(int(current["data"]["n"]) + 1)
            r = await client.put(f"{CM}/counter", json=current)
            if r.status_code == 200:
                return
            assert r.status_code == 409, r.text
            conflicts += 1

    await asyncio.gather(*(increment() for _ in range(20)))
    assert (await client.get(f"{CM}/counter")).json()["data"]["n"] == "20"


async def test_concurrent_patches_without_preconditions_all_apply(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"metadata": {"name": "bag"}})
    headers = {"content-type": "application/merge-patch+json"}
    await asyncio.gather(*(
        client.patch(f"{CM}/bag", content=f'{{"data":{{"k{i}":"v"}}}}'.encode(), headers=headers) for i in range(20)
    ))
    assert len((await client.get(f"{CM}/bag")).json()["data"]) == 20
