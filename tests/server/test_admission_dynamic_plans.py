"""The dynamic admission plugins are planned in only while their configurations are stored.

Admission webhooks and ValidatingAdmissionPolicy read configurations from the store. With none stored,
the admission chain leaves them out of its plans (a write pays nothing for them); any write to the
``admissionregistration.k8s.io`` group makes it plan again, so a configuration written before a request
always applies to it (upstream's informers take a moment; kubeloop's are at once), and one deleted stops
applying at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from kubeloop.api import ResourceInfo
from kubeloop.server import App
from kubeloop.server._admission import AdmissionChain
from kubeloop.server._admission_policy import ValidatingAdmissionPolicy
from kubeloop.server._webhook_admission import MutatingWebhooks, ValidatingWebhooks

from ._webhooks import configuration, webhook, webhook_server
from .test_admission_policy_admission import BINDINGS, CONFIGMAP_RULE, binding, install, policy

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
DYNAMIC = (MutatingWebhooks, ValidatingWebhooks, ValidatingAdmissionPolicy)


def planned(app: App) -> set[str]:
    """The dynamic plugins in the chain's plan for a ConfigMap CREATE, by class name."""
    chain = app.admission
    assert isinstance(chain, AdmissionChain)
    info = app.kinds.get("", "v1", "configmaps")
    assert isinstance(info, ResourceInfo)
    mutating, validating = chain.plan("CREATE", info)
    owners = {type(getattr(step, "__self__", None)) for step in (*mutating, *validating)}
    return {cls.__name__ for cls in DYNAMIC if cls in owners}


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}}


async def test_a_policy_plans_the_plugin_in_and_its_bindings_removal_plans_it_out(
    app: App, client: httpx.AsyncClient
) -> None:
    assert (await client.post(CONFIGMAPS, json=configmap("first"))).status_code == 201
    assert planned(app) == set()  # nothing stored: every dynamic plugin is planned out
    no_name = {"expression": "object.metadata.name != 'denied'", "message": "not that name"}
    await install(client, policy(rule=CONFIGMAP_RULE, validations=[no_name]), binding())
    # The very next request is judged: the write to the group made the chain plan again.
    refused = await client.post(CONFIGMAPS, json=configmap("denied"))
    assert refused.status_code == 422 and "not that name" in refused.json()["message"]
    assert planned(app) == {"ValidatingAdmissionPolicy"}
    assert (await client.delete(f"{BINDINGS}/b")).status_code == 200
    assert (await client.post(CONFIGMAPS, json=configmap("denied"))).status_code == 201
    assert planned(app) == set()


async def test_a_webhook_configuration_applies_to_the_next_request_and_stops_when_deleted(
    app: App, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    assert (await client.post(CONFIGMAPS, json=configmap("first"))).status_code == 201
    assert planned(app) == set()

    def deny(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": False, "status": {"code": 403, "message": "no configmaps today"}}

    async with webhook_server(tmp_path, deny) as served:
        config = configuration("ValidatingWebhookConfiguration", "deny",
                               webhook("deny.kubeloop.test", served.client_config()))
        assert (await client.post(WEBHOOKS, json=config)).status_code == 201
        refused = await client.post(CONFIGMAPS, json=configmap("second"))
        assert refused.status_code == 403 and "no configmaps today" in refused.json()["message"]
        assert planned(app) == {"ValidatingWebhooks"}
        assert len(served.hook.reviews) == 1
        assert (await client.delete(f"{WEBHOOKS}/deny")).status_code == 200
        assert (await client.post(CONFIGMAPS, json=configmap("second"))).status_code == 201
        assert len(served.hook.reviews) == 1
    assert planned(app) == set()
