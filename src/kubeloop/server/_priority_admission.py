"""The Priority admission plugin: a pod's priority comes from its PriorityClass; one global default class.

Upstream's ``plugin/pkg/admission/priority/admission.go`` (enabled by default in kube-apiserver, ordered
after NamespaceLifecycle and before DefaultTolerationSeconds), a plugin of both phases. Subresources
are never looked at.

- **Mutating, pods.** On CREATE the pod's class is resolved: ``spec.priorityClassName`` names it, or,
  without a name, the global default class (the one with ``globalDefault: true``, the lowest value if
  a race left several) is used and its name written into ``spec.priorityClassName``; with neither, the
  priority is 0 and the preemption policy ``PreemptLowerPriority``. ``spec.priority`` and
  ``spec.preemptionPolicy`` are then set from the class. A name no class has is 403 ``no PriorityClass
  with name X was found``; a pod that set ``spec.priority`` or ``spec.preemptionPolicy`` to anything
  else than what its class gives is 403 too, with upstream's messages. On UPDATE a body without
  ``spec.priority`` / ``spec.preemptionPolicy`` gets the stored pod's (so a PUT of the original manifest
  is not a change); pod update validation forbids changing them (and the class name).
- **Validating, PriorityClasses.** On CREATE and UPDATE of a class with ``globalDefault: true``, another
  class already marked default is 403 ``PriorityClass X is already marked as default. Only one default
  can exist``. That check, not validation, is what keeps one default; as upstream, two concurrent
  writes may both pass it, and pods then get the lowest-valued default.

The classes are read through :class:`PriorityClasses`: the store's PriorityClasses, kept current by a
store watch on their prefix that is polled (it never blocks, and is never behind the store's revision)
whenever the revision moved. Upstream reads an informer's cache, which lags; here a class written before
a pod's create started is always seen by it. A pod create costs a poll of an empty queue, not a read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, NamedTuple

import orjson

from kubeloop.api import Forbidden, ResourceInfo
from kubeloop.api._priority_class_validation import DEFAULT_PREEMPTION_POLICY
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin, Operation, ValidatingPlugin
from kubeloop.server._prefix_changes import PrefixChanges
from kubeloop.store import Store, StoreEvent

__all__ = ["Priority", "PriorityClasses"]

GROUP = "scheduling.k8s.io"
PREFIX = f"/registry/{GROUP}/priorityclasses/"
# pkg/apis/scheduling DefaultPriorityWhenNoDefaultClassExists.
DEFAULT_PRIORITY = 0


class PriorityClass(NamedTuple):
    name: str
    value: int
    global_default: bool
    preemption_policy: str | None


def _class_of(name: str, value: bytes) -> PriorityClass:
    obj = orjson.loads(value)
    number = obj.get("value")
    policy = obj.get("preemptionPolicy")
    return PriorityClass(name, number if isinstance(number, int) else 0, obj.get("globalDefault") is True,
                         policy if isinstance(policy, str) else None)


class PriorityClasses:
    """The store's PriorityClasses by name, current at every :meth:`current` (see the module contract)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._changes = PrefixChanges(store, PREFIX)
        self._by_name: dict[str, PriorityClass] = {}
        self._default: PriorityClass | None = None
        self._loading: asyncio.Lock | None = None

    def current(self) -> dict[str, PriorityClass] | None:
        """The classes now, or ``None`` when they must be read first (:meth:`load`)."""
        events = self._changes.poll()
        if events is None:  # never read, or fell more than the watch buffer behind: read them all again
            return None
        for event in events:
            self._apply(event)
        return self._by_name

    def default(self) -> PriorityClass | None:
        """The global default of the classes :meth:`current` last returned: the lowest-valued class
        marked ``globalDefault`` (ties by name), or ``None``."""
        return self._default

    async def load(self) -> dict[str, PriorityClass]:
        """Read every class (once, however many callers wait) and follow their changes from then on."""
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            classes = self.current()
            if classes is not None:
                return classes
            # Watch first, then read: a change committed in between is in both and applied twice, in
            # order, ending where the store is.
            self._changes.start()
            listed = await self._store.range(PREFIX)
            self._by_name = {kv.key[len(PREFIX):]: _class_of(kv.key[len(PREFIX):], kv.value) for kv in listed.items}
            self._default = self._find_default()
            classes = self.current()
            assert classes is not None
            return classes

    def _apply(self, event: StoreEvent) -> None:
        name = event.kv.key[len(PREFIX):]
        if event.type == "DELETE":
            self._by_name.pop(name, None)
        else:
            self._by_name[name] = _class_of(name, event.kv.value)
        self._default = self._find_default()

    def _find_default(self) -> PriorityClass | None:
        found: PriorityClass | None = None
        for name in sorted(self._by_name):
            candidate = self._by_name[name]
            if candidate.global_default and (found is None or candidate.value < found.value):
                found = candidate
        return found


def _forbidden(attributes: AdmissionAttributes, obj: dict[str, Any], message: str) -> Forbidden:
    """admission.NewForbidden: the name is the request's, else the object's name or generateName (a create
    before name generation), else ``Unknown``."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    name = attributes.name or str(meta.get("name") or meta.get("generateName") or "Unknown")
    resource = attributes.resource
    details: dict[str, Any] = {"name": name, "kind": resource.plural}
    if resource.group:
        details["group"] = resource.group
    return Forbidden(f'{resource.group_resource} "{name}" is forbidden: {message}', details=details)


def _is_pods(resource: ResourceInfo) -> bool:
    return resource.group == "" and resource.plural == "pods"


def _is_priority_classes(resource: ResourceInfo) -> bool:
    return resource.group == GROUP and resource.plural == "priorityclasses"


class Priority(MutatingPlugin, ValidatingPlugin):
    """Resolves pods' priority from their PriorityClass; keeps one global default class."""

    def __init__(self, store: Store) -> None:
        self.classes = PriorityClasses(store)

    def handles(self, operation: Operation, resource: ResourceInfo) -> bool:
        return operation in ("CREATE", "UPDATE") and (_is_pods(resource) or _is_priority_classes(resource))

    # -- pods ------------------------------------------------------------------------------------------
    def mutate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        if attributes.subresource or obj is None or not _is_pods(attributes.resource):
            return None
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return None
        if attributes.operation == "UPDATE":
            old_spec = old.get("spec") if old is not None else None
            if isinstance(old_spec, dict):
                for field in ("priority", "preemptionPolicy"):
                    if spec.get(field) is None and old_spec.get(field) is not None:
                        spec[field] = old_spec[field]
            return None
        if attributes.operation != "CREATE":
            return None
        classes = self.classes.current()
        if classes is None:
            return self._load_and_admit_pod(attributes, obj, spec)
        self._admit_pod(attributes, obj, spec, classes)
        return None

    async def _load_and_admit_pod(self, attributes: AdmissionAttributes, obj: dict[str, Any],
                                  spec: dict[str, Any]) -> None:
        self._admit_pod(attributes, obj, spec, await self.classes.load())

    def _admit_pod(self, attributes: AdmissionAttributes, obj: dict[str, Any], spec: dict[str, Any],
                   classes: dict[str, PriorityClass]) -> None:
        name = spec.get("priorityClassName")
        policy: str | None
        if not name:
            default = self.classes.default()
            if default is None:
                spec.pop("priorityClassName", None)  # "" is the Go zero value: omitted, as upstream writes it
                priority, policy = DEFAULT_PRIORITY, DEFAULT_PREEMPTION_POLICY
            else:
                spec["priorityClassName"] = default.name
                priority, policy = default.value, default.preemption_policy
        else:
            found = classes.get(name) if isinstance(name, str) else None
            if found is None:
                raise _forbidden(attributes, obj, f"no PriorityClass with name {name} was found")
            priority, policy = found.value, found.preemption_policy
        given = spec.get("priority")
        if given is not None and given != priority:
            raise _forbidden(attributes, obj, f"the integer value of priority ({given}) must not be provided in pod "
                                              f"spec; priority admission controller computed {priority} from the "
                                              "given PriorityClass name")
        spec["priority"] = priority
        if policy is not None:
            given_policy = spec.get("preemptionPolicy")
            if given_policy is not None and given_policy != policy:
                raise _forbidden(attributes, obj, f"the string value of PreemptionPolicy ({given_policy}) must not be "
                                                  f"provided in pod spec; priority admission controller computed "
                                                  f"{policy} from the given PriorityClass name")
            spec["preemptionPolicy"] = policy

    # -- priority classes ------------------------------------------------------------------------------
    def validate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        if (attributes.subresource or obj is None or not _is_priority_classes(attributes.resource)
                or obj.get("globalDefault") is not True):
            return None
        if self.classes.current() is None:
            return self._load_and_validate_class(attributes, obj)
        self._validate_class(attributes, obj)
        return None

    async def _load_and_validate_class(self, attributes: AdmissionAttributes, obj: dict[str, Any]) -> None:
        await self.classes.load()
        self._validate_class(attributes, obj)

    def _validate_class(self, attributes: AdmissionAttributes, obj: dict[str, Any]) -> None:
        default = self.classes.default()
        if default is None:
            return
        if attributes.operation == "CREATE" or default.name != attributes.name:
            raise _forbidden(attributes, obj,
                             f"PriorityClass {default.name} is already marked as default. Only one default can exist")
