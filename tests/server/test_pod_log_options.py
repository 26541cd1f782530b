"""The options of ``pods/NAME/log``: decoded by the parameter codec (400) and checked by
ValidatePodLogOptions with PodLogsQuerySplitStreams off, 1.32's default (422), before the pod is read."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ._kubelet_fixtures import PODS, node, pod, running, set_status

LOG = f"{PODS}/p/log"


@pytest.mark.parametrize(("params", "message", "causes"), [
    ({"tailLines": "-1"}, "tailLines: Invalid value: -1: must be greater than or equal to 0",
     [{"reason": "FieldValueInvalid", "message": "Invalid value: -1: must be greater than or equal to 0",
       "field": "tailLines"}]),
    ({"limitBytes": "0"}, "limitBytes: Invalid value: 0: must be greater than 0",
     [{"reason": "FieldValueInvalid", "message": "Invalid value: 0: must be greater than 0", "field": "limitBytes"}]),
    ({"sinceSeconds": "0"}, "sinceSeconds: Invalid value: 0: must be greater than 0",
     [{"reason": "FieldValueInvalid", "message": "Invalid value: 0: must be greater than 0",
       "field": "sinceSeconds"}]),
    # One Forbidden error on the empty path: field.Error prints it ": Forbidden: ...", the cause has no field.
    ({"sinceSeconds": "10", "sinceTime": "2026-12-01T00:00:00Z"},
     ": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
     [{"reason": "FieldValueForbidden", "message": "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be "
                                                   "specified"}]),
    # The split-streams gate is off in 1.32: any stream is refused (kubernetes#133005's answer).
    ({"stream": "All"}, "stream: Forbidden: may not be specified",
     [{"reason": "FieldValueForbidden", "message": "Forbidden: may not be specified", "field": "stream"}]),
])
async def test_invalid_options_are_422_even_for_a_missing_pod(
        client: httpx.AsyncClient, params: dict[str, str], message: str, causes: list[dict[str, Any]]) -> None:
    r = await client.get(LOG, params=params)
    body = r.json()
    assert (r.status_code, body["reason"], body["message"]) == (422, "Invalid", f'PodLogOptions "p" is invalid: {message}')
    assert body["details"] == {"name": "p", "kind": "PodLogOptions", "causes": causes}


async def test_several_errors_are_listed_together(client: httpx.AsyncClient) -> None:
    r = await client.get(LOG, params={"tailLines": "-2", "limitBytes": "-1", "sinceSeconds": "-5"})
    assert r.json()["message"] == (
        'PodLogOptions "p" is invalid: [tailLines: Invalid value: -2: must be greater than or equal to 0, '
        "limitBytes: Invalid value: -1: must be greater than 0, sinceSeconds: Invalid value: -5: must be greater "
        "than 0]")
    assert [c["field"] for c in r.json()["details"]["causes"]] == ["tailLines", "limitBytes", "sinceSeconds"]


@pytest.mark.parametrize(("params", "message"), [
    ({"tailLines": "ten"}, 'strconv.ParseInt: parsing "ten": invalid syntax'),
    ({"limitBytes": "1.5"}, 'strconv.ParseInt: parsing "1.5": invalid syntax'),
    ({"sinceSeconds": "99999999999999999999"}, 'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
])
async def test_a_value_that_does_not_decode_is_400(client: httpx.AsyncClient, params: dict[str, str], message: str) -> None:
    r = await client.get(LOG, params=params)
    assert (r.status_code, r.json()["reason"], r.json()["message"]) == (400, "BadRequest", message)


async def test_a_since_time_that_is_not_rfc3339_is_400(client: httpx.AsyncClient) -> None:
    r = await client.get(LOG, params={"sinceTime": "yesterday"})
    assert (r.status_code, r.json()["reason"]) == (400, "BadRequest")
    assert r.json()["message"].startswith('parsing time "yesterday" as "2006-01-02T15:04:05Z07:00"')


@pytest.mark.parametrize("params", [
    {"follow": "false", "previous": "0", "timestamps": "FALSE"},
    {"sinceTime": "2026-12-01T00:00:00.5+01:00"},
    {"sinceTime": "null", "sinceSeconds": "5"},  # "null": unset, as metav1.Time's query decoding has it
    {"tailLines": "0"},
])
async def test_valid_options_are_served(client: httpx.AsyncClient, params: dict[str, str]) -> None:
    await node(client)
    await pod(client)
    await set_status(client, "p", running("app", "kubeloop://1"))
    r = await client.get(LOG, params=params)
    assert (r.status_code, r.content) == (200, b"")
