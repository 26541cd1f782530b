"""Node affinity in the scheduler: ``matchFields`` on ``metadata.name``, and preferred terms.

Upstream: component-helpers ``scheduling/corev1/nodeaffinity`` (``nodeSelectorTerm.match``,
``extractNodeFields``, ``nodeSelectorRequirementsAsFieldSelector``: In/NotIn with exactly one value,
anything else a parse error so the term matches nothing; the API server refuses such pods first,
see tests/server/test_pod_scheduling_validation.py), the NodeAffinity plugin's Score
(``PreferredSchedulingTerms.Score``, ``DefaultNormalizeScore``) and the volume binder's
``CheckNodeAffinity`` on a PersistentVolume's ``spec.nodeAffinity.required``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import Invalid
from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import STORAGE_CLASSES

from ._sim_world import PODS, PVCS, PVS, World, condition, open_world, pod

NAME = "metadata.name"


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "preference": term} for weight, term in weighted]}}


def fields(op: str, *values: str, key: str = NAME) -> dict[str, Any]:
    return {"matchFields": [{"key": key, "operator": op, "values": list(values)}]}


async def _bound(world: World, name: str) -> str:
    async def check() -> str:
        return str((await world.get(PODS, name)).get("spec", {}).get("nodeName") or "")

    return str(await world.eventually(check))


async def _unschedulable_message(world: World, name: str) -> str:
    async def check() -> str:
        cond = condition(await world.get(PODS, name), "PodScheduled")
        return str(cond.get("message") or "") if cond.get("reason") == "Unschedulable" else ""

    return str(await world.eventually(check))


async def test_required_match_fields_in_places_the_pod_on_the_named_node(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        await world.create(PODS, pod("pinned", affinity=required(fields("In", "kubeloop-node-3"))))
        assert await _bound(world, "pinned") == "kubeloop-node-3"


async def test_required_match_fields_not_in_keeps_the_pod_off_the_named_nodes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        term = {"matchFields": [{"key": NAME, "operator": "NotIn", "values": ["kubeloop-node-1"]},
                                {"key": NAME, "operator": "NotIn", "values": ["kubeloop-node-2"]}]}
        await world.create(PODS, pod("elsewhere", affinity=required(term)))
        assert await _bound(world, "elsewhere") == "kubeloop-node-3"


async def test_match_fields_and_match_expressions_of_one_term_are_anded(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["kubeloop-node-1"]}],
                "matchFields": [{"key": NAME, "operator": "In", "values": ["kubeloop-node-2"]}]}
        await world.create(PODS, pod("contradiction", affinity=required(term)))
        message = await _unschedulable_message(world, "contradiction")
        assert message.startswith("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.")
        # Terms are ORed: a second term that matches node-2 makes the pod schedulable there.
        await world.create(PODS, pod("either", affinity=required(term, fields("In", "kubeloop-node-2"))))
        assert await _bound(world, "either") == "kubeloop-node-2"


async def test_match_fields_that_do_not_parse_are_refused_by_the_api_server(tmp_path: Path) -> None:
    # Such a term used to reach the scheduler and match no node; upstream's API validation
    # (ValidateNodeFieldSelectorRequirement) refuses the pod first: In needs exactly one value,
    # Exists is not a field operator.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        terms = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        with pytest.raises(Invalid) as two:
            await world.create(PODS, pod("two", affinity=required(fields("In", "kubeloop-node-1", "kubeloop-node-2"))))
        assert [c["field"] for c in two.value.causes] == [f"{terms}.matchFields[0].values"]
        with pytest.raises(Invalid) as exists:
            await world.create(PODS, pod("exists", affinity=required(
                {"matchFields": [{"key": NAME, "operator": "Exists"}]})))
        assert [c["field"] for c in exists.value.causes] == [f"{terms}.matchFields[0].operator"]


async def test_a_gt_value_that_is_not_an_integer_is_accepted_and_matches_no_node(tmp_path: Path) -> None:
    # API validation checks that Gt/Lt have one value, not that it parses as an integer; the
    # scheduler's selector (labels.NewRequirement) fails to parse it, and the term matches no node.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("gt", affinity=required(
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Gt", "values": ["many"]}]})))
        message = await _unschedulable_message(world, "gt")
        assert message.startswith("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")


async def test_match_fields_on_another_field_are_refused_by_the_api_server(tmp_path: Path) -> None:
    # The scheduler reads any key but metadata.name as "" (fields.Set holds only the name), but no pod
    # gets that far: metadata.name is the only key nodeFieldSelectorValidators allows.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        for name, op in (("in", "In"), ("notin", "NotIn")):
            with pytest.raises(Invalid) as caught:
                await world.create(PODS, pod(name, affinity=required(fields(op, "x", key="spec.podCIDR"))))
            assert caught.value.causes == [{
                "reason": "FieldValueInvalid", "message": 'Invalid value: "spec.podCIDR": not a valid field selector key',
                "field": "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                         ".nodeSelectorTerms[0].matchFields[0].key"}]


async def test_preferred_match_fields_wins_over_least_allocated(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        # Without a preference the least allocated, then first-named, node wins: kubeloop-node-1.
        await world.create(PODS, pod("plain"))
        assert await _bound(world, "plain") == "kubeloop-node-1"
        await world.create(PODS, pod("likes-3", affinity=preferred((10, fields("In", "kubeloop-node-3")))))
        assert await _bound(world, "likes-3") == "kubeloop-node-3"


async def test_preferred_terms_add_their_weights(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        affinity = preferred(
            (5, fields("In", "kubeloop-node-1")),
            (3, fields("NotIn", "kubeloop-node-1")),  # node-2 and node-3: 3 each
            (4, {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                       "values": ["kubeloop-node-2"]}]}),  # node-2: 3 + 4 = 7
            (50, {}),  # an empty term scores nothing
        )
        await world.create(PODS, pod("weighed", affinity=affinity))
        assert await _bound(world, "weighed") == "kubeloop-node-2"
        # A weight of 0 (which the scoring would skip) is refused by the API server, as upstream's
        # ValidatePreferredSchedulingTerms does ("must be in the range 1-100").
        with pytest.raises(Invalid, match=r"preferredDuringSchedulingIgnoredDuringExecution\[0\]\.weight: Invalid value: 0"):
            await world.create(PODS, pod("zero", affinity=preferred((0, fields("In", "kubeloop-node-3")))))


async def test_volume_node_affinity_match_fields_are_ignored_as_upstream(tmp_path: Path) -> None:
    # CheckNodeAffinity matches a volume's terms against a Node made of the node's labels only: no
    # name, so matchFields are skipped and a matchFields-only term fits every node (kubernetes#81725;
    # rancher/local-path-provisioner#451 on 1.30). matchExpressions still count.
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        await world.create(STORAGE_CLASSES, {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
        for name, term in (("by-field", fields("In", "kubeloop-node-2")),
                           ("by-label", {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                               "values": ["kubeloop-node-3"]}],
                                         "matchFields": [{"key": NAME, "operator": "In",
                                                          "values": ["kubeloop-node-2"]}]})):
            await world.create(PVS, {
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                         "local": {"path": f"/mnt/{name}"}, "claimRef": {"namespace": "ns", "name": name},
                         "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}})
            await world.create(PVCS, {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local", "volumeName": name,
                         "resources": {"requests": {"storage": "1Gi"}}}})
            await world.create(PODS, pod(name, volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": name}}]))
        # The least allocated, first-named node, whatever the field says.
        assert await _bound(world, "by-field") == "kubeloop-node-1"
        # The label requirement holds; the field one (node-2) is not looked at.
        assert await _bound(world, "by-label") == "kubeloop-node-3"
