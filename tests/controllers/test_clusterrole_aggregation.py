"""ClusterRole aggregation (k/k ``pkg/controller/clusterroleaggregation``), through the real HTTP API in-process.

The world is a bootstrapped app behind the real security chain (authentication, RBAC over the store,
escalation prevention), as ``kubeloop up`` serves it: the controller runs on a manager whose client
is the controller manager's identity (``system:kube-controller-manager``, through an
``InterceptedClient`` so tests count and race its writes); the admin and a service account each
have their own client.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeloop.api import Forbidden
from kubeloop.cli._bootstrap import bootstrap
from kubeloop.client import Client
from kubeloop.controllers import (
    BUILTIN_CONTROLLERS,
    ClusterRoleAggregationController,
    add_builtin_controllers,
)
from kubeloop.controllers._clusterrole_aggregation import (
    CLUSTERROLES,
    FIELD_MANAGER,
    aggregate_rules,
    same_rules,
)
from kubeloop.runtime import Manager, Request
from kubeloop.server import (
    CONTROLLER_MANAGER_USER,
    ENVTEST_DISABLED_ADMISSION_PLUGINS,
    RbacEscalationCheck,
    User,
    create_app,
    secure,
    store_rbac_authorizer,
)
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock, InterceptedClient, Write, eventually, resource

CONFIGMAPS = resource("", "ConfigMap")
SECRETS = resource("", "Secret")
NAMESPACES = resource("", "Namespace")
ROLEBINDINGS = resource("rbac.authorization.k8s.io", "RoleBinding")
VIEW_LABEL = "rbac.authorization.k8s.io/aggregate-to-view"
ROBOT = "system:serviceaccount:team:robot"


@dataclass
class World:
    admin: Client
    robot: Client
    ctl: InterceptedClient
    manager: Manager
    clock: FakeClock

    async def role(self, name: str) -> dict[str, Any]:
        return await self.admin.get(CLUSTERROLES, name)

    async def until(self, check: Callable[[], Awaitable[Any]]) -> Any:
        return await eventually(check, clock=self.clock, step=0.05, interval=0.002, tries=1500)

    async def rules_become(self, name: str, expected: list[dict[str, Any]] | None) -> dict[str, Any]:
        async def check() -> dict[str, Any]:
            role = await self.role(name)
            assert role.get("rules") == expected, role.get("rules")
            return role

        result: dict[str, Any] = await self.until(check)
        return result

    async def settle(self) -> None:
        """Let pending watch events arrive (real time: the store commits on its own thread), then wait
        until the controller has nothing queued or in reconcile."""
        for _ in range(30):
            await asyncio.sleep(0.002)

        async def idle() -> bool:
            return self.manager.idle()

        await eventually(idle, interval=0.002)

    async def quiet_writes(self) -> int:
        """Reconcile every ClusterRole again while nothing changes; count the writes that made."""
        await self.settle()
        before = self.ctl.count()
        controller = self.manager.controllers[ClusterRoleAggregationController.name]
        for obj in controller.watches[0].source.cache.list():  # type: ignore[attr-defined]
            controller.enqueue(Request.for_object(obj))
        await self.settle()
        return self.ctl.count() - before


async def allowed(request: Awaitable[Any]) -> bool:
    """Whether the request is authorized (403 Forbidden: it is not)."""
    try:
        await request
    except Forbidden:
        return False
    return True


@contextlib.asynccontextmanager
async def open_world(tmp_path: Path, *, before_write: Callable[[Write], Awaitable[None]] | None = None,
                     start: bool = True) -> AsyncIterator[World]:  # fmt: skip
    clock = FakeClock()
    store = await SqliteStore.open(tmp_path / "kubeloop.db")
    core = create_app(store=store, clock=clock, rng=random.Random(5), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    authorizer = store_rbac_authorizer(store)
    core.admission.append(RbacEscalationCheck(authorizer))
    await core.startup()
    await bootstrap(core)
    tokens = {
        "admin": User("kubernetes-admin", groups=("system:masters", "system:authenticated")),
        "cm": User(CONTROLLER_MANAGER_USER, groups=("system:authenticated",)),
        "robot": User(ROBOT, groups=("system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated")),
    }
    app = secure(core, tokens=tokens, authorizer=authorizer)
    admin = Client.from_asgi(app, token="admin", clock=clock, default_namespace="team")
    robot = Client.from_asgi(app, token="robot", clock=clock, default_namespace="team")
    ctl = InterceptedClient(Client.from_asgi(app, token="cm", clock=clock), before_write=before_write)
    manager = Manager(ctl, clock=clock, rng=random.Random(3), graceful_shutdown_timeout=0)
    manager.add_controller(ClusterRoleAggregationController(manager).controller)
    world = World(admin, robot, ctl, manager, clock)
    await admin.create(NAMESPACES, {"metadata": {"name": "team"}})
    task = asyncio.create_task(manager.run()) if start else None
    try:
        yield world
    finally:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        for client in (admin, robot, ctl):
            await client.close()
        await core.shutdown()
        await store.close()


def cluster_role(name: str, *, labels: dict[str, str] | None = None, rules: list[dict[str, Any]] | None = None,
                 selectors: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    role: dict[str, Any] = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                            "metadata": {"name": name, "labels": labels or {}}}  # fmt: skip
    if rules is not None:
        role["rules"] = rules
    if selectors is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": selectors}
    return role


def rule(resources: list[str], verbs: list[str], group: str = "") -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": [group], "resources": resources}


async def has_rule(world: World, role: str, wanted: dict[str, Any], *, present: bool = True) -> bool:
    return (wanted in ((await world.role(role)).get("rules") or [])) is present


async def bind_view(world: World) -> None:
    await world.admin.create(ROLEBINDINGS, {
        "metadata": {"name": "robot-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "team"}],
    })  # fmt: skip


# -- the merge itself (upstream's syncClusterRole over plain objects) ----------------------------------------


def test_rules_follow_selector_order_then_role_name_skip_the_role_itself_and_drop_semantic_duplicates() -> None:
    read_cm = rule(["configmaps"], ["get"])
    read_cm_spelled_otherwise = {**read_cm, "resourceNames": [], "nonResourceURLs": None}
    agg = cluster_role("agg", labels={"a": "1"}, rules=[rule(["nodes"], ["get"])],
                       selectors=[{"matchLabels": {"b": "1"}}, {"matchLabels": {"a": "1"}}])  # fmt: skip
    roles = [
        agg,  # matches its own second selector: skipped, as upstream
        cluster_role("z", labels={"a": "1"}, rules=[rule(["pods"], ["list"])]),
        cluster_role("y", labels={"a": "1", "b": "1"}, rules=[read_cm_spelled_otherwise, rule(["secrets"], ["get"])]),
        cluster_role("x", labels={"b": "1"}, rules=[read_cm]),
        cluster_role("w", labels={"c": "1"}, rules=[rule(["events"], ["get"])]),
    ]
    merged = aggregate_rules(agg, roles)
    # Selector b first (x before y by name), then selector a (y again: nothing new; then z).
    assert merged == [read_cm, rule(["secrets"], ["get"]), rule(["pods"], ["list"])]
    assert same_rules([read_cm_spelled_otherwise], [read_cm]) and same_rules(None, [])
    assert not same_rules([rule(["a", "b"], ["get"])], [rule(["b", "a"], ["get"])])  # list order is significant
    assert aggregate_rules(cluster_role("none", selectors=[{"matchLabels": {"q": "1"}}]), roles) == []


# -- the controller, through the API --------------------------------------------------------------------------


async def test_bootstrap_view_edit_and_admin_are_built_from_the_aggregate_to_roles(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        to_view = (await world.role("system:aggregate-to-view"))["rules"]
        to_edit = (await world.role("system:aggregate-to-edit"))["rules"]
        to_admin = (await world.role("system:aggregate-to-admin"))["rules"]
        view = await world.rules_become("view", to_view)
        # edit gathers aggregate-to-edit: system:aggregate-to-edit, then view (by name).
        edit = await world.rules_become("edit", to_edit + to_view)
        # admin gathers aggregate-to-admin: edit (by name, "edit" < "system:..."), then system:aggregate-to-admin.
        await world.rules_become("admin", to_edit + to_view + to_admin)
        assert FIELD_MANAGER in {f["manager"] for f in view["metadata"]["managedFields"]}
        assert edit["aggregationRule"] == {"clusterRoleSelectors": [{"matchLabels": {
            "rbac.authorization.k8s.io/aggregate-to-edit": "true"}}]}  # fmt: skip
        assert await world.quiet_writes() == 0  # rules already match: nothing is written


async def test_a_role_labelled_aggregate_to_view_grants_through_view_bindings_until_the_label_goes(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        await bind_view(world)
        await world.admin.create(SECRETS, {"metadata": {"name": "s"}})

        await world.until(lambda: allowed(world.robot.list(CONFIGMAPS)))  # view itself is filled in
        assert not await allowed(world.robot.get(SECRETS, "s"))  # view grants no secrets

        secrets_reader = [rule(["secrets"], ["get", "list"])]
        await world.admin.create(CLUSTERROLES, cluster_role("secret-reader", labels={VIEW_LABEL: "true"},
                                                            rules=secrets_reader))  # fmt: skip
        await world.until(lambda: allowed(world.robot.get(SECRETS, "s")))
        for name in ("view", "edit", "admin"):  # the chain carries it to edit and admin too
            await world.until(lambda role=name: has_rule(world, role, secrets_reader[0]))

        await world.admin.patch(CLUSTERROLES, "secret-reader", {"metadata": {"labels": {VIEW_LABEL: None}}})

        async def robot_denied() -> bool:
            return not await allowed(world.robot.get(SECRETS, "s"))

        await world.until(robot_denied)
        for name in ("view", "edit", "admin"):
            await world.until(lambda role=name: has_rule(world, role, secrets_reader[0], present=False))
        assert await allowed(world.robot.list(CONFIGMAPS))  # the rest of view stays


async def test_rules_written_by_hand_are_replaced_and_a_selector_matching_nothing_empties_them(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        mine = cluster_role("mine", selectors=[{"matchLabels": {"team": "blue"}}], rules=[rule(["pods"], ["get"])])
        await world.admin.create(CLUSTERROLES, mine)
        await world.rules_become("mine", None)  # upstream writes its nil slice: rules null
        await world.admin.create(CLUSTERROLES, cluster_role("blue-1", labels={"team": "blue"},
                                                            rules=[rule(["configmaps"], ["list"])]))  # fmt: skip
        await world.rules_become("mine", [rule(["configmaps"], ["list"])])
        await world.admin.delete(CLUSTERROLES, "blue-1")
        await world.rules_become("mine", None)

        # No selector match and no rules: already right, so never written.
        world.ctl.reset()
        await world.admin.create(CLUSTERROLES, cluster_role("idle", selectors=[{"matchLabels": {"team": "red"}}]))
        assert await world.quiet_writes() == 0
        assert world.ctl.count(resource="clusterroles") == 0
        assert (await world.role("idle")).get("rules") is None


async def test_a_write_that_loses_a_race_is_a_409_and_is_retried_from_the_new_object(tmp_path: Path) -> None:
    raced: list[Write] = []

    async def race(write: Write) -> None:
        # Just before the controller's first write to "mine", someone else changes the role.
        if write.resource == "clusterroles" and write.name == "mine" and not raced:
            raced.append(write)
            await world.admin.patch(CLUSTERROLES, "mine", {"metadata": {"annotations": {"touched": "y"}}})

    async with open_world(tmp_path, before_write=race) as world:
        await world.admin.create(CLUSTERROLES, cluster_role("blue-1", labels={"team": "blue"},
                                                            rules=[rule(["configmaps"], ["list"])]))  # fmt: skip
        await world.admin.create(CLUSTERROLES, cluster_role("mine", selectors=[{"matchLabels": {"team": "blue"}}]))
        role = await world.rules_become("mine", [rule(["configmaps"], ["list"])])
        assert raced and any(w.name == "mine" and w.outcome == "error:409" for w in world.ctl.writes)
        assert role["metadata"]["annotations"] == {"touched": "y"}  # the other writer's change is kept
        assert await world.quiet_writes() == 0


async def test_the_controller_is_a_builtin_started_by_the_controller_manager(tmp_path: Path) -> None:
    assert "clusterrole-aggregation" in BUILTIN_CONTROLLERS
    async with open_world(tmp_path, start=False) as world:
        manager = Manager(world.ctl, clock=world.clock, graceful_shutdown_timeout=0)
        added = add_builtin_controllers(manager, names=["clusterrole-aggregation"])
        assert added["clusterrole-aggregation"] is manager.controllers["clusterrole-aggregation"]
        assert "clusterrole-aggregation-synced" in manager.health.readyz
        task = asyncio.create_task(manager.run())
        try:
            to_view = (await world.role("system:aggregate-to-view"))["rules"]
            await world.rules_become("view", to_view)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
