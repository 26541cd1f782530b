"""The claim checks: status honesty and ownership (reconciliation pitfalls 9, 10 and 8).

* **status**: every write of the controller to a primary is judged the moment the server accepted
  it, *before* the controller gets the answer (the world is as the controller left it):

  - ``status.observedGeneration`` (and a condition's ``observedGeneration``) is never above
    ``metadata.generation``;
  - a claim of being done (``observedGeneration`` equal to the generation with no ready-style
    condition saying otherwise, or a ready-style condition ``True`` for the current generation)
    holds only when ``scenario.expect`` holds: no Ready while the children are missing or stale;
  - conditions are well-formed: a non-empty ``type`` once each, ``status`` one of
    ``True``/``False``/``Unknown``, a ``lastTransitionTime``, which moves exactly when ``status``
    changes.

  The children's writes (POSTs to other resources) fail for the first seconds, so a controller
  that declares Ready regardless is caught; then the scenario's edits run.
* **ownership**: every object the controller created carries exactly one controller
  ownerReference, to a live owner (same uid) in its namespace or cluster-scoped; deleting the
  primaries removes them (the garbage collector follows those references); and, in a fresh world
  where look-alikes of its namespaced children already exist, owned by someone else (the same name,
  or for a child made with ``generateName`` the same ``generateName``, labels and annotations),
  the controller neither adopts them nor replaces them, and still makes as many ``generateName``
  children of its own (matched by its own requests and ownerReferences, never by name): a
  look-alike counted as its own leaves one of its children missing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubeloop.api import ApiError, NotFound, owner_reference
from kubeloop.testing._checks import GradeOptions, WorldFactory, converge_with_edits, write_lines
from kubeloop.testing._cluster import resource
from kubeloop.testing._lineage import Lineage
from kubeloop.testing._subject import CheckResult
from kubeloop.testing._traffic import Exchange, Failing
from kubeloop.testing._world import World

__all__ = ["check_ownership", "check_status", "condition_problems"]

_STATUSES = ("True", "False", "Unknown")
_DECOY = "kubeloop-grade-other-owner"


def _parse_time(value: object) -> bool:
    if not isinstance(value, str) or not value:
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def condition_problems(
    obj: Mapping[str, Any], previous: dict[tuple[str, str], tuple[str, str]]
) -> list[str]:
    """Why ``obj``'s ``status.conditions`` are malformed; ``previous`` maps ``(uid, type)`` to the
    last ``(status, lastTransitionTime)`` seen and is updated."""
    conditions = (obj.get("status") or {}).get("conditions")
    if conditions is None:
        return []
    if not isinstance(conditions, list):
        return ["status.conditions is not a list"]
    uid = str((obj.get("metadata") or {}).get("uid", ""))
    generation = (obj.get("metadata") or {}).get("generation")
    found: list[str] = []
    seen: set[str] = set()
    for c in conditions:
        kind = c.get("type") if isinstance(c, dict) else None
        if not isinstance(kind, str) or not kind:
            found.append(f"condition without a type: {c!r}")
            continue
        if kind in seen:
            found.append(f"condition {kind} appears twice")
        seen.add(kind)
        status, ltt = c.get("status"), c.get("lastTransitionTime")
        if status not in _STATUSES:
            found.append(f"condition {kind}: status {status!r} is not True, False or Unknown")
        if not _parse_time(ltt):
            found.append(f"condition {kind}: lastTransitionTime {ltt!r} is not an RFC 3339 time")
        og = c.get("observedGeneration")
        if isinstance(og, int) and isinstance(generation, int) and og > generation:
            found.append(f"condition {kind}: observedGeneration {og} > metadata.generation {generation}")
        before = previous.get((uid, kind))
        if before is not None and isinstance(status, str) and isinstance(ltt, str):
            if before[0] == status and before[1] != ltt:
                found.append(f"condition {kind}: lastTransitionTime moved {before[1]} -> {ltt} while status stayed {status}")
            if before[0] != status and before[1] == ltt:
                found.append(f"condition {kind}: status changed {before[0]} -> {status} but lastTransitionTime stayed {ltt}")
        if isinstance(status, str) and isinstance(ltt, str):
            previous[(uid, kind)] = (status, ltt)
    return found


def _claim(obj: Mapping[str, Any], ready_types: Sequence[str]) -> str | None:
    """What ``obj``'s status claims about its current generation ("done" claims only), or ``None``."""
    status = obj.get("status") or {}
    generation = (obj.get("metadata") or {}).get("generation")
    observed = status.get("observedGeneration")
    ready = [c for c in status.get("conditions") or () if isinstance(c, dict) and c.get("type") in ready_types]
    for c in ready:
        if c.get("status") == "True" and c.get("observedGeneration", observed) in (generation, None):
            return f"condition {c['type']}=True at generation {generation}"
    if ready:
        return None  # a ready-style condition says "not (yet)": observedGeneration alone claims nothing
    if observed is not None and observed == generation:
        return f"status.observedGeneration={observed} (the current generation)"
    return None


class _Judge:
    def __init__(self, world: World) -> None:
        self.world = world
        self.claims = 0
        self.violations: list[str] = []
        self.requests: list[Exchange] = []
        self.previous: dict[tuple[str, str], tuple[str, str]] = {}

    async def after_write(self, exchange: Exchange) -> None:
        if exchange.status >= 300 or exchange.method == "DELETE":
            return
        obj = exchange.answer_json()
        scenario = self.world.scenario
        if not isinstance(obj, dict) or obj.get("kind") != scenario.resource.kind:
            return
        await self.judge(obj, exchange)

    async def judge(self, obj: dict[str, Any], exchange: Exchange | None) -> None:
        meta = obj.get("metadata") or {}
        where = f"{self.world.scenario.resource.kind} {meta.get('namespace', '')}/{meta.get('name')}"
        found = [f"{where}: {p}" for p in condition_problems(obj, self.previous)]
        status = obj.get("status") or {}
        observed, generation = status.get("observedGeneration"), meta.get("generation")
        if isinstance(observed, int) and isinstance(generation, int) and observed > generation:
            found.append(f"{where}: status.observedGeneration {observed} > metadata.generation {generation}")
        claim = _claim(obj, self.world.scenario.ready_conditions)
        if claim is not None:
            self.claims += 1
            for problem in await self.world.judge(obj):
                found.append(f"{where} claimed {claim} while: {problem}")
        if found:
            self.violations += found
            if exchange is not None:
                self.requests.append(exchange)


async def check_status(make_world: WorldFactory, options: GradeOptions) -> CheckResult:
    name = "status"
    hint = ("set observedGeneration and Ready=True only after the children match the spec of that "
            "generation; move lastTransitionTime only when a condition's status changes (set_condition)")  # fmt: skip
    async with make_world(name) as world:
        judge = _Judge(world)
        world.traffic.after_write = judge.after_write
        children_down = Failing(
            options.failure_status, methods=("POST",), unless_path_contains="/events",
        )
        world.traffic.faults.append(children_down)
        plural = f"/{world.scenario.resource.plural}"
        world.start_controller()
        await world.create_primaries()
        await world.drive_schedule([(0.5, 0.01), (4.5, 0.1)])
        # Writes to the primaries themselves (status) always worked; only the children failed.
        creates = [e for e in world.traffic.exchanges if e.injected]
        children_down.active = False
        problems = await converge_with_edits(world, options)
        await world.until_idle(5.0, step=0.25, within=5.0)
        for obj in await world.current_primaries():
            if obj is not None:
                await judge.judge(obj, None)
        primary_writes = [e for e in world.traffic.writes() if plural in e.path and not e.injected]
        evidence = [
            f"{len(creates)} create(s) of children answered {options.failure_status} for the first 5s; "
            f"{len(primary_writes)} write(s) to primaries judged, {judge.claims} claim(s) of done",
        ]  # fmt: skip
        if judge.violations:
            return CheckResult(name, "failed", judge.violations[0],
                               (*evidence, *judge.violations[1:8], *write_lines(judge.requests, limit=4)), hint)  # fmt: skip
        if problems:
            evidence += problems[:4]
        summary = "every status claim matched the world" if judge.claims else "the controller made no status claim"
        return CheckResult(name, "passed", summary, tuple(evidence))


# -- ownership -----------------------------------------------------------------------------------


async def _reference_problems(world: World, child: Mapping[str, Any]) -> list[str]:
    meta = child.get("metadata") or {}
    where = f"{child.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}".replace(" /", " ")
    refs = meta.get("ownerReferences") or []
    controllers = [r for r in refs if r.get("controller")]
    if len(controllers) != 1:
        return [f"{where}: {len(controllers)} controller ownerReference(s) (want exactly 1): {refs}"]
    ref = controllers[0]
    info = await world.resolve(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
    if info is None:
        return [f"{where}: owner kind {ref.get('apiVersion')}/{ref.get('kind')} is not served"]
    if info.namespaced and not meta.get("namespace"):
        return [f"{where}: a cluster-scoped object owned by a namespaced {info.kind} (never collected)"]
    try:
        owner = await world.client.get(info, str(ref.get("name")), namespace=meta.get("namespace") if info.namespaced else None)
    except NotFound:
        return [f"{where}: owner {info.kind} {ref.get('name')} does not exist (in the child's namespace)"]
    if owner["metadata"]["uid"] != ref.get("uid"):
        return [f"{where}: owner {info.kind} {ref.get('name')} has uid {owner['metadata']['uid']}, the reference {ref.get('uid')}"]
    return []


def _copy_for_other_owner(child: Mapping[str, Any], owner: Mapping[str, Any]) -> dict[str, Any]:
    meta = child["metadata"]
    body = {k: v for k, v in child.items() if k not in ("metadata", "status")}
    named = {"generateName": meta["generateName"]} if meta.get("generateName") else {"name": meta["name"]}
    body["metadata"] = {
        **named, "namespace": meta["namespace"],
        "labels": dict(meta.get("labels") or {}), "annotations": dict(meta.get("annotations") or {}),
        "ownerReferences": [owner_reference(owner, controller=True)],
    }  # fmt: skip
    return body


def _made_alike(child: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """What makes children interchangeable when the server names them: kind, namespace, ``generateName``."""
    meta = child.get("metadata") or {}
    return (str(child.get("apiVersion")), str(child.get("kind")), str(meta.get("namespace", "")), str(meta.get("generateName", "")))


async def check_ownership(make_world: WorldFactory, options: GradeOptions) -> CheckResult:
    name = "ownership"
    evidence: list[str] = []
    async with make_world(name) as world:
        world.start_controller()
        started = world.clock.monotonic()
        await world.create_primaries()
        problems = await world.converge(seconds=options.converge_seconds)
        took = world.clock.monotonic() - started
        await world.until_idle(2.0, step=0.1, within=2.0)
        created = world.traffic.created()
        if problems:
            evidence += problems[:3]
        if not created:
            return CheckResult(name, "skipped", "the controller created no object", tuple(evidence))
        live = [obj for obj in [await world.get_live(c) for c in created] if obj is not None]
        evidence.append(f"{len(created)} object(s) created by the controller, {len(live)} still there")
        found: list[str] = []
        for child in live:
            found += await _reference_problems(world, child)
        if found:
            return CheckResult(name, "failed", found[0], (*evidence, *found[1:6]),
                               "give every object you create one controller reference to its owner "
                               "(set_controller_reference), in the owner's namespace")  # fmt: skip
        for obj in world.primaries:
            meta = obj["metadata"]
            await world.client.delete(world.scenario.resource, meta["name"], namespace=meta.get("namespace"))
        left: list[dict[str, Any]] = []
        for _ in range(60):
            await world.drive(0.5, step=0.05)
            left = [obj for obj in [await world.get_live(c) for c in live] if obj is not None]
            if not left:
                break
        if left:
            where = [f"{o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']} ownerReferences="
                     f"{o['metadata'].get('ownerReferences')}" for o in left]  # fmt: skip
            return CheckResult(name, "failed", "children survived the deletion of their owner", (*evidence, *where),
                               "children must reference their owner so the garbage collector removes them")  # fmt: skip
        evidence.append("deleting the primaries removed every child")
    # Named children and generateName ones alike: the look-alikes get the same name, or the same
    # generateName (the server names them), labels and annotations.
    alike = [c for c in live if (c.get("metadata") or {}).get("namespace")]
    if not alike:
        return CheckResult(name, "passed", "children are owned and collected; no namespaced child to test adoption",
                           tuple(evidence))  # fmt: skip
    async with make_world(f"{name}-adoption") as world:
        return await _adoption(world, alike, evidence, drive=max(10.0, took + 5.0))


async def _adoption(world: World, alike: list[dict[str, Any]], evidence: list[str], *, drive: float) -> CheckResult:
    """Pre-create a look-alike of every child, owned by someone else, then run the controller: it
    must neither adopt nor replace them, and where the server names its children (``generateName``)
    it must still make as many of its own (its own matched by its requests and ownerReferences,
    never by name): a look-alike counted as its own is one child missing."""
    name = "ownership"
    configmaps = resource("", "ConfigMap")
    others: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (pre-existing object, its owner)
    owners: dict[str, dict[str, Any]] = {}
    for child in alike:
        ns = child["metadata"]["namespace"]
        if ns not in owners:
            owner = await world.client.create(configmaps, {"metadata": {"name": _DECOY, "namespace": ns}}, namespace=ns)
            owner.update(apiVersion="v1", kind="ConfigMap")
            owners[ns] = owner
        info = await world.resolve(child["apiVersion"], child["kind"])
        if info is None:
            continue
        try:
            made = await world.client.create(info, _copy_for_other_owner(child, owners[ns]), namespace=ns)
        except ApiError as err:  # a kind whose copy is not valid on its own: nothing to test for it
            evidence.append(f"could not pre-create {child['kind']} {ns}/{child['metadata']['name']}: {err}")
            continue
        made.update(apiVersion=child["apiVersion"], kind=child["kind"])
        others.append((made, owners[ns]))
    world.start_controller()
    await world.create_primaries()
    await world.drive(drive, step=0.05)
    primary_uids = {p["metadata"]["uid"] for p in world.primaries}
    found: list[str] = []
    for made, owner in others:
        meta = made["metadata"]
        where = f"{made['kind']} {meta['namespace']}/{meta['name']}"
        now = await world.get_live(made)
        if now is None or now["metadata"]["uid"] != meta["uid"]:
            found.append(f"{where}, owned by ConfigMap {_DECOY}, was deleted or replaced")
            continue
        refs = now["metadata"].get("ownerReferences") or []
        if any(r.get("uid") in primary_uids for r in refs):
            found.append(f"{where}, owned by ConfigMap {_DECOY}, was adopted: ownerReferences={refs}")
        elif [r.get("uid") for r in refs if r.get("controller")] != [owner["metadata"]["uid"]]:
            found.append(f"{where}: its controller reference was changed: ownerReferences={refs}")
    found += await _counted_as_own(world, alike, [made for made, _ in others])
    evidence.append(f"{len(others)} object(s) like the children pre-created (same name, or same generateName), "
                    f"owned by ConfigMap {_DECOY}")  # fmt: skip
    if found:
        writes = [e for e in world.traffic.writes() if any(o[0]["metadata"]["name"] in e.path for o in others)]
        return CheckResult(name, "failed", found[0], (*evidence, *found[1:6], *write_lines(writes, limit=4)),
                           "never take over (or count) an object another controller owns: select your children by "
                           "your controller reference, refuse others' objects (AlreadyOwnedError) and report it")  # fmt: skip
    return CheckResult(name, "passed", "children are owned, collected with their owner, and others' are left alone",
                       tuple(evidence))  # fmt: skip


async def _counted_as_own(world: World, alike: list[dict[str, Any]], decoys: list[dict[str, Any]]) -> list[str]:
    """Children the server names (``generateName``) that the controller made fewer of beside the look-alikes."""
    wanted = Counter(_made_alike(c) for c in alike if c["metadata"].get("generateName"))
    if not wanted:
        return []
    own: Counter[tuple[str, str, str, str]] = Counter()
    for child in Lineage(world).children():
        now = await world.get_live(child)
        if now is not None and now["metadata"]["uid"] == child["metadata"]["uid"]:
            own[_made_alike(child)] += 1
    found = []
    for key, count in wanted.items():
        if own[key] < count:
            _, kind, ns, prefix = key
            names = [d["metadata"]["name"] for d in decoys if _made_alike(d) == key]
            found.append(f"{kind} {ns}/{', '.join(names)}, owned by ConfigMap {_DECOY}, was counted as its own: "
                         f"{own[key]} {kind}(s) of its own with generateName {prefix!r}, where it made {count} alone")  # fmt: skip
    return found
