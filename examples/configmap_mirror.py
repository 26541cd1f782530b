"""configmap_mirror: keep a Secret beside every ConfigMap labelled ``kubeloop.dev/mirror=true``.

A complete controller written on ``kubeloop.runtime`` the way a user would write one. For each
labelled ConfigMap it keeps a Secret of the same name and namespace, **owned** by the ConfigMap
(``controller: true``), whose ``data`` is the ConfigMap's ``data`` and ``binaryData``, base64-encoded.

What the runtime gives it for free, and where each defensive pattern sits:

* level-based reconcile of a ``Request`` (namespace/name), reading the ConfigMap and the Secret
  from the shared informers' caches (as controller-runtime's cache-backed client does): never the
  event that woke it;
* ``create_or_update``: creates the Secret, updates it with the ``resourceVersion`` it read (409 when
  that was stale, retried by the queue with backoff), and **writes nothing** when nothing changed;
* ``set_controller_reference``: the Secret is garbage-collected with its ConfigMap, and a Secret
  that another controller owns is never adopted (a terminal error, not an endless retry);
* ``owns(SECRETS)``: someone editing or deleting the Secret wakes the owner's reconcile, which puts
  it back;
* removing the label deletes the Secret this controller made (precondition on its uid);
* leader election, health probes and metrics come from the ``Manager``.

Run it against any cluster (``kubeloop up`` or a real one)::

    python examples/configmap_mirror.py --kubeconfig .kubeloop/kubeconfig
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from kubeloop.api import KindRegistry, NotFound, ResourceInfo, is_being_deleted
from kubeloop.client import Client
from kubeloop.runtime import (
    AlreadyOwnedError,
    Builder,
    Cache,
    Controller,
    Event,
    LeaderElectionOptions,
    Manager,
    PermanentError,
    Request,
    create_or_update,
    set_controller_reference,
)

MIRROR_LABEL = "kubeloop.dev/mirror"
FIELD_MANAGER = "configmap-mirror"
_KINDS = KindRegistry()
CONFIGMAPS: ResourceInfo = _KINDS.by_kind("", "ConfigMap")  # type: ignore[assignment]
SECRETS: ResourceInfo = _KINDS.by_kind("", "Secret")  # type: ignore[assignment]

log = logging.getLogger("configmap-mirror")


def wants_mirror(obj: Mapping[str, Any] | None) -> bool:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(MIRROR_LABEL) == "true"


def mirrored_data(configmap: Mapping[str, Any]) -> dict[str, str]:
    """The Secret's ``data``: text values encoded, binary values (already base64) as they are."""
    data = {k: base64.b64encode(v.encode()).decode() for k, v in (configmap.get("data") or {}).items()}
    data.update(configmap.get("binaryData") or {})
    return data


def labelled_now_or_before(event: Event) -> bool:
    """Only labelled ConfigMaps matter, plus the update that removes the label (to clean up)."""
    return wants_mirror(event.object) or wants_mirror(event.old_object)


class ConfigMapMirror:
    """The reconciler: one async method, safe to run any number of times."""

    def __init__(self, client: Client, configmaps: Cache, secrets: Cache) -> None:
        self.client = client
        self.configmaps = configmaps
        self.secrets = secrets

    async def reconcile(self, request: Request) -> None:
        configmap = self.configmaps.get(f"{request.namespace}/{request.name}")
        if configmap is None or is_being_deleted(configmap):
            return  # gone or going: the garbage collector removes the Secret it owned
        if not wants_mirror(configmap):
            await self._remove_mirror(configmap)
            return

        def mutate(secret: dict[str, Any]) -> None:
            set_controller_reference(configmap, secret)
            secret["type"] = "Opaque"
            secret["data"] = mirrored_data(configmap)

        wanted = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": request.name, "namespace": request.namespace}}
        try:
            _, result = await create_or_update(
                self.client, SECRETS, wanted, mutate, field_manager=FIELD_MANAGER, cache=self.secrets
            )
        except AlreadyOwnedError as err:
            raise PermanentError(f"secret {request} belongs to someone else: {err}") from None
        if result != "unchanged":
            log.info("secret %s %s", request, result)

    async def _remove_mirror(self, configmap: Mapping[str, Any]) -> None:
        meta = configmap["metadata"]
        secret = self.secrets.get_by_name(meta["name"], meta["namespace"])
        if secret is None:
            return
        owners = secret["metadata"].get("ownerReferences") or []
        if any(o.get("controller") and o.get("uid") == meta["uid"] for o in owners):
            uid = secret["metadata"]["uid"]
            with contextlib.suppress(NotFound):
                await self.client.delete(
                    SECRETS, meta["name"], namespace=meta["namespace"], preconditions={"uid": uid}
                )
            log.info("secret %s/%s deleted: the label was removed", meta["namespace"], meta["name"])


def setup(manager: Manager, *, max_concurrent_reconciles: int = 4) -> Controller:
    """Register the controller with a manager; the manager shares informers, clock and metrics."""
    mirror = ConfigMapMirror(
        manager.client, manager.informer(CONFIGMAPS).cache, manager.informer(SECRETS).cache
    )
    return (
        Builder(manager)
        .named("configmap-mirror")
        .for_(CONFIGMAPS, labelled_now_or_before)
        .owns(SECRETS)
        .with_options(max_concurrent_reconciles=max_concurrent_reconciles)
        .build(mirror)
    )


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG, in-cluster, ~/.kube/config")
    parser.add_argument("--no-leader-election", action="store_true")
    parser.add_argument("--namespace", default="", help="watch only this namespace (default: all)")
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    async with Client.from_kubeconfig(args.kubeconfig) as client:
        election = None if args.no_leader_election else LeaderElectionOptions("configmap-mirror")
        manager = Manager(client, namespace=args.namespace, leader_election=election)
        setup(manager, max_concurrent_reconciles=args.workers)
        await manager.run_until_signalled()


def run() -> None:
    """Run :func:`main` on uvloop when it is installed (kopf's command line does the same), else asyncio."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())


if __name__ == "__main__":
    run()
