"""The admission seam: small async plugins, one signature, run in order before anything is persisted.

An :class:`Admission` plugin is called with the request's :class:`AdmissionAttributes`, the new
object (``None`` for DELETE) and the old one (``None`` for CREATE), after the kind's defaulting and
validation and before the store write, on every attempt of an optimistic-concurrency retry. It may
mutate the new object in place, or reject the request by raising an
:class:`~kubeloop.api.ApiError` (upstream's validating admission answers 403 Forbidden, for
example). ``dryRun`` requests run admission too; plugins with side effects must look at
``attributes.dry_run``.

Built in: :class:`NamespaceLifecycle` (apiserver ``pkg/admission/plugin/namespace/lifecycle``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, Protocol

import orjson

from kubeloop.api import Forbidden, ResourceInfo, not_found
from kubeloop.store import Store

__all__ = ["Admission", "AdmissionAttributes", "NamespaceLifecycle", "run_admission"]

Operation = Literal["CREATE", "UPDATE", "DELETE"]


class AdmissionAttributes(NamedTuple):
    """What is being admitted. Immutable; a named tuple rather than a frozen dataclass because one is
    built per write and a frozen dataclass's construction (one ``object.__setattr__`` per field)
    cost about 2% of a create."""

    operation: Operation
    resource: ResourceInfo
    namespace: str
    name: str
    subresource: str = ""
    user: Any = None
    dry_run: bool = False


class Admission(Protocol):
    async def __call__(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None: ...


async def run_admission(
    plugins: Sequence[Admission],
    attributes: AdmissionAttributes,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
) -> None:
    for plugin in plugins:
        await plugin(attributes, obj, old)


IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


def _forbidden(attrs: AdmissionAttributes, message: str, causes: list[dict[str, str]] | None = None) -> Forbidden:
    resource = attrs.resource.group_resource
    subject = f'{resource} "{attrs.name}"' if attrs.name else resource
    details: dict[str, Any] = {"kind": attrs.resource.plural}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.resource.group:
        details["group"] = attrs.resource.group
    if causes:
        details["causes"] = causes
    return Forbidden(f"{subject} is forbidden: {message}", details=details)


class NamespaceLifecycle:
    """No new content in a missing (404) or Terminating (403) namespace; three namespaces are immortal."""

    def __init__(self, store: Store) -> None:
        self._store = store
        # Namespace name -> (mod_revision, terminating) of the version last read: one version of a
        # key never changes, so a namespace is decoded once per write to it, not once per create in it.
        self._terminating: dict[str, tuple[int, bool]] = {}

    async def __call__(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        info = attributes.resource
        if info.group == "" and info.plural == "namespaces":
            if attributes.operation == "DELETE" and attributes.name in IMMORTAL_NAMESPACES:
                raise _forbidden(attributes, "this namespace may not be deleted")
            return
        if attributes.operation != "CREATE" or not info.namespaced or not attributes.namespace:
            return
        kv = await self._store.get(f"/registry/core/namespaces/{attributes.namespace}")
        if kv is None:
            raise not_found("namespaces", attributes.namespace)
        seen = self._terminating.get(attributes.namespace)
        if seen is not None and seen[0] == kv.mod_revision:
            terminating = seen[1]
        else:
            terminating = self._is_terminating(attributes.namespace, kv.mod_revision, kv.value)
        if terminating:
            raise _forbidden(
                attributes,
                f"unable to create new content in namespace {attributes.namespace} because it is being terminated",
                [{"reason": "NamespaceTerminating",
                  "message": f"namespace {attributes.namespace} is being terminated",
                  "field": "metadata.namespace"}],
            )

    def _is_terminating(self, name: str, revision: int, value: bytes) -> bool:
        """Decode the namespace's version ``revision`` and remember whether it is terminating."""
        namespace = orjson.loads(value)
        phase = (namespace.get("status") or {}).get("phase")
        terminating = bool(phase == "Terminating" or (namespace.get("metadata") or {}).get("deletionTimestamp"))
        if len(self._terminating) >= 4096:  # bounded: namespaces come and go
            self._terminating.clear()
        self._terminating[name] = (revision, terminating)
        return terminating
