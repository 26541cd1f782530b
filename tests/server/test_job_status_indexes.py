"""A Job status write's ``completedIndexes`` and ``failedIndexes`` through the HTTP API: format, which Jobs
may carry them, and no index both completed and failed; a refused write changes nothing.

Upstream (release 1.32): k/k ``pkg/apis/batch/validation/validation.go`` ``validateJobStatus``
(``validateIndexesFormat``, ``parseIndexInterval``, ``validateFailedIndexesNotOverlapCompleted``) with the
job status strategy's JobManagedBy options (``pkg/registry/batch/job/strategy.go``: each rule only when
the fields it reads changed).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.server import App

from ._uvicorn import Kubectl, serve, write_kubeconfig
from .test_job_api import JOBS, causes, created, job


def indexed(**spec: Any) -> dict[str, Any]:
    return job(completionMode="Indexed", completions=5, parallelism=2, **spec)


async def write(client: httpx.AsyncClient, body: dict[str, Any], **status: Any) -> httpx.Response:
    return await client.put(f"{JOBS}/{body['metadata']['name']}/status",
                            json={**body, "status": {**(body.get("status") or {}), **status}})


async def test_indexes_must_be_increasing_intervals_below_completions(client: httpx.AsyncClient) -> None:
    body = await created(client, indexed(backoffLimitPerIndex=1))
    cases = {
        "0,x": 'error parsing completedIndexes: cannot convert string to integer for index: "x"',
        "1-2-3": "error parsing completedIndexes: the fragment \"1-2-3\" violates the requirement that an index "
                 "interval can have at most two parts separated by '-'",
        "0,5": 'error parsing completedIndexes: too large index: "5"',
        "2-7": 'error parsing completedIndexes: too large index: "7"',
        "3-3": "error parsing completedIndexes: non-increasing order, previous: 3, current: 3",
        "1-2,2": "error parsing completedIndexes: non-increasing order, previous: 2, current: 2",
        "-1": 'error parsing completedIndexes: cannot convert string to integer for index: ""',
    }
    for text, message in cases.items():
        assert causes(await write(client, body, completedIndexes=text)) == [
            ("FieldValueInvalid", "status.completedIndexes", f'Invalid value: "{text}": {message}')], text
    assert causes(await write(client, body, failedIndexes="4,1")) == [
        ("FieldValueInvalid", "status.failedIndexes",
         'Invalid value: "4,1": error parsing failedIndexes: non-increasing order, previous: 4, current: 1')]
    stored = (await client.get(f"{JOBS}/pi")).json()
    assert stored["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]
    ok = await write(client, body, completedIndexes="0-2", failedIndexes="4", succeeded=3)
    assert ok.status_code == 200, ok.text
    assert (ok.json()["status"]["completedIndexes"], ok.json()["status"]["failedIndexes"]) == ("0-2", "4")


async def test_failed_indexes_need_backoff_limit_per_index_and_completed_ones_an_indexed_job(
        client: httpx.AsyncClient) -> None:
    plain = await created(client, indexed())
    assert causes(await write(client, plain, failedIndexes="")) == [
        ("FieldValueInvalid", "status.failedIndexes",
         'Invalid value: "": cannot set non-null failedIndexes when backoffLimitPerIndex is null')]
    counted = await created(client, job("counted", completions=3))
    assert causes(await write(client, counted, completedIndexes="1")) == [
        ("FieldValueInvalid", "status.completedIndexes",
         'Invalid value: "1": cannot set non-empty completedIndexes when non-indexed completion mode')]


async def test_an_index_cannot_be_both_completed_and_failed(client: httpx.AsyncClient) -> None:
    body = await created(client, indexed(backoffLimitPerIndex=0))
    assert causes(await write(client, body, completedIndexes="0,2-4", failedIndexes="1,3")) == [
        ("FieldValueInvalid", "status.failedIndexes",
         'Invalid value: "1,3": failedIndexes and completedIndexes overlap at index: 3')]
    apart = await write(client, body, completedIndexes="0,2", failedIndexes="1,3-4")
    assert apart.status_code == 200, apart.text


async def test_a_stale_index_list_does_not_block_other_status_writes(client: httpx.AsyncClient) -> None:
    body = await created(client, indexed(backoffLimitPerIndex=0))
    r = await write(client, body, completedIndexes="3-4", succeeded=2)
    assert r.status_code == 200, r.text
    # Scaled down in tandem (ElasticIndexedJob): completedIndexes now names indexes past completions, yet
    # a write that leaves it alone passes (the rule runs only when completedIndexes changes).
    current = r.json()
    current["spec"]["completions"] = current["spec"]["parallelism"] = 2
    scaled = await client.put(f"{JOBS}/pi", json=current)
    assert scaled.status_code == 200, scaled.text
    again = await write(client, scaled.json(), active=1)
    assert again.status_code == 200, again.text


async def test_succeeded_may_decrease_only_for_an_indexed_job_whose_completions_equal_parallelism(
        client: httpx.AsyncClient) -> None:
    # registry/batch/job/strategy.go: RejectDecreasingSucceededCounter = !isIndexed || completions != parallelism.
    body = await created(client, indexed())  # completions 5, parallelism 2
    counted = await write(client, body, completedIndexes="3-4", succeeded=2)
    assert counted.status_code == 200, counted.text
    assert causes(await write(client, counted.json(), completedIndexes="", succeeded=0)) == [
        ("FieldValueInvalid", "status.succeeded", "Invalid value: 0: cannot decrease the succeeded counter")]
    scaled = counted.json()
    scaled["spec"]["completions"] = scaled["spec"]["parallelism"] = 3
    scaled = await client.put(f"{JOBS}/pi", json=scaled)
    assert scaled.status_code == 200, scaled.text
    lowered = await write(client, scaled.json(), completedIndexes="", succeeded=0)
    assert lowered.status_code == 200, lowered.text
    assert not lowered.json()["status"].get("succeeded") and not lowered.json()["status"].get("completedIndexes")
    # The failed counter never decreases, whatever the Job.
    failing = await write(client, lowered.json(), failed=1)
    assert failing.status_code == 200, failing.text
    assert causes(await write(client, failing.json(), failed=0)) == [
        ("FieldValueInvalid", "status.failed", "Invalid value: 0: cannot decrease the failed counter")]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_lowers_succeeded_of_a_scalable_indexed_job_and_is_refused_otherwise(
        app: App, client: httpx.AsyncClient, tmp_path: Path) -> None:
    body = await created(client, indexed())
    assert (await write(client, body, completedIndexes="3-4", succeeded=2)).status_code == 200
    async with serve(app) as url:
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(kubeconfig, url)
        kubectl = Kubectl(kubeconfig)
        lower = ["patch", "job", "pi", "--subresource=status", "--type=merge",
                 "-p", '{"status":{"succeeded":0,"completedIndexes":""}}']
        code, _, err = await kubectl.run(*lower, ok=False)
        assert code != 0 and "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter" in err
        await kubectl.run("patch", "job", "pi", "--type=merge", "-p", '{"spec":{"completions":2,"parallelism":2}}')
        await kubectl.run(*lower)
    assert not (await client.get(f"{JOBS}/pi")).json()["status"].get("succeeded")
