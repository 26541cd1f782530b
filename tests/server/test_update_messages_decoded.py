"""An update's validation messages print an emptied map as upstream's decoded object holds it: empty, not nil.

Upstream validates the object decoded from the request: ``matchLabels: {}`` is an empty, non-nil Go map,
which ``field.Error`` prints with ``%#v`` as ``map[string]string{}``; its comparisons with the stored object
are semantic (``equality.Semantic.DeepEqual``: an empty slice or map equals a nil one), so an empty list
added next to an unchanged selector is no change to it (k/k ``pkg/apis/apps/validation``,
``ValidateImmutableField``).
"""

from __future__ import annotations

import copy
from typing import Any

import httpx

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
MERGE = {"Content-Type": "application/merge-patch+json"}
EMPTY_SELECTOR = ("Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, "
                  "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}")


def _deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def _causes(r: httpx.Response) -> list[tuple[str, str]]:
    assert r.status_code == 422, r.text
    return [(c["field"], c["message"]) for c in r.json()["details"]["causes"]]


async def test_an_update_emptying_the_selector_prints_an_empty_map(client: httpx.AsyncClient) -> None:
    created = await client.post(DEPLOY, json=_deployment())
    assert created.status_code == 201, created.text
    body = copy.deepcopy(created.json())
    body["spec"]["selector"] = {"matchLabels": {}}
    expected = [("spec.selector", f"{EMPTY_SELECTOR}: empty selector is invalid for deployment"),
                ("spec.selector", f"{EMPTY_SELECTOR}: field is immutable")]
    put = await client.put(f"{DEPLOY}/d", json=body)
    assert _causes(put) == expected
    assert put.json()["message"].startswith(f'Deployment.apps "d" is invalid: [spec.selector: {EMPTY_SELECTOR}')
    # A JSON merge patch deleting the last label leaves "matchLabels": {} in the patched document.
    patched = await client.patch(f"{DEPLOY}/d", json={"spec": {"selector": {"matchLabels": {"app": None}}}},
                                 headers=MERGE)
    assert _causes(patched) == expected
    # Nothing was stored.
    live = (await client.get(f"{DEPLOY}/d")).json()
    assert live["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    assert live["metadata"]["resourceVersion"] == created.json()["metadata"]["resourceVersion"]


async def test_an_empty_list_next_to_an_unchanged_selector_is_no_change_to_it(client: httpx.AsyncClient) -> None:
    created = await client.post(DEPLOY, json=_deployment())
    assert created.status_code == 201, created.text
    body = copy.deepcopy(created.json())
    body["spec"]["selector"]["matchExpressions"] = []
    ok = await client.put(f"{DEPLOY}/d", json=body)
    assert ok.status_code == 200, ok.text
    assert ok.json()["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    assert ok.json()["metadata"]["generation"] == 1
    # With another error, the decoded object's validation reports that one alone: the empty list is no
    # selector change (Semantic.DeepEqual), so no "field is immutable" joins it.
    body["spec"]["replicas"] = -1
    assert _causes(await client.put(f"{DEPLOY}/d", json=body)) == [
        ("spec.replicas", "Invalid value: -1: must be greater than or equal to 0")]
