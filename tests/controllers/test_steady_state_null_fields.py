"""Workloads whose stored form holds Go's ``null`` fields and dropped zeros reach a steady state the
controllers leave alone: a resync of every object makes no write and moves no ``resourceVersion``.

The server stores what upstream's Go round trip leaves (a grpc probe's unset ``service`` as ``null``:
core/v1 ``GRPCAction.Service *string `json:"service"```; ``ProjectedVolumeSource.Sources`` ``null``; a pod
failure policy's unset ``onPodConditions``/``containerName`` ``null``; value zeros such as
``minReadySeconds: 0`` dropped). A controller comparing what it would write with what it reads must see
them as equal, or it sends a PUT on every sync: the hot loop kubeloop exists to prevent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._workload_kinds import DAEMONSETS, DEPLOYMENTS, JOBS, REPLICASETS

from ._sim_world import NS, PDBS, PODS, World, condition, open_world


def _template(app: str, restart: str = "Always") -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}, "annotations": {}},
            "spec": {"restartPolicy": restart, "hostNetwork": False,
                     "containers": [{"name": "c", "image": "nginx:1.25", "workingDir": "", "ports": [],
                                     "livenessProbe": {"grpc": {"port": 8080}, "periodSeconds": 10}}],
                     "volumes": [{"name": "p", "projected": {"sources": []}}]}}


async def _versions(world: World) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for resource in (DEPLOYMENTS, REPLICASETS, DAEMONSETS, JOBS, PDBS, PODS):
        for item in (await world.client.list(resource, namespace=NS)).get("items") or ():
            found[(resource.plural, item["metadata"]["name"])] = item["metadata"]["resourceVersion"]
    return found


async def test_workloads_with_null_fields_in_their_stored_form_settle_without_writes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), workloads=True,
                          controllers=("daemonset",)) as world:
        await world.create(DEPLOYMENTS, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                         "spec": {"replicas": 2, "minReadySeconds": 0, "paused": False,
                                                  "selector": {"matchLabels": {"app": "web"}},
                                                  "template": _template("web")}})
        await world.create(DAEMONSETS, {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                                        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                                                 "template": _template("agent")}})
        await world.create(JOBS, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch"},
                                  "spec": {"podFailurePolicy": {"rules": [
                                      {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]},
                                      "template": _template("batch", restart="Never")}})
        await world.create(PDBS, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                                  "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
        stored = await world.get(DEPLOYMENTS, "web")
        assert stored["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["grpc"] == {
            "port": 8080, "service": None}

        async def settled() -> bool:
            d = await world.get(DEPLOYMENTS, "web")
            ds = await world.get(DAEMONSETS, "agent")
            pdb = await world.get(PDBS, "web")
            job = await world.get(JOBS, "batch")
            return ((d.get("status") or {}).get("availableReplicas") == 2
                    and (ds.get("status") or {}).get("numberAvailable") == 2
                    and condition(pdb, "DisruptionAllowed").get("status") == "True"
                    and (job.get("status") or {}).get("active") == 1 and (job.get("status") or {}).get("ready") == 1)

        # Fake time moves: the Job controller syncs syncJobBatchPeriod (1 s) after its pod's events.
        await world.eventually(settled, step=0.1)
        before = await _versions(world)
        assert await world.quiet_writes() == 0, world.ctl.writes
        assert await _versions(world) == before
