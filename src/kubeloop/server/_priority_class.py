"""Registry rules of PriorityClass (``scheduling.k8s.io/v1``), and the system classes every cluster has.

As upstream (k/k ``pkg/registry/scheduling/priorityclass/strategy.go`` and ``storage/storage.go``,
``pkg/registry/scheduling/rest/storage_scheduling.go``):

- a field of the wrong JSON type, or a value that is not an int32, is 400 as the typed decode answers it
  (:func:`check_types`);
- cluster-scoped, DNS-subdomain names; ``metadata.generation`` is 1 on create and never moves
  (``PrepareForCreate`` sets it, ``PrepareForUpdate`` does nothing and ``rest.BeforeUpdate`` keeps the
  stored one); validation is :mod:`kubeloop.api._priority_class_validation`;
- a DELETE of ``system-node-critical`` or ``system-cluster-critical`` is 403 (``REST.Delete``); a
  deletecollection is not refused, since upstream's ``Store.DeleteCollection`` calls the generic
  ``Store.Delete``, not that override (its e2e tests avoid deletecollection for that reason);
- :func:`ensure_system_priority_classes` is the ``scheduling/bootstrap-system-priority-classes``
  post-start hook: at start, each system class that cannot be read is created (through the write path,
  so defaulting and validation apply), so a deleted one comes back on the next start.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kubeloop.api import AlreadyExists, BadRequest, FieldError, Forbidden, ResourceInfo
from kubeloop.api._go_json import go_json_kind
from kubeloop.api._priority_class_validation import (
    SYSTEM_PRIORITY_CLASSES,
    validate_priority_class,
    validate_priority_class_update,
)
from kubeloop.server._rest import WriteRequest, create_object
from kubeloop.server._state import ServerState, object_key
from kubeloop.server._strategy import GenericStrategy

__all__ = ["PriorityClassStrategy", "ensure_system_priority_classes", "system_priority_class"]

GROUP = "scheduling.k8s.io"


# field -> (Go type in the message, the JSON type it takes); null leaves a field at its zero value.
_GO_TYPES: dict[str, tuple[str, type]] = {
    "value": ("int32", int),
    "globalDefault": ("bool", bool),
    "description": ("string", str),
    "preemptionPolicy": ("v1.PreemptionPolicy", str),
}


def _fits(value: Any, wanted: type) -> bool:
    if wanted is int:
        return type(value) is int and -(2**31) <= value < 2**31
    return isinstance(value, wanted)


def check_types(obj: dict[str, Any]) -> None:
    """What decoding the body into the Go type refuses (400), for the class's own fields: a wrong JSON type,
    or a number that is not an int32. Upstream refuses it before anything else; here it is checked when
    the strategy prepares the object (after the resourceVersion check of an update). A patch that makes
    such a field is this 400 too, where upstream's patch handler answers 422 on field ``patch``."""
    for field, (go_type, wanted) in _GO_TYPES.items():
        value = obj.get(field)
        if value is None or _fits(value, wanted):
            continue
        # only a number aimed at an integer field is named with its text
        kind = go_json_kind(value, with_number=wanted is int)
        raise BadRequest(f'PriorityClass in version "v1" cannot be handled as a PriorityClass: json: cannot unmarshal '
                         f"{kind} into Go struct field PriorityClass.{field} of type {go_type}")


class PriorityClassStrategy(GenericStrategy):
    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        check_types(obj)
        super().prepare_for_create(obj)
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        check_types(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_priority_class(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return [*validate_priority_class(new), *validate_priority_class_update(new, old)]

    def before_delete(self, name: str) -> None:
        if name in SYSTEM_PRIORITY_CLASSES:
            raise Forbidden(
                f'priorityclasses.{GROUP} "{name}" is forbidden: this is a system priority class and cannot be deleted',
                details={"name": name, "group": GROUP, "kind": "priorityclasses"})


def system_priority_class(name: str) -> dict[str, Any]:
    """The system class ``name`` as the post-start hook creates it."""
    value, description = SYSTEM_PRIORITY_CLASSES[name]
    return {"apiVersion": f"{GROUP}/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": description}


async def ensure_system_priority_classes(state: ServerState, info: ResourceInfo) -> None:
    """Create each system class that does not exist (AlreadyExists from a concurrent start is fine)."""
    for name in SYSTEM_PRIORITY_CLASSES:
        if await state.store.get(object_key(info, "", name)) is not None:
            continue
        with contextlib.suppress(AlreadyExists):
            await create_object(state, WriteRequest(info, "", user_agent="kube-apiserver/v1.32.0"),
                                system_priority_class(name))
