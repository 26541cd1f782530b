"""The images a simulated node holds: what its kubelet reports in ``status.images``.

A kubelet lists the images its container runtime holds in ``node.status.images`` (``setNodeStatusImages``,
``pkg/kubelet/nodestatus/setters.go``, Kubernetes 1.32): each with its ``names`` and ``sizeBytes``,
largest first, at most ``nodeStatusMaxImages`` (50) of them. The scheduler's ImageLocality score reads
them (:mod:`._scheduler_images`).

:class:`NodeImages` plays that part for simulated nodes: once a container of a pod has been started on a
node (its status has a ``containerID``), the images of the pod's containers and init containers are on
that node for good (the simulated nodes never run short of disk, so image garbage collection never
runs). Simulated images are named as a Docker-style runtime (cri-dockerd) names them, after the pod's
own reference: ``nginx:1.27`` and ``nginx@sha256:<digest>`` (a reference without a tag gets
``:latest``; one by digest is listed as it is). A real containerd lists fully qualified names
(``docker.io/library/nginx:1.27``), which upstream's ImageLocality does not match against ``nginx:1.27``.
An image's size and digest follow from its name (:func:`simulated_image_size`, between 10 and 250 MiB),
so every node reports the same size for it. The list is written with a merge patch of
``nodes/status``, only when it changes, one write at a time per node; images the node already
reported (before a restart of the controller manager, say) are kept.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import NotFound
from kubeloop.client import Client
from kubeloop.controllers._scheduler_resources import NODES

__all__ = ["NODE_STATUS_MAX_IMAGES", "NodeImages", "image_entry", "simulated_image_size"]

NODE_STATUS_MAX_IMAGES = 50  # the kubelet's --node-status-max-images default
_MIB = 1024 * 1024


def _tagged(image: str) -> str:
    """The reference with its tag (``:latest`` when it has none), or as it is when it names a digest."""
    if "@" in image or image.rfind(":") > image.rfind("/"):
        return image
    return image + ":latest"


def simulated_image_size(image: str) -> int:
    """The size in bytes of a simulated image: 10-250 MiB, fixed by the image's reference."""
    digest = hashlib.sha256(_tagged(image).encode()).digest()
    return 10 * _MIB + int.from_bytes(digest[:4], "big") % (240 * _MIB)


def image_entry(image: str) -> dict[str, Any]:
    """The ``status.images`` entry for ``image``: its digest reference and tag reference, and its size."""
    tagged = _tagged(image)
    if "@" in tagged:
        names = [tagged]
    else:
        repository = tagged[:tagged.rfind(":")]
        names = [f"{repository}@sha256:{hashlib.sha256(tagged.encode()).hexdigest()}", tagged]
    return {"names": names, "sizeBytes": simulated_image_size(image)}


def _pod_images(pod: Mapping[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    return [str(c["image"]) for kind in ("initContainers", "containers") for c in spec.get(kind) or ()
            if isinstance(c, Mapping) and c.get("image")]


def _started(status: Mapping[str, Any]) -> bool:
    return any(isinstance(c, Mapping) and c.get("containerID")
               for kind in ("initContainerStatuses", "containerStatuses") for c in status.get(kind) or ())


def _reported(node: Mapping[str, Any]) -> Iterable[tuple[str, ...]]:
    for image in (node.get("status") or {}).get("images") or ():
        if isinstance(image, Mapping):
            yield tuple(str(name) for name in image.get("names") or ())


class NodeImages:
    """Per simulated node, the images its pods have pulled; writes ``status.images`` when they change."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._pulled: dict[str, set[str]] = {}  # node -> image references
        self._locks: dict[str, asyncio.Lock] = {}
        self._written: dict[str, list[dict[str, Any]]] = {}  # node -> the list last written

    def forget(self, node: str) -> None:
        self._pulled.pop(node, None)
        self._locks.pop(node, None)
        self._written.pop(node, None)

    async def pod_ran(self, node: Mapping[str, Any], pod: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        """Record the images of ``pod`` on ``node`` once ``status`` (just written) shows a container started."""
        images = _pod_images(pod)
        if not images or not _started(status):
            return
        name = str((node.get("metadata") or {}).get("name") or "")
        pulled = self._pulled.setdefault(name, set())
        reported = {names for names in _reported(node)}
        if all(tuple(image_entry(i)["names"]) in reported for i in images) and pulled.issuperset(images):
            return
        pulled.update(images)
        async with self._locks.setdefault(name, asyncio.Lock()):
            entries = {tuple(image_entry(i)["names"]): image_entry(i) for i in pulled}
            for image in (node.get("status") or {}).get("images") or ():
                if isinstance(image, Mapping):
                    entries.setdefault(tuple(str(n) for n in image.get("names") or ()), dict(image))
            ordered = sorted(entries.values(), key=lambda e: (-int(e.get("sizeBytes") or 0), e["names"]))
            wanted = ordered[:NODE_STATUS_MAX_IMAGES]
            if wanted in ((node.get("status") or {}).get("images"), self._written.get(name)):
                return
            try:
                await self.client.patch(NODES, name, {"status": {"images": wanted}}, subresource="status")
            except NotFound:
                self.forget(name)
                return
            self._written[name] = wanted
