"""Deployment controller: ReplicaSets by template hash, rollouts, history, pause, deadline, honest status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeloop.controllers._deployment_util import resolve_fenceposts

from ._workload_world import DEPLOYMENTS, NS, PODS, REPLICASETS, World, open_world, template

CONTROLLERS = ("deployment", "replicaset")


def deployment(name: str = "web", replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template(name), **spec},
    }  # fmt: skip


def rollout_status(d: dict[str, Any]) -> tuple[bool, str]:
    """kubectl's DeploymentStatusViewer (polymorphichelpers/rollout_status.go): (done, message)."""
    status = d.get("status") or {}
    name = d["metadata"]["name"]
    if d["metadata"].get("generation", 0) <= status.get("observedGeneration", 0):
        for cond in status.get("conditions") or ():
            if cond["type"] == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
                raise RuntimeError(f'deployment "{name}" exceeded its progress deadline')
        want, updated = d["spec"].get("replicas", 1), status.get("updatedReplicas", 0)
        if updated < want:
            return False, f"{updated} out of {want} new replicas have been updated..."
        if status.get("replicas", 0) > updated:
            return False, f"{status.get('replicas', 0) - updated} old replicas are pending termination..."
        if status.get("availableReplicas", 0) < updated:
            return False, f"{status.get('availableReplicas', 0)} of {updated} updated replicas are available..."
        return True, f'deployment "{name}" successfully rolled out'
    return False, "Waiting for deployment spec update to be observed..."


def condition(d: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (d.get("status") or {}).get("conditions") or () if c["type"] == type_), None)


async def rolled_out(world: World, name: str = "web") -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        d = await world.get(DEPLOYMENTS, name)
        done, _ = rollout_status(d)
        return d if done else None

    result: dict[str, Any] = await world.eventually(check)
    return result


async def replicasets(world: World, name: str = "web") -> list[dict[str, Any]]:
    return sorted(await world.items(REPLICASETS, {"matchLabels": {"app": name}}),
                  key=lambda rs: int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]))


def test_fenceposts_round_surge_up_and_unavailable_down() -> None:
    assert resolve_fenceposts("25%", "25%", 10) == (3, 2)
    assert resolve_fenceposts("25%", "25%", 1) == (1, 0)
    assert resolve_fenceposts(0, "10%", 5) == (0, 1)  # both zero after rounding: unavailable forced to 1
    assert resolve_fenceposts(2, 0, 10) == (2, 0)


async def test_a_new_deployment_gets_a_hashed_replica_set_and_reports_progress(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        world.start_kubelet()
        created = await world.client.create(DEPLOYMENTS, deployment(replicas=3))
        d = await rolled_out(world)
        [rs] = await replicasets(world)
        pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"web-{pod_hash}"
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
        assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == pod_hash
        assert rs["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "3"
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "4"
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        assert all(p["metadata"]["labels"]["pod-template-hash"] == pod_hash for p in await world.pods(app="web"))
        status = d["status"]
        assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"],
                status["availableReplicas"]) == (3, 3, 3, 3)  # fmt: skip
        assert "unavailableReplicas" not in status
        assert status["observedGeneration"] == d["metadata"]["generation"]
        available, progressing = condition(d, "Available"), condition(d, "Progressing")
        assert available is not None and progressing is not None
        assert (available["status"], available["reason"], available["message"]) == (
            "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
        assert (progressing["status"], progressing["reason"], progressing["message"]) == (
            "True", "NewReplicaSetAvailable", f'ReplicaSet "web-{pod_hash}" has successfully progressed.')


async def test_rolling_update_respects_max_surge_and_max_unavailable(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        world.start_kubelet()
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}
        await world.client.create(DEPLOYMENTS, deployment(replicas=4, strategy=strategy))
        await rolled_out(world)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": template("web", image="nginx:1.26")}},
                                 namespace=NS)  # fmt: skip
        worst_total, worst_available = 0, 99

        async def done() -> bool:
            nonlocal worst_total, worst_available
            rss = await world.items(REPLICASETS)
            worst_total = max(worst_total, sum(rs["spec"]["replicas"] for rs in rss))
            ready = [p for p in await world.pods(app="web") if p["status"].get("conditions")]
            worst_available = min(worst_available, len(ready))
            finished, _ = rollout_status(await world.get(DEPLOYMENTS, "web"))
            return finished

        await world.eventually(done)
        assert worst_total <= 4 + 1
        assert worst_available >= 4 - 1
        old, new = await replicasets(world)
        assert old["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 4
        assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        assert {p["spec"]["containers"][0]["image"] for p in await world.pods(app="web")} == {"nginx:1.26"}


async def test_recreate_removes_every_old_pod_before_creating_new_ones(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        world.start_kubelet()
        await world.client.create(DEPLOYMENTS, deployment(replicas=3, strategy={"type": "Recreate"}))
        await rolled_out(world)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": template("web", image="nginx:1.26")}},
                                 namespace=NS)  # fmt: skip
        mixed = False

        async def done() -> bool:
            nonlocal mixed
            images = {p["spec"]["containers"][0]["image"] for p in await world.pods(app="web")}
            mixed = mixed or len(images) > 1
            finished, _ = rollout_status(await world.get(DEPLOYMENTS, "web"))
            return finished

        await world.eventually(done)
        assert not mixed, "old and new pods ran at the same time under Recreate"
        assert len(await world.pods(app="web")) == 3


async def test_crash_looping_pods_are_never_reported_ready_and_the_deadline_is_exceeded(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        world.start_kubelet(crash_if=lambda pod: pod["spec"]["containers"][0]["image"] == "crash:1")
        await world.client.create(DEPLOYMENTS, deployment(replicas=4, progressDeadlineSeconds=60))
        await rolled_out(world)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": template("web", image="crash:1")}},
                                 namespace=NS)  # fmt: skip

        async def stalled() -> dict[str, Any]:
            d = await world.get(DEPLOYMENTS, "web")
            assert d["status"].get("updatedReplicas") == 2  # maxSurge 1 + maxUnavailable 1 of 4
            return d

        d = await world.eventually(stalled)
        await world.settle()
        d = await world.get(DEPLOYMENTS, "web")
        status = d["status"]
        # The 2 new pods crash-loop: ready and available count only the 3 old, healthy pods.
        assert status["readyReplicas"] == 3 and status["availableReplicas"] == 3
        assert status["replicas"] == 5 and status["unavailableReplicas"] == 2
        old, new = await replicasets(world)
        assert old["spec"]["replicas"] == 3  # the crash loop never eats the old capacity
        assert (new.get("status") or {}).get("readyReplicas", 0) == 0
        done, message = rollout_status(d)
        assert not done and message == "2 out of 4 new replicas have been updated..."
        # No progress for 60 s on the injected clock: ProgressDeadlineExceeded, without any new event.
        await world.clock.advance(62)

        async def timed_out() -> dict[str, Any]:
            d = await world.get(DEPLOYMENTS, "web")
            cond = condition(d, "Progressing")
            assert cond is not None and cond["reason"] == "ProgressDeadlineExceeded", cond
            return d

        d = await world.eventually(timed_out)
        cond = condition(d, "Progressing")
        assert cond is not None and cond["status"] == "False"
        assert cond["message"] == f'ReplicaSet "{new["metadata"]["name"]}" has timed out progressing.'
        with pytest.raises(RuntimeError, match="exceeded its progress deadline"):
            rollout_status(d)


async def test_scaling_from_5_to_10_shows_the_partial_state_truthfully(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        await world.client.create(DEPLOYMENTS, deployment(replicas=5))
        await world.eventually(lambda: _pods(world, 5))
        await world.ready_all(app="web")
        await rolled_out(world)
        await world.client.scale(DEPLOYMENTS, "web", 10, namespace=NS)

        async def partial() -> dict[str, Any]:
            d = await world.get(DEPLOYMENTS, "web")
            s = d["status"]
            assert s["observedGeneration"] == d["metadata"]["generation"]
            assert (s.get("replicas"), s.get("readyReplicas"), s.get("availableReplicas")) == (10, 5, 5), s
            return d

        d = await world.eventually(partial)
        assert d["status"]["unavailableReplicas"] == 5
        done, message = rollout_status(d)
        assert not done and message == "5 of 10 updated replicas are available..."
        await world.ready_all(app="web")
        d = await rolled_out(world)
        assert d["status"]["readyReplicas"] == 10


async def test_pause_holds_template_changes_and_resume_rolls_them_out(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        world.start_kubelet()
        await world.client.create(DEPLOYMENTS, deployment(replicas=2))
        await rolled_out(world)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"paused": True}}, namespace=NS)

        async def paused() -> bool:
            cond = condition(await world.get(DEPLOYMENTS, "web"), "Progressing")
            return cond is not None and (cond["status"], cond["reason"]) == ("Unknown", "DeploymentPaused")

        await world.eventually(paused)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": template("web", image="nginx:1.26")}},
                                 namespace=NS)  # fmt: skip
        await world.settle()
        assert len(await replicasets(world)) == 1
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"paused": False}}, namespace=NS)
        d = await rolled_out(world)
        assert len(await replicasets(world)) == 2
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"


async def test_revision_history_limit_deletes_the_oldest_idle_replica_sets(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        world.start_kubelet()
        await world.client.create(DEPLOYMENTS, deployment(replicas=1, revisionHistoryLimit=1))
        await rolled_out(world)
        for version in ("1.26", "1.27", "1.28"):
            await world.client.patch(DEPLOYMENTS, "web",
                                     {"spec": {"template": template("web", image=f"nginx:{version}")}}, namespace=NS)
            await rolled_out(world)

        async def pruned() -> list[dict[str, Any]]:
            rss = await replicasets(world)
            assert [rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in rss] == ["3", "4"]
            return rss

        await world.eventually(pruned)


async def test_rollback_to_an_old_template_reuses_its_replica_set_with_a_new_revision(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        world.start_kubelet()
        await world.client.create(DEPLOYMENTS, deployment(replicas=2))
        await rolled_out(world)
        [first] = await replicasets(world)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": template("web", image="nginx:1.26")}},
                                 namespace=NS)  # fmt: skip
        await rolled_out(world)
        # What `kubectl rollout undo` does: copy revision 1's template (minus pod-template-hash) back.
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": template("web")}}, namespace=NS)
        d = await rolled_out(world)
        rss = await replicasets(world)
        assert len(rss) == 2
        reused = rss[-1]
        assert reused["metadata"]["uid"] == first["metadata"]["uid"]
        assert reused["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
        assert reused["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


async def test_a_hash_collision_bumps_collision_count_and_picks_another_name(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        from kubeloop.controllers._workload_hash import compute_hash

        created = await world.client.create(DEPLOYMENTS, deployment("web", replicas=0, paused=True))
        pod_hash = compute_hash(created["spec"]["template"], None)
        squatter = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": f"web-{pod_hash}", "namespace": NS},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"squat": "yes"}},
                     "template": {"metadata": {"labels": {"squat": "yes"}},
                                  "spec": {"containers": [{"name": "c", "image": "other"}]}}},
        }  # fmt: skip
        await world.client.create(REPLICASETS, squatter)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"paused": False, "replicas": 1}}, namespace=NS)

        async def resolved() -> dict[str, Any]:
            d = await world.get(DEPLOYMENTS, "web")
            assert d["status"].get("collisionCount") == 1
            rss = await replicasets(world)
            assert len(rss) == 1 and rss[0]["metadata"]["name"] != f"web-{pod_hash}"
            return d

        await world.eventually(resolved, step=0.1)


async def _pods(world: World, n: int) -> bool:
    return len(await world.pods(app="web")) == n


async def test_recreate_creates_new_pods_as_soon_as_the_last_terminating_old_pod_is_gone(tmp_path: Path) -> None:
    # Bound pods terminate gracefully: the old ReplicaSet reports 0 replicas while they still exist,
    # so only the pods' delete events can tell the Deployment that the way is clear.
    bound = {**template("web"), "spec": {**template("web")["spec"], "nodeName": "node-a",
                                         "terminationGracePeriodSeconds": 30}}  # fmt: skip
    async with open_world(tmp_path, *CONTROLLERS) as world:
        await world.client.create(DEPLOYMENTS, deployment(replicas=2, strategy={"type": "Recreate"}, template=bound))
        await world.eventually(lambda: _count_pods(world, 2))
        await world.ready_all(app="web")
        await rolled_out(world)
        new_template = {**bound, "spec": {**bound["spec"], "containers": [{"name": "c", "image": "nginx:1.26"}]}}
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": new_template}}, namespace=NS)

        async def old_pods_terminating() -> list[dict[str, Any]] | None:
            pods = await world.items(PODS, {"matchLabels": {"app": "web"}})
            old = (await replicasets(world))[0]
            if len(pods) == 2 and all(p["metadata"].get("deletionTimestamp") for p in pods) and \
                    (old.get("status") or {}).get("replicas", 0) == 0:  # fmt: skip
                return pods
            return None

        terminating = await world.eventually(old_pods_terminating)
        await world.settle()
        assert len(await world.items(PODS, {"matchLabels": {"app": "web"}})) == 2, "new pods next to old ones"
        for pod in terminating:  # the kubelet's final delete
            await world.client.delete(PODS, pod["metadata"]["name"], namespace=NS, grace_period_seconds=0)
        await world.eventually(lambda: _count_pods(world, 2))
        assert {p["spec"]["containers"][0]["image"] for p in await world.pods(app="web")} == {"nginx:1.26"}


async def _count_pods(world: World, n: int) -> bool:
    return len(await world.pods(app="web")) == n
