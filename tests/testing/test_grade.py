"""The conformance checks (``kubeloop.testing.grade``) on real controllers: the sample controller and a
Widget controller pass every check, and each deliberately broken Widget controller fails exactly the
check that targets its pitfall (idempotency, lost updates, hot loops, status honesty, ownership).

Everything runs in-process on fake clocks: a whole grade takes a second or two of wall time.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import Conflict, NotFound, ResourceInfo, controller_of, format_time, is_being_deleted
from kubeloop.client import Client
from kubeloop.controllers import register_workload_controllers
from kubeloop.runtime import (
    Builder,
    GenerationChanged,
    LeaderElectionOptions,
    Manager,
    PermanentError,
    Request,
    Result,
    StatusWriter,
    create_or_update,
    set_condition,
    set_controller_reference,
)
from kubeloop.testing import ControllerUnderTest, GradeOptions, Report, Scenario, grade, resource
from kubeloop.testing._checks_claims import condition_problems

sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
from configmap_mirror import MIRROR_LABEL, mirrored_data
from configmap_mirror import setup as mirror_setup

CONFIGMAPS = resource("", "ConfigMap")
NAMESPACES = resource("", "Namespace")
CHILD_LABEL = "grade.kubeloop.dev/widget"
SECRETS = resource("", "Secret")
WIDGETS = ResourceInfo(
    "grade.kubeloop.dev", "v1", "Widget", "widgets", "widget", True, status_subresource=True, custom=True
)
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.grade.kubeloop.dev"},
    "spec": {
        "group": "grade.kubeloop.dev",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }}},
        }],
    },
}  # fmt: skip


# -- a Widget controller, honest unless told which pitfall to fall into ---------------------------


def widget_controller(*pitfalls: str) -> ControllerUnderTest:
    """Each Widget gets a ConfigMap ``<name>-config`` with ``data.size``; status says Ready when it matches.

    Pitfalls: ``always-write`` (updates the child on every reconcile), ``swallow-conflict`` (a 409
    on the child is ignored), ``no-backoff`` (any error requeues after a fixed 50 ms),
    ``early-status`` (Ready and observedGeneration written before the child), ``restamp`` (every
    status write stamps lastTransitionTime anew), ``blind-write`` (replaces the child with a fresh
    body, no resourceVersion), ``no-owner`` (children without ownerReferences), ``adopt`` (takes
    over a ConfigMap someone else controls), ``child-finalizer`` (children carry a finalizer nobody removes),
    ``note-in-namespace`` (before its child, patches an annotation on the Widget's Namespace: an object
    that is not its child, whose 409s it handles), ``inline-retry`` (retries a failed create inside
    reconcile, sleeping 1 s, 2 s, ... 60 s: its one worker serves nobody else meanwhile).
    ``generate-name`` is no pitfall: it makes each child with ``generateName`` and a label, and finds it
    by that label and its controller reference; with ``adopt`` it takes any labelled ConfigMap over,
    with ``count-others`` it takes any labelled ConfigMap for its own (without touching its owner).
    ``patch-child`` is no pitfall either: it updates its child with a merge patch (resourceVersion as
    precondition), whose body names no owner. ``recreate-child`` never updates a child: it deletes the
    stale one and creates it anew (so no update of it can get a 409). ``force-on-conflict`` answers a
    409 on its child by sending the same update again without a resourceVersion (a blind retry).
    ``wake-on-status`` is no pitfall: its own status writes wake it (no ``GenerationChanged``
    predicate), but it writes status only when it changes. ``status-counter`` counts failed attempts in
    ``status.attempts`` and ``status-stamp`` stamps ``status.lastAttempt`` with the clock's time, so
    each failure rewrites its status: a pitfall with ``wake-on-status`` (the write's watch event wakes
    it at once, past its backoff), none alone.
    """
    known = {"always-write", "swallow-conflict", "no-backoff", "early-status", "restamp", "blind-write", "no-owner", "adopt",
             "child-finalizer", "note-in-namespace", "inline-retry", "generate-name", "count-others",
             "patch-child", "recreate-child", "force-on-conflict", "wake-on-status", "status-counter",
             "status-stamp"}  # fmt: skip
    unknown = set(pitfalls) - known
    assert not unknown, unknown

    def setup(manager: Manager) -> None:
        client = manager.client
        widgets = manager.informer(WIDGETS).cache
        configmaps = manager.informer(CONFIGMAPS).cache
        status_writer = StatusWriter(client)

        async def write_status(widget: dict[str, Any], ready: bool) -> None:
            status = copy.deepcopy(widget.get("status") or {})
            conditions = status.setdefault("conditions", [])
            set_condition(
                conditions, type="Ready", status="True" if ready else "False",
                reason="ChildMatches" if ready else "ChildFailed", clock=manager.clock,
            )  # fmt: skip
            if "restamp" in pitfalls:
                for condition in conditions:
                    condition["lastTransitionTime"] = format_time(manager.clock.now())
            if not ready and "status-counter" in pitfalls:
                status["attempts"] = int(status.get("attempts", 0)) + 1
            if not ready and "status-stamp" in pitfalls:
                status["lastAttempt"] = format_time(manager.clock.now())
            await status_writer.write(WIDGETS, widget, status)

        def find_child(widget: dict[str, Any], request: Request) -> dict[str, Any] | None:
            if "generate-name" not in pitfalls:
                return configmaps.get(f"{request.namespace}/{request.name}-config")
            labelled = [c for c in configmaps.list(namespace=request.namespace)
                        if (c["metadata"].get("labels") or {}).get(CHILD_LABEL) == request.name]  # fmt: skip
            if "adopt" not in pitfalls and "count-others" not in pitfalls:
                labelled = [c for c in labelled if (controller_of(c) or {}).get("uid") == widget["metadata"]["uid"]]
            return labelled[0] if labelled else None

        async def sync_child(widget: dict[str, Any], request: Request) -> None:
            desired = {"size": str(widget["spec"].get("size", 0))}
            name = f"{request.name}-config"
            child = find_child(widget, request)
            if child is None:
                body: dict[str, Any] = {"metadata": {"name": name, "namespace": request.namespace}, "data": desired}
                if "generate-name" in pitfalls:
                    body["metadata"] = {"generateName": f"{name}-", "namespace": request.namespace,
                                        "labels": {CHILD_LABEL: request.name}}  # fmt: skip
                if "no-owner" not in pitfalls:
                    set_controller_reference(widget, body)
                if "child-finalizer" in pitfalls:
                    body["metadata"]["finalizers"] = ["grade.kubeloop.dev/keep"]
                delay = 1.0
                while True:
                    try:
                        await client.create(CONFIGMAPS, body)
                        return
                    except Exception:
                        if "inline-retry" not in pitfalls:
                            raise
                    await manager.clock.sleep(delay)
                    delay = min(delay * 2, 60.0)
            child = copy.deepcopy(child)
            changed = child.get("data") != desired or "always-write" in pitfalls
            if "adopt" in pitfalls:
                refs = child["metadata"].get("ownerReferences") or []
                if not any(r.get("uid") == widget["metadata"]["uid"] for r in refs):
                    child["metadata"]["ownerReferences"] = []
                    set_controller_reference(widget, child)
                    changed = True
            elif "no-owner" not in pitfalls:
                try:
                    set_controller_reference(widget, child)
                except Exception as err:
                    raise PermanentError(str(err)) from None
            if not changed:
                return
            child["data"] = desired
            if "recreate-child" in pitfalls:
                meta = child["metadata"]
                await client.delete(CONFIGMAPS, meta["name"], namespace=request.namespace)
                fresh = {"metadata": {"name": meta["name"], "namespace": request.namespace}, "data": desired}
                set_controller_reference(widget, fresh)
                await client.create(CONFIGMAPS, fresh)
                return
            if "blind-write" in pitfalls:
                child = {"metadata": {"name": child["metadata"]["name"], "namespace": request.namespace,
                                      "ownerReferences": child["metadata"].get("ownerReferences")}, "data": desired}  # fmt: skip
            try:
                if "patch-child" in pitfalls:  # a merge patch: no ownerReferences in what it sends
                    meta = child["metadata"]
                    patch = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "data": desired}
                    await client.patch(CONFIGMAPS, meta["name"], patch, namespace=request.namespace)
                else:
                    await client.update(CONFIGMAPS, child)
            except Conflict:
                if "swallow-conflict" in pitfalls:
                    return
                if "force-on-conflict" in pitfalls:
                    child["metadata"].pop("resourceVersion", None)
                    await client.update(CONFIGMAPS, child)
                    return
                raise

        async def note_in_namespace(widget: dict[str, Any], request: Request) -> None:
            key, size = f"grade.kubeloop.dev/size-{request.name}", str(widget["spec"].get("size", 0))
            namespace = await client.get(NAMESPACES, request.namespace)
            if (namespace["metadata"].get("annotations") or {}).get(key) != size:
                await client.patch(NAMESPACES, request.namespace, {"metadata": {"annotations": {key: size}}})

        async def reconcile(request: Request) -> Result | None:
            widget = widgets.get(f"{request.namespace}/{request.name}")
            if widget is None or is_being_deleted(widget):
                return None
            if "note-in-namespace" in pitfalls:
                await note_in_namespace(widget, request)  # a 409 here is returned: retried with backoff
            try:
                if "early-status" in pitfalls:
                    await write_status(widget, True)
                    await sync_child(widget, request)
                    return None
                try:
                    await sync_child(widget, request)
                except PermanentError:
                    raise
                except Exception:
                    await write_status(widget, False)
                    raise
                await write_status(widget, True)
            except PermanentError:
                raise
            except Exception:
                if "no-backoff" in pitfalls:
                    return Result(requeue_after=0.05)
                raise
            return None

        # Status writes do not wake it (GenerationChanged), as in most controller-runtime setups.
        predicates = () if "wake-on-status" in pitfalls else (GenerationChanged(),)
        Builder(manager).named("widgets").for_(WIDGETS, *predicates).owns(CONFIGMAPS).build(reconcile)

    return ControllerUnderTest.manager(setup, name="widgets" + "".join(f"[{p}]" for p in pitfalls))


async def labelled_child_matches(client: Client, widget: dict[str, Any]) -> None:
    """For ``generate-name`` Widgets: its own child, found by label and controller reference."""
    meta = widget["metadata"]
    labelled = await client.list(CONFIGMAPS, namespace=meta["namespace"], label_selector=f"{CHILD_LABEL}={meta['name']}")
    mine = [c for c in labelled["items"] if (controller_of(c) or {}).get("uid") == meta["uid"]]
    assert mine, f"no ConfigMap labelled {CHILD_LABEL}={meta['name']} is controlled by it"
    want = str(widget["spec"].get("size", 0))
    assert [c.get("data") for c in mine] == [{"size": want}], f"its ConfigMaps hold {[c.get('data') for c in mine]}"


async def widget_matches(client: Client, widget: dict[str, Any]) -> None:
    meta = widget["metadata"]
    try:
        child = await client.get(CONFIGMAPS, f"{meta['name']}-config", namespace=meta["namespace"])
    except NotFound:
        raise AssertionError(f"ConfigMap {meta['name']}-config is missing") from None
    want = str(widget["spec"].get("size", 0))
    assert (child.get("data") or {}).get("size") == want, f"data.size is {child.get('data')}, spec.size {want}"


WIDGET_SCENARIO = Scenario(
    WIDGETS,
    [{"apiVersion": "grade.kubeloop.dev/v1", "kind": "Widget", "metadata": {"name": f"w{i}"}, "spec": {"size": i}}
     for i in (1, 2)],
    widget_matches,
    edits=[{"spec": {"size": 5}}, {"spec": {"size": 7}}],
    namespace="shop",
    crds=[WIDGET_CRD],
)  # fmt: skip


async def graded(controller: ControllerUnderTest | Callable[..., Any], tmp_path: Path, *checks: str,
                 scenario: Scenario = WIDGET_SCENARIO) -> Report:  # fmt: skip
    return await grade(controller, scenario, checks=checks or None, data_dir=tmp_path)


# -- the sample controller and the honest Widget controller pass ----------------------------------


async def mirror_matches(client: Client, configmap: dict[str, Any]) -> None:
    meta = configmap["metadata"]
    try:
        secret = await client.get(SECRETS, meta["name"], namespace=meta["namespace"])
    except NotFound:
        raise AssertionError(f"Secret {meta['name']} is missing") from None
    assert secret.get("data") == mirrored_data(configmap), f"Secret data {secret.get('data')}"


MIRROR_SCENARIO = Scenario(
    CONFIGMAPS,
    [{"metadata": {"name": f"app{i}", "labels": {MIRROR_LABEL: "true"}}, "data": {"v": str(i)}} for i in range(2)],
    mirror_matches,
    edits=[{"data": {"v": "edited"}}, {"data": {"v": "again", "extra": "1"}}],
    namespace="ns",
)


async def test_the_sample_controller_passes_every_check(tmp_path: Path) -> None:
    # As its main() runs it: with leader election (Lease traffic is housekeeping, never graded).
    election = LeaderElectionOptions("configmap-mirror", identity="grader")
    subject = ControllerUnderTest.manager(mirror_setup, name="configmap-mirror", leader_election=election)
    report = await graded(subject, tmp_path, scenario=MIRROR_SCENARIO)
    report.assert_passed()
    assert [r.outcome for r in report.results] == ["passed"] * 5
    assert "2 reconcile(s)" in report["idempotency"].evidence[0]  # the resync really reconciled
    assert report["idempotency"].evidence[1].startswith("restarted: 2 reconcile(s), idle after ")  # Manager.idle
    assert "answered 409" in report["lost-update"].evidence[0]


async def test_an_honest_widget_controller_passes_every_check_with_real_status_claims(tmp_path: Path) -> None:
    report = await graded(widget_controller(), tmp_path)
    report.assert_passed()
    assert [r.outcome for r in report.results] == ["passed"] * 5
    assert report["status"].summary == "every status claim matched the world"
    assert "0 claim(s)" not in report["status"].evidence[0]


# -- each pitfall fails the check that targets it ------------------------------------------------


async def test_a_controller_that_writes_on_every_reconcile_fails_idempotency(tmp_path: Path) -> None:
    report = await graded(widget_controller("always-write"), tmp_path, "idempotency", "ownership")
    result = report["idempotency"]
    assert result.failed and "write(s) after convergence" in result.summary
    assert any("PUT /api/v1/namespaces/shop/configmaps/w1-config" in line for line in result.evidence)
    assert result.hint
    assert report["ownership"].passed
    assert report.failed() == ["idempotency"] and "[FAILED] idempotency" in report.render()


async def test_a_controller_that_swallows_conflicts_loses_an_update(tmp_path: Path) -> None:
    report = await graded(widget_controller("swallow-conflict"), tmp_path, "lost-update", "idempotency")
    result = report["lost-update"]
    assert result.failed, result.render()
    assert "does not match the latest spec" in result.summary
    assert any("data.size is" in line and "spec.size 7" in line for line in result.evidence)
    assert any("-> 409" in line for line in result.evidence)
    assert report["idempotency"].passed


@pytest.mark.parametrize("seed", [2, 4, 5, 6])
async def test_a_swallowed_conflict_is_caught_whatever_the_seed(tmp_path: Path, seed: int) -> None:
    # An incidental event (a concurrent writer's label on a child it updates again) can wake a
    # swallower into a later update that repairs the child: the decisive round's 409 lands on the
    # update carrying the latest spec, with the controller otherwise idle, so nothing repairs it.
    report = await grade(widget_controller("swallow-conflict"), WIDGET_SCENARIO, checks=["lost-update"],
                         data_dir=tmp_path, seed=seed)  # fmt: skip
    result = report["lost-update"]
    assert result.failed and "does not match the latest spec" in result.summary, result.render()


async def test_conflicts_are_injected_on_child_updates_only_not_on_an_unrelated_object_it_patches(
    tmp_path: Path,
) -> None:
    # Only the race's 409s (no random ones): each must hit a child update. Were they spent on the
    # Namespace patch (which it retries properly), the swallowed child conflict would go unseen.
    subject = widget_controller("note-in-namespace", "swallow-conflict")
    report = await grade(subject, WIDGET_SCENARIO, checks=["lost-update"], data_dir=tmp_path,
                         options=GradeOptions(conflict_rate=0.0))  # fmt: skip
    result = report["lost-update"]
    assert result.failed, result.render()
    assert "does not match the latest spec" in result.summary
    injected = [line for line in result.evidence if "(injected)" in line]
    assert injected and all("/configmaps/w" in line for line in injected), result.render()
    assert not any("/api/v1/namespaces/shop ->" in line for line in result.evidence), result.render()


async def test_a_child_patched_without_its_owner_in_the_body_is_still_a_child_for_the_race(tmp_path: Path) -> None:
    # Its only child updates are merge patches naming no owner: the race finds the child by the
    # object they target (created by it, owned by a Widget) and answers them 409 all the same.
    report = await grade(widget_controller("patch-child"), WIDGET_SCENARIO, checks=["lost-update"], data_dir=tmp_path,
                         options=GradeOptions(conflict_rate=0.0))  # fmt: skip
    result = report["lost-update"]
    assert result.passed, result.render()
    injected = int(result.evidence[0].split(" update(s) answered 409 by the grader")[0])
    assert injected >= 2, result.render()  # one per primary after the last edit, at least


async def test_the_race_always_lands_a_409_on_a_child_update_and_sees_it_retried(tmp_path: Path) -> None:
    # No random 409s: the race's own, one per primary after each spec change, must hit child updates.
    report = await grade(widget_controller(), WIDGET_SCENARIO, checks=["lost-update"], data_dir=tmp_path,
                         options=GradeOptions(conflict_rate=0.0))  # fmt: skip
    result = report["lost-update"]
    assert result.passed, result.render()
    hits = int(result.evidence[1].split(" child update(s) answered 409")[0])
    decisive = int(result.evidence[1].split(", ")[1].split(" in the decisive round")[0])
    assert hits >= 2 and decisive >= 1, result.render()
    assert result.evidence[1].endswith("with the controller idle; 1 round(s))"), result.render()
    assert result.evidence[2].startswith("each was retried and accepted; "), result.render()


async def test_a_controller_that_never_writes_during_the_lost_update_check_is_not_exercised(tmp_path: Path) -> None:
    async def idle(client: Client, clock: Any) -> None:
        await clock.sleep(3600.0)

    async def anything(client: Client, primary: dict[str, Any]) -> None:
        return None

    scenario = dataclasses.replace(WIDGET_SCENARIO, expect=anything)
    report = await grade(idle, scenario, checks=["lost-update"], data_dir=tmp_path)
    result = report["lost-update"]
    assert result.outcome == "skipped" and not result.passed, result.render()
    assert result.summary.startswith("not exercised: the controller made no write during the check"), result.render()


async def test_a_controller_that_never_updates_a_child_is_not_exercised_after_extra_spec_changes(
    tmp_path: Path,
) -> None:
    # It deletes and recreates its children: it loses nothing, but the check could not land a 409 on
    # an update of one, so it says so rather than pass.
    report = await grade(widget_controller("recreate-child"), WIDGET_SCENARIO, checks=["lost-update"],
                         data_dir=tmp_path, options=GradeOptions(conflict_rate=0.0))  # fmt: skip
    result = report["lost-update"]
    assert result.outcome == "skipped", result.render()
    assert result.summary.startswith("not exercised: none of its "), result.render()
    assert "was an update (PUT or PATCH) of a child" in result.summary
    assert "(4 extra spec change(s) tried)" in result.summary, result.render()
    assert any("DELETE /api/v1/namespaces/shop/configmaps/w" in line for line in result.evidence), result.render()


async def test_a_single_edit_scenario_is_changed_back_and_forth_until_a_child_update_gets_its_409(
    tmp_path: Path,
) -> None:
    one_edit = dataclasses.replace(WIDGET_SCENARIO, edits=[{"spec": {"size": 5}}])
    report = await grade(widget_controller("recreate-child"), one_edit, checks=["lost-update"], data_dir=tmp_path,
                         options=GradeOptions(conflict_rate=0.0))  # fmt: skip
    result = report["lost-update"]
    assert result.outcome == "skipped" and "(4 extra spec change(s) tried)" in result.summary, result.render()
    honest = await grade(widget_controller(), one_edit, checks=["lost-update"], data_dir=tmp_path / "honest",
                         options=GradeOptions(conflict_rate=0.0))  # fmt: skip
    assert honest["lost-update"].passed, honest.render()


async def test_a_controller_that_retries_a_conflict_blindly_overwrites_the_concurrent_writer(tmp_path: Path) -> None:
    # After the injected 409 it sends the update again without a resourceVersion: the concurrent
    # writer labels the child just before that retry, and the retry drops the label.
    report = await grade(widget_controller("force-on-conflict"), WIDGET_SCENARIO, checks=["lost-update"],
                         data_dir=tmp_path, options=GradeOptions(conflict_rate=0.0))  # fmt: skip
    result = report["lost-update"]
    assert result.failed, result.render()
    assert result.summary.startswith("the concurrent writer's change to configmaps shop/w"), result.render()


async def test_a_controller_that_patches_an_unrelated_object_and_handles_conflicts_passes_lost_update(
    tmp_path: Path,
) -> None:
    report = await graded(widget_controller("note-in-namespace"), tmp_path, "lost-update", "idempotency")
    report.assert_passed()


async def test_a_controller_that_replaces_objects_blindly_loses_the_other_writers_update(tmp_path: Path) -> None:
    report = await graded(widget_controller("blind-write"), tmp_path, "lost-update")
    result = report["lost-update"]
    assert result.failed, result.render()
    assert "the concurrent writer's change to configmaps shop/" in result.summary
    assert any("label kubeloop.dev/concurrent-writer missing" in line for line in result.evidence)


async def test_a_controller_that_retries_at_a_fixed_short_interval_fails_hot_loop(tmp_path: Path) -> None:
    report = await graded(widget_controller("no-backoff"), tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.failed and "steady rate" in result.summary
    assert any("request(s)/s per object" in line for line in result.evidence)


async def test_one_primarys_children_fail_while_the_others_proceed_and_the_rate_is_measured_on_them(
    tmp_path: Path,
) -> None:
    report = await graded(widget_controller(), tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.passed, result.render()
    assert result.summary == "backed off the failing dependency while the rest proceeded"
    assert result.evidence[0].startswith(
        "writes for Widget shop/w1's children (by ownerReference) answered 500 for 120s of fake time, no other "
        "write faulted; "
    ), result.render()
    assert "(limit 0.1)" in result.evidence[1]
    assert "the other 1 primary object(s) converged meanwhile" in result.evidence


async def test_a_controller_that_stamps_its_status_and_is_woken_by_it_fails_hot_loop(tmp_path: Path) -> None:
    # Each failure stamps status.lastAttempt, whose watch event wakes it at once (past its backoff):
    # on a real clock every wake stamps a new time, so it never stops. Its dependency retries alone
    # stay under the rate limit, so only counting its status rewrites catches it.
    report = await graded(widget_controller("wake-on-status", "status-stamp"), tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.failed, result.render()
    assert result.summary == ("the controller rewrites Widget shop/w1's status while the dependency fails, and each "
                              "rewrite wakes it again (a hot loop through its own watch events)"), result.render()
    assert any(line.startswith("Widget shop/w1's status changed by ") for line in result.evidence), result.render()
    assert any("/widgets/w1/status -> 200" in line for line in result.evidence), result.render()
    assert "GenerationChanged" in result.hint


async def test_a_controller_that_counts_attempts_in_its_status_and_is_woken_by_it_fails_hot_loop(
    tmp_path: Path,
) -> None:
    report = await graded(widget_controller("wake-on-status", "status-counter"), tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.failed, result.render()
    assert result.summary.startswith("hot loop through its own status: the controller rewrites Widget shop/w1's "
                                     "status on every reconcile"), result.render()
    assert "requests in one second of fake time" in result.evidence[0]


@pytest.mark.parametrize("pitfalls", [("wake-on-status",), ("status-stamp",), ("status-counter",)])
async def test_status_written_once_per_change_or_not_waking_the_controller_passes_hot_loop(
    tmp_path: Path, pitfalls: tuple[str, ...]
) -> None:
    # Woken by its status but writing it only when it changes; or stamping it on every attempt but
    # not woken by it (GenerationChanged): its attempts follow its backoff either way.
    report = await graded(widget_controller(*pitfalls), tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.passed, result.render()
    rewrites = next(line for line in result.evidence if line.startswith("Widget shop/w1's status changed by "))
    woke = int(rewrites.split(", ")[1].split(" of which")[0])
    assert woke <= 2, result.render()


async def test_a_controller_that_retries_inside_reconcile_holds_up_the_others_and_fails_hot_loop(
    tmp_path: Path,
) -> None:
    # It backs off (1 s, 2 s, ... 60 s), so its retry rate is low; but its one worker waits on w1's
    # failing child and never reconciles w2.
    report = await graded(widget_controller("inline-retry"), tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.failed, result.render()
    assert result.summary.startswith("one failing dependency held up the other primaries: Widget shop/w2:")
    assert "w2-config is missing" in result.summary
    assert "retry loop" in result.hint


async def test_a_controller_whose_children_name_no_owner_cannot_be_measured_for_hot_loops(tmp_path: Path) -> None:
    report = await graded(widget_controller("no-owner"), tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.outcome == "skipped", result.render()
    assert result.summary.startswith("no write of the controller was for Widget shop/w1's children")


async def test_a_controller_that_retries_in_a_tight_loop_without_time_fails_hot_loop(tmp_path: Path) -> None:
    async def tight_loop(client: Client) -> None:
        while True:
            try:
                await client.create(CONFIGMAPS, {"metadata": {"name": "w1-config", "namespace": "shop"}})
            except Exception:
                continue  # no backoff, not even a yield to time

    report = await graded(tight_loop, tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.failed and result.summary.startswith("hot loop:")
    assert "requests in one second of fake time" in result.evidence[0]


async def test_a_single_burst_at_one_instant_fails_hot_loop_and_names_the_limit(tmp_path: Path) -> None:
    async def burster(client: Client, clock: Any) -> None:
        # One request past the burst limit (100 for two primaries), all at one fake instant.
        await asyncio.gather(*(client.list(CONFIGMAPS, namespace="shop") for _ in range(101)))
        await clock.sleep(5.0)
        with contextlib.suppress(Exception):
            await client.create(CONFIGMAPS, {"metadata": {"name": "w1-config", "namespace": "shop"}})
        await clock.sleep(3600.0)

    report = await graded(burster, tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.failed, result.render()
    assert "1 request(s) beyond 100 at one instant of fake time" in result.evidence, result.render()


async def test_a_controller_that_gives_up_on_a_failing_dependency_fails_hot_loop(tmp_path: Path) -> None:
    async def gives_up(client: Client, clock: Any) -> None:
        await clock.sleep(5.0)
        for widget in (await client.list(WIDGETS, namespace="shop"))["items"]:
            widget.update(apiVersion="grade.kubeloop.dev/v1", kind="Widget")  # list items carry neither
            size = str(widget["spec"]["size"])
            name = f"{widget['metadata']['name']}-config"
            body: dict[str, Any] = {"metadata": {"name": name, "namespace": "shop"}, "data": {"size": size}}
            set_controller_reference(widget, body)
            with contextlib.suppress(Exception):  # one try each, then never again
                await client.create(CONFIGMAPS, body, namespace="shop")
        await clock.sleep(3600.0)

    report = await graded(gives_up, tmp_path, "hot-loop")
    result = report["hot-loop"]
    assert result.failed and result.summary == "backed off, but never recovered once the dependency healed"
    assert any("ConfigMap w1-config is missing" in line for line in result.evidence)


async def test_a_status_ahead_of_the_generation_fails_status(tmp_path: Path) -> None:
    async def ahead(client: Client, clock: Any) -> None:
        await clock.sleep(1.0)
        for widget in (await client.list(WIDGETS, namespace="shop"))["items"]:
            status = {"status": {"observedGeneration": widget["metadata"]["generation"] + 1}}
            await client.patch(WIDGETS, widget["metadata"]["name"], status, namespace="shop", subresource="status")
        await clock.sleep(3600.0)

    report = await graded(ahead, tmp_path, "status")
    result = report["status"]
    assert result.failed, result.render()
    assert result.summary == "Widget shop/w1: status.observedGeneration 2 > metadata.generation 1"


async def test_an_observed_generation_claimed_before_acting_fails_status(tmp_path: Path) -> None:
    async def claims_only(client: Client, clock: Any) -> None:  # no conditions: observedGeneration is the claim
        await clock.sleep(1.0)
        for widget in (await client.list(WIDGETS, namespace="shop"))["items"]:
            await StatusWriter(client).write(WIDGETS, widget, {})
        await clock.sleep(3600.0)

    report = await graded(claims_only, tmp_path, "status")
    result = report["status"]
    assert result.failed, result.render()
    assert "claimed status.observedGeneration=1 (the current generation) while" in result.summary
    assert "ConfigMap w1-config is missing" in result.summary


async def test_a_controller_that_polls_the_server_without_pause_is_stopped_and_failed(tmp_path: Path) -> None:
    async def poller(client: Client) -> None:
        while True:  # waits for its ConfigMap by asking again and again, never letting time pass
            try:
                await client.get(CONFIGMAPS, "w1-config", namespace="shop")
            except NotFound:
                continue

    report = await graded(poller, tmp_path, "idempotency")
    result = report["idempotency"]
    assert result.failed and result.summary.startswith("hot loop:")
    assert "requests in one second of fake time (the grader stops at 500)" in result.evidence[0]


async def test_a_controller_that_claims_ready_before_acting_fails_status(tmp_path: Path) -> None:
    report = await graded(widget_controller("early-status"), tmp_path, "status", "idempotency")
    result = report["status"]
    assert result.failed, result.render()
    assert "claimed condition Ready=True" in result.summary
    assert "is missing" in result.summary or "data.size is" in result.summary
    assert any("/status -> 200" in line for line in result.evidence)
    assert report["idempotency"].passed  # it converges and is quiet: only its claims lie


async def test_a_controller_that_restamps_its_conditions_fails_status(tmp_path: Path) -> None:
    report = await graded(widget_controller("restamp"), tmp_path, "status")
    result = report["status"]
    assert result.failed, result.render()
    assert "condition Ready: lastTransitionTime moved" in result.summary and "while status stayed" in result.summary


async def test_a_controller_that_creates_children_without_owners_fails_ownership(tmp_path: Path) -> None:
    report = await graded(widget_controller("no-owner"), tmp_path, "ownership")
    result = report["ownership"]
    assert result.failed and "0 controller ownerReference(s)" in result.summary


async def test_children_that_outlive_their_owner_fail_ownership(tmp_path: Path) -> None:
    report = await graded(widget_controller("child-finalizer"), tmp_path, "ownership")
    result = report["ownership"]
    assert result.failed, result.render()
    assert result.summary == "children survived the deletion of their owner"
    assert any("ConfigMap shop/w1-config ownerReferences=" in line for line in result.evidence)


GENERATED_SCENARIO = dataclasses.replace(WIDGET_SCENARIO, expect=labelled_child_matches)


async def test_children_made_with_generate_name_are_tested_for_adoption_too(tmp_path: Path) -> None:
    # Every check matches children by ownership, not by name: the honest controller passes them all.
    report = await graded(widget_controller("generate-name"), tmp_path, scenario=GENERATED_SCENARIO)
    assert [r.outcome for r in report.results] == ["passed"] * 5, report.render()
    result = report["ownership"]
    assert result.passed, result.render()
    assert result.summary == "children are owned, collected with their owner, and others' are left alone"
    assert "2 object(s) like the children pre-created (same name, or same generateName), owned by ConfigMap " \
        "kubeloop-grade-other-owner" in result.evidence, result.render()


async def test_a_controller_that_adopts_someone_elses_generated_children_fails_ownership(tmp_path: Path) -> None:
    report = await graded(widget_controller("generate-name", "adopt"), tmp_path, "ownership", scenario=GENERATED_SCENARIO)
    result = report["ownership"]
    assert result.failed, result.render()
    assert result.summary.startswith("ConfigMap shop/w1-config-"), result.summary
    assert "owned by ConfigMap kubeloop-grade-other-owner, was adopted" in result.summary


async def test_a_controller_that_counts_someone_elses_generated_child_as_its_own_fails_ownership(
    tmp_path: Path,
) -> None:
    subject = widget_controller("generate-name", "count-others")
    report = await graded(subject, tmp_path, "ownership", scenario=GENERATED_SCENARIO)
    result = report["ownership"]
    assert result.failed, result.render()
    assert "owned by ConfigMap kubeloop-grade-other-owner, was counted as its own: 0 ConfigMap(s) of its own " \
        "with generateName 'w1-config-', where it made 1 alone" in result.summary, result.render()


async def test_a_controller_that_adopts_someone_elses_objects_fails_ownership(tmp_path: Path) -> None:
    report = await graded(widget_controller("adopt"), tmp_path, "ownership")
    result = report["ownership"]
    assert result.failed, result.render()
    assert "was adopted" in result.summary and "kubeloop-grade-other-owner" in result.summary


# -- built-in controllers beside the graded one ----------------------------------------------------

DEPLOYMENTS = resource("apps", "Deployment")
REPLICASETS = resource("apps", "ReplicaSet")


def deployer(manager: Manager, *, replace_spec: bool = False) -> None:
    """Each ConfigMap gets a Deployment of the same name (0 replicas), owned by it. With
    ``replace_spec`` it writes its whole spec every time, which never equals the defaulted one."""
    configmaps = manager.informer(CONFIGMAPS).cache
    deployments = manager.informer(DEPLOYMENTS).cache

    async def reconcile(request: Request) -> None:
        configmap = configmaps.get(f"{request.namespace}/{request.name}")
        if configmap is None or is_being_deleted(configmap):
            return

        def mutate(deployment: dict[str, Any]) -> None:
            set_controller_reference(configmap, deployment)
            labels = {"app": request.name}
            template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "app:1"}]}}
            if replace_spec:
                deployment["spec"] = {"replicas": 0, "selector": {"matchLabels": labels}, "template": template}
                return
            spec = deployment.setdefault("spec", {})
            spec["replicas"] = 0
            spec.setdefault("selector", {"matchLabels": labels})
            spec.setdefault("template", template)

        wanted = {"metadata": {"name": request.name, "namespace": request.namespace}}
        await create_or_update(manager.client, DEPLOYMENTS, wanted, mutate, cache=deployments)

    Builder(manager).named("deployer").for_(CONFIGMAPS).owns(DEPLOYMENTS).build(reconcile)


async def has_a_replicaset(client: Client, configmap: dict[str, Any]) -> None:
    sets = await client.list(REPLICASETS, namespace=configmap["metadata"]["namespace"])
    owners = [ref["name"] for rs in sets["items"] for ref in rs["metadata"].get("ownerReferences") or ()]
    assert configmap["metadata"]["name"] in owners, "no ReplicaSet for its Deployment yet"


async def test_built_in_controllers_can_run_beside_the_graded_one(tmp_path: Path) -> None:
    register_workload_controllers()
    scenario = Scenario(CONFIGMAPS, [{"metadata": {"name": "web"}}], has_a_replicaset, namespace="shop")
    subject = ControllerUnderTest.manager(deployer, name="deployer")
    with_deployments = GradeOptions(builtins=("garbage-collector", "namespace", "deployment"))
    report = await grade(subject, scenario, checks=["idempotency", "ownership"], data_dir=tmp_path / "with",
                         options=with_deployments)  # fmt: skip
    report.assert_passed()
    alone = await grade(subject, scenario, checks=["idempotency"], data_dir=tmp_path / "alone",
                        options=GradeOptions(converge_seconds=5.0))  # fmt: skip
    assert alone["idempotency"].failed and "no ReplicaSet for its Deployment yet" in alone["idempotency"].evidence[0]


async def test_a_controller_that_fights_the_servers_defaults_is_caught(tmp_path: Path) -> None:
    register_workload_controllers()
    scenario = Scenario(CONFIGMAPS, [{"metadata": {"name": "web"}}], has_a_replicaset, namespace="shop")
    subject = ControllerUnderTest.manager(lambda m: deployer(m, replace_spec=True), name="deployer")
    with_deployments = GradeOptions(builtins=("garbage-collector", "namespace", "deployment"))
    report = await grade(subject, scenario, checks=["idempotency"], data_dir=tmp_path, options=with_deployments)
    result = report["idempotency"]
    # Each resync it PUTs the spec without the server's defaults. The server defaults the body before it
    # compares specs (as upstream's decoder does), so the write changes nothing and wakes nobody (no hot
    # loop, as there was while kubeloop compared the undefaulted body and bumped the generation), but a
    # converged resync still writes: caught as not idempotent.
    assert result.failed and result.summary.endswith("after convergence, with nothing to change"), result.render()


# -- the rules themselves --------------------------------------------------------------------------


def test_conditions_must_be_well_formed_and_move_their_transition_time_only_with_their_status() -> None:
    seen: dict[tuple[str, str], tuple[str, str]] = {}

    def widget(*conditions: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"uid": "u", "generation": 2}, "status": {"conditions": list(conditions)}}

    t1, t2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"
    assert condition_problems(widget({"type": "Ready", "status": "False", "lastTransitionTime": t1}), seen) == []
    assert condition_problems(widget({"type": "Ready", "status": "True", "lastTransitionTime": t2}), seen) == []
    moved = condition_problems(widget({"type": "Ready", "status": "True", "lastTransitionTime": t1}), seen)
    assert moved == [f"condition Ready: lastTransitionTime moved {t2} -> {t1} while status stayed True"]
    stuck = condition_problems(widget({"type": "Ready", "status": "False", "lastTransitionTime": t1}), seen)
    assert stuck == [f"condition Ready: status changed True -> False but lastTransitionTime stayed {t1}"]
    bad = condition_problems(
        widget({"type": "Ready", "status": "yes", "lastTransitionTime": "soon"}, {"type": "Ready", "status": "True",
               "lastTransitionTime": t1, "observedGeneration": 3}, {"status": "True"}),
        {},
    )  # fmt: skip
    assert bad == [
        "condition Ready: status 'yes' is not True, False or Unknown",
        "condition Ready: lastTransitionTime 'soon' is not an RFC 3339 time",
        "condition Ready appears twice",
        "condition Ready: observedGeneration 3 > metadata.generation 2",
        "condition without a type: {'status': 'True'}",
    ]


async def test_checks_with_nothing_to_measure_are_skipped_and_do_not_fail_the_grade(tmp_path: Path) -> None:
    async def idle(client: Client, clock: Any) -> None:  # reads nothing, writes nothing
        await clock.sleep(3600.0)

    async def anything(client: Client, primary: dict[str, Any]) -> None:
        return None

    scenario = Scenario(CONFIGMAPS, [{"metadata": {"name": "a"}}], anything, namespace="shop")  # no edits
    report = await grade(idle, scenario, data_dir=tmp_path)
    assert [(r.check, r.outcome) for r in report.results] == [
        ("idempotency", "passed"), ("lost-update", "skipped"), ("hot-loop", "skipped"), ("status", "passed"),
        ("ownership", "skipped"),
    ], report.render()  # fmt: skip
    assert report["lost-update"].summary == "the scenario has no edits: nothing can be lost"
    assert report["hot-loop"].summary == "the controller made no write, so no dependency could fail"
    assert report["ownership"].summary == "the controller created no object"
    assert report["status"].summary == "the controller made no status claim"
    assert report.passed and report.failed() == []
    report.assert_passed()


def test_a_scenarios_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        Scenario(CONFIGMAPS, [], mirror_matches, [{"data": {"v": "1"}}])  # type: ignore[misc]


def test_unknown_checks_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown check"):
        import asyncio

        asyncio.run(grade(widget_controller(), WIDGET_SCENARIO, checks=["speed"]))

