"""Names every part that deletes must agree on: the server's admission, the garbage collector, the guard.

* :data:`GC_IGNORED_RESOURCES`: (group, resource) pairs the garbage collector never collects (k/k
  ``garbagecollector.go`` ``DefaultIgnoredResources``: Events); the guard's preview skips them too.
* :data:`PROTECT_ANNOTATION` / :data:`APPROVED_ANNOTATION`: kubeloop's deletion protection. An object
  annotated ``kubeloop.dev/protect: "true"`` is deleted only when ``kubeloop.dev/delete-approved`` holds
  ``PLAN/UID`` for it (written by ``kubeloop delete --confirm PLAN``).
"""

from __future__ import annotations

__all__ = ["APPROVED_ANNOTATION", "GC_IGNORED_RESOURCES", "PROTECT_ANNOTATION"]

GC_IGNORED_RESOURCES: frozenset[tuple[str, str]] = frozenset({("", "events"), ("events.k8s.io", "events")})
PROTECT_ANNOTATION = "kubeloop.dev/protect"
APPROVED_ANNOTATION = "kubeloop.dev/delete-approved"
