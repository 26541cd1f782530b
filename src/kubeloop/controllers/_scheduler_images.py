"""The ImageLocality score: nodes that already hold a pod's images score higher, by image size and spread.

Upstream: ``pkg/scheduler/framework/plugins/imagelocality/image_locality.go`` and the scheduler cache's
image states (``pkg/scheduler/internal/cache/cache.go`` ``addNodeImageStates``, ``snapshot.go``) as of
Kubernetes 1.32.

:class:`ImageStates` reads ``status.images`` of every node: each name of each image is an entry with the
image's size (that of the first node seen to list it, as the cache keeps it) and the set of nodes that
list it. :func:`image_locality_scores` scores a node, for the pod's init containers and containers
whose image (``normalizedImageName``: ``:latest`` added when the name has no tag) the node lists, the
sum of ``int(size * nodes listing it / all nodes)`` (``scaledImageScore``: an image on every node counts
in full, one on a single node of ten a tenth, against the "node heating" of piling pods on one node);
the sum is clamped to ``[23 MiB, 1000 MiB * containers]`` and scaled to 0-100 (``calculatePriority``).
Names are compared as written: a pod asking for ``nginx:1.27`` does not match a node listing only
``docker.io/library/nginx:1.27`` (upstream leaves that mismatch alone too). The plugin has no
NormalizeScore.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeloop.controllers._scheduler_cache import meta_of

__all__ = ["ImageStates", "image_locality_scores", "normalized_image_name"]

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
MAX_NODE_SCORE = 100


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: add the default tag when the name has none."""
    return name if name.rfind(":") > name.rfind("/") else name + ":latest"


@dataclass(slots=True)
class _ImageState:
    size: int
    nodes: set[str] = field(default_factory=set)


class ImageStates:
    """Per image name, its size and the nodes whose ``status.images`` list it."""

    def __init__(self, nodes: Sequence[Mapping[str, Any]]) -> None:
        self.total_nodes = len(nodes)
        self._states: dict[str, _ImageState] = {}
        self._on_node: dict[str, set[str]] = {}
        for node in nodes:
            name = str(meta_of(node).get("name") or "")
            names = self._on_node.setdefault(name, set())
            for image in (node.get("status") or {}).get("images") or ():
                if not isinstance(image, Mapping):
                    continue
                size = image.get("sizeBytes")
                size = size if isinstance(size, int) and not isinstance(size, bool) else 0
                for image_name in image.get("names") or ():
                    state = self._states.setdefault(str(image_name), _ImageState(size))
                    state.nodes.add(name)
                    names.add(str(image_name))

    def scaled_score(self, node: str, image: str) -> int:
        """``scaledImageScore`` of ``image`` on ``node``: 0 when the node does not list it."""
        if image not in self._on_node.get(node, ()):
            return 0
        state = self._states[image]
        return int(state.size * (len(state.nodes) / self.total_nodes))


def _images(pod: Mapping[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    return [normalized_image_name(str(c.get("image") or ""))
            for kind in ("initContainers", "containers") for c in spec.get(kind) or () if isinstance(c, Mapping)]


def image_locality_scores(pod: Mapping[str, Any], feasible: Sequence[Mapping[str, Any]], states: ImageStates) -> list[int]:
    """Score (``calculatePriority`` of ``sumImageScores``) for each of the ``feasible`` nodes."""
    images = _images(pod)
    if not images:
        return [0] * len(feasible)
    high = MAX_CONTAINER_THRESHOLD * len(images)
    scores = []
    for node in feasible:
        name = str(meta_of(node).get("name") or "")
        total = sum(states.scaled_score(name, image) for image in images)
        total = min(max(total, MIN_THRESHOLD), high)
        scores.append(MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (high - MIN_THRESHOLD))
    return scores
