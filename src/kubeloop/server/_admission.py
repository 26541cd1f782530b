"""The admission seam: small async plugins in two phases, mutating then validating, before anything is persisted.

Upstream (apiserver ``pkg/admission/interfaces.go``) splits admission in two: a ``MutationInterface``
plugin's ``Admit`` runs in the handler, after the body is decoded and defaulted and its managedFields
recorded (what a plugin adds is no manager's: :mod:`kubeloop.server._managed`), and before the
registry strategy (``PrepareForCreate``/``PrepareForUpdate``, metadata fill, ``generateName``,
``Validate``: ``rest.BeforeCreate``/``BeforeUpdate``); a ``ValidationInterface`` plugin's ``Validate``
runs after all of that (``createValidation``/``updateValidation`` in ``registry/store.go``), just
before the store write. So a mutating plugin may fix what validation would refuse, its change is
validated, and a validating plugin sees the object as it will be stored. On DELETE both phases run
at one place, mutating first, against the stored object (``rest.AdmissionToValidateObjectDeleteFunc``).

An :class:`Admission` plugin is called with the request's :class:`AdmissionAttributes`, the new
object (``None`` for DELETE) and the old one (``None`` for CREATE), on every attempt of an
optimistic-concurrency retry. It declares its phases by the methods it has:

- ``mutate(attributes, obj, old)``: the mutating phase (upstream ``Admit``). It may change the new
  object in place (any part of it, ``metadata`` included, which stays an object), or refuse by
  raising an :class:`~kubeloop.api.ApiError`.
- ``validate(attributes, obj, old)``: the validating phase (upstream ``Validate``). It refuses by
  raising (upstream's validating admission answers 403 Forbidden, for example) and changes nothing.
- Neither: the plugin runs in the **validating** phase, as its ``admit`` (below) or as itself. This
  keeps every plugin written before the split where it ran, after defaulting and validation, seeing
  the prepared object; a plugin that changes the object must declare ``mutate`` for its change to be
  validated.

Each method returns ``None`` when it finished without waiting, or an awaitable to await when it must.
:class:`MutatingPlugin` and :class:`ValidatingPlugin` are bases for such plugins (a plugin of both
phases subclasses both); calling one runs its phases in order. ``dryRun`` requests run admission
too; plugins with side effects must look at ``attributes.dry_run``.

Two optional members make a plugin cheap on the hot path, without changing what it decides:

- ``handles(operation, resource) -> bool``: whether the plugin can act on that operation of that
  resource at all. It is asked once per (operation, resource) for a given chain, and a plugin that
  answers ``False`` is not called for it, in either phase. A plugin without ``handles`` is called
  for everything.
- ``admit(attributes, obj, old) -> Awaitable[None] | None``: for a plugin without ``mutate`` or
  ``validate``, the same check as ``__call__``, called as a plain function (``__call__`` is then
  not used).

A chain is an :class:`AdmissionChain` (a list; any change to it drops the cached plans). For a
namespaced CREATE, the server reads the namespace once (the version its guarded create commits
against) and passes that read in ``attributes.namespace_state``; :class:`NamespaceLifecycle` judges
that same version instead of reading the store again. In the mutating phase of a CREATE,
``attributes.name`` is the name in the body (empty for a ``generateName`` create); in the validating
phase it is the name the object is created with.

Built in: :class:`NamespaceLifecycle` (apiserver ``pkg/admission/plugin/namespace/lifecycle``: it
implements ``Admit`` only, so it is a mutating plugin and refuses before validation).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal, NamedTuple, Protocol, SupportsIndex

import orjson

from kubeloop.api import Forbidden, ResourceInfo, not_found
from kubeloop.server._prefix_changes import PrefixChanges
from kubeloop.store import KeyValue, Store

__all__ = [
    "Admission",
    "AdmissionAttributes",
    "AdmissionChain",
    "AdmitPlugin",
    "MutatingPlugin",
    "NamespaceLifecycle",
    "Plan",
    "Plans",
    "ValidatingPlugin",
    "admit",
    "forget_plans",
    "plans_for",
    "run_admission",
    "run_plan",
]

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


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
    # For a namespaced CREATE: the namespace as the server read it for this attempt, as a 1-tuple
    # (``(None,)`` when it does not exist); ``None`` when the caller did not read it.
    namespace_state: tuple[KeyValue | None] | None = None
    # The request's ``Warning`` texts, for a plugin to add to (admission webhooks' warnings); ``None``
    # when the caller keeps none.
    warnings: list[str] | None = None
    # The request's options (``WriteOptions`` or ``DeleteOptions``), for plugins that report them
    # (an AdmissionReview's ``options``); ``None`` when the caller has none.
    options: Any = None


class Admission(Protocol):
    async def __call__(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None: ...


class AdmitPlugin(ABC):
    """A plugin written as its ``admit``: calling it runs ``admit`` and awaits what that returns. It
    declares no phase, so it runs in the validating phase."""

    __slots__ = ()

    @abstractmethod
    def admit(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        """Admit or refuse (raising an ``ApiError``); an awaitable when the decision needs to wait."""

    async def __call__(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        pending = self.admit(attributes, obj, old)
        if pending is not None:
            await pending


class _PhasedPlugin:
    """Calling a plugin that declares its phases runs them in order: ``mutate``, then ``validate``."""

    __slots__ = ()

    async def __call__(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        for phase in _PHASES:
            step = getattr(self, phase, None)
            if step is not None:
                pending = step(attributes, obj, old)
                if pending is not None:
                    await pending


class MutatingPlugin(_PhasedPlugin, ABC):
    """A plugin of the mutating phase (upstream ``admission.MutationInterface``)."""

    __slots__ = ()

    @abstractmethod
    def mutate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        """Change ``obj`` in place or refuse (raising an ``ApiError``); an awaitable when it must wait."""


class ValidatingPlugin(_PhasedPlugin, ABC):
    """A plugin of the validating phase (upstream ``admission.ValidationInterface``)."""

    __slots__ = ()

    @abstractmethod
    def validate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        """Refuse (raising an ``ApiError``) or let the write through; an awaitable when it must wait."""


_PHASES = ("mutate", "validate")
_Step = Callable[[AdmissionAttributes, "dict[str, Any] | None", "dict[str, Any] | None"], "Awaitable[None] | None"]
# The plugins that run in one phase, each as the runner calls it.
Plan = tuple[_Step, ...]


class Plans(NamedTuple):
    """The steps of each phase for one (operation, resource), in chain order."""

    mutating: Plan
    validating: Plan


def _plans(plugins: Iterable[Admission], operation: Operation, resource: ResourceInfo) -> Plans:
    """The plugins that handle ``operation`` on ``resource``, in chain order, each in its phases."""
    mutating: list[_Step] = []
    validating: list[_Step] = []
    for plugin in plugins:
        handles = getattr(plugin, "handles", None)
        if handles is not None and not handles(operation, resource):
            continue
        mutate = getattr(plugin, "mutate", None)
        validate = getattr(plugin, "validate", None)
        if mutate is None and validate is None:
            admit = getattr(plugin, "admit", None)
            validating.append(admit if admit is not None else plugin)
            continue
        if mutate is not None:
            mutating.append(mutate)
        if validate is not None:
            validating.append(validate)
    return Plans(tuple(mutating), tuple(validating))


class AdmissionChain(list[Admission]):
    """The server's admission plugins, in order; caches which of them run per (operation, resource).

    A plain list otherwise: every mutating method drops the cache, so a plugin appended at any time
    is seen by the next request."""

    def __init__(self, plugins: Iterable[Admission] = ()) -> None:
        super().__init__(plugins)
        # operation -> id(resource) -> (resource, plans); the resource is kept so its id stays unique.
        self._plans: dict[str, dict[int, tuple[ResourceInfo, Plans]]] = {}
        self._configurations: PrefixChanges | None = None

    def follow_configurations(self, changes: PrefixChanges) -> None:
        """Plan again whenever a change under ``changes``' prefix commits: the stored configurations of
        the dynamic plugins (admission webhooks, admission policies), whose ``handles`` answers ``False``
        while none of theirs is stored. One poll per request decides, before the plan is read."""
        self._configurations = changes  # started at the first plan (the store may not be open yet)
        self._plans.clear()

    def forget_plans(self) -> None:
        """Work every plan out again at its next use (a dynamic plugin learned what it holds)."""
        self._plans.clear()

    def plan(self, operation: Operation, resource: ResourceInfo) -> Plans:
        configurations = self._configurations
        if configurations is not None:
            events = configurations.poll()
            if events is None:  # not followed yet, or fell past the watch's buffer: follow from now
                configurations.start()
                self._plans.clear()
            elif events:
                self._plans.clear()
        plans = self._plans.get(operation)
        if plans is None:
            plans = self._plans[operation] = {}
        entry = plans.get(id(resource))
        if entry is None or entry[0] is not resource:
            if len(plans) >= 4096:  # bounded: a CRD's update makes a new ResourceInfo
                plans.clear()
            entry = plans[id(resource)] = (resource, _plans(self, operation, resource))
        return entry[1]

    def _changed(self) -> None:
        self._plans.clear()

    def append(self, plugin: Admission) -> None:
        super().append(plugin)
        self._changed()

    def extend(self, plugins: Iterable[Admission]) -> None:
        super().extend(plugins)
        self._changed()

    def insert(self, index: SupportsIndex, plugin: Admission) -> None:
        super().insert(index, plugin)
        self._changed()

    def remove(self, plugin: Admission) -> None:
        super().remove(plugin)
        self._changed()

    def pop(self, index: SupportsIndex = -1) -> Admission:
        plugin = super().pop(index)
        self._changed()
        return plugin

    def clear(self) -> None:
        super().clear()
        self._changed()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        super().sort(*args, **kwargs)
        self._changed()

    def reverse(self) -> None:
        super().reverse()
        self._changed()

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        self._changed()

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        self._changed()

    def __iadd__(self, plugins: Iterable[Admission]) -> AdmissionChain:  # type: ignore[override,misc]
        super().__iadd__(plugins)
        self._changed()
        return self

    def __imul__(self, count: SupportsIndex) -> AdmissionChain:
        super().__imul__(count)
        self._changed()
        return self


def forget_plans(plugins: Sequence[Admission]) -> None:
    """:meth:`AdmissionChain.forget_plans` when ``plugins`` is a chain (nothing is cached otherwise)."""
    if isinstance(plugins, AdmissionChain):
        plugins.forget_plans()


def plans_for(plugins: Sequence[Admission], operation: Operation, resource: ResourceInfo) -> Plans:
    """The steps of each phase for ``operation`` on ``resource`` (cached when ``plugins`` is a chain)."""
    if isinstance(plugins, AdmissionChain):
        return plugins.plan(operation, resource)
    return _plans(plugins, operation, resource)


async def run_admission(
    plugins: Sequence[Admission],
    attributes: AdmissionAttributes,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
) -> None:
    """Run both phases of the plugins that handle this operation and resource: every mutating step,
    then every validating one (what a DELETE does)."""
    pending = admit(plugins, attributes, obj, old)
    if pending is not None:
        await pending


def admit(
    plugins: Sequence[Admission],
    attributes: AdmissionAttributes,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
) -> Awaitable[None] | None:
    """:func:`run_admission` as a plain call: ``None`` when every plugin finished without waiting,
    else an awaitable that finishes the first plugin that must wait and runs the rest after it."""
    plans = plans_for(plugins, attributes.operation, attributes.resource)
    return run_plan(plans.mutating + plans.validating if plans.mutating else plans.validating, attributes, obj, old)


def run_plan(
    plan: Plan, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
) -> Awaitable[None] | None:
    """Run one phase's steps in order: ``None`` when each finished without waiting, else an awaitable
    that finishes the first that must wait and runs the rest after it."""
    for index, step in enumerate(plan):
        pending = step(attributes, obj, old)
        if pending is not None:
            return _finish(pending, plan[index + 1:], attributes, obj, old)
    return None


async def _finish(
    pending: Awaitable[None],
    rest: Plan,
    attributes: AdmissionAttributes,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
) -> None:
    await pending
    for step in rest:
        more = step(attributes, obj, old)
        if more is not None:
            await more


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


class NamespaceLifecycle(MutatingPlugin):
    """No new content in a missing (404) or Terminating (403) namespace; three namespaces are immortal.

    Upstream's plugin (``plugin/namespace/lifecycle/admission.go`` ``Admit``) implements ``Admit`` only,
    so it is mutating (it changes nothing): it refuses before the strategy and validation run. Its rules:

    - a Namespace itself: every operation allowed, but the DELETE of ``default``, ``kube-system`` or
      ``kube-public`` (403);
    - a cluster-scoped object, a DELETE of a namespaced one, an access review
      (``localsubjectaccessreviews``, whose answer must not tell whether a namespace exists): allowed;
    - a CREATE or UPDATE (a PUT, a patch, an apply, on the object or a subresource) of a namespaced
      object in a namespace that does not exist: 404 ``namespaces "x" not found``;
    - a CREATE in a Terminating namespace: 403 with a ``NamespaceTerminating`` cause. An UPDATE there is
      allowed (finalizers must still be removable while the namespace empties)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        # Namespace name -> (mod_revision, terminating) of the version last read: one version of a
        # key never changes, so a namespace is decoded once per write to it, not once per create in it.
        self._terminating: dict[str, tuple[int, bool]] = {}

    def handles(self, operation: Operation, resource: ResourceInfo) -> bool:
        if resource.group == "" and resource.plural == "namespaces":
            return operation == "DELETE"
        if resource.group == "authorization.k8s.io" and resource.plural == "localsubjectaccessreviews":
            return False
        return operation in ("CREATE", "UPDATE") and resource.namespaced  # upstream's handler: no CONNECT

    def mutate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        info = attributes.resource
        if info.group == "" and info.plural == "namespaces":
            if attributes.operation == "DELETE" and attributes.name in IMMORTAL_NAMESPACES:
                raise _forbidden(attributes, "this namespace may not be deleted")
            return None
        if attributes.operation == "DELETE" or not info.namespaced or not attributes.namespace:
            return None
        if attributes.operation == "UPDATE":
            return self._require(attributes)
        state = attributes.namespace_state
        if state is None:
            return self._read_and_judge(attributes)
        kv = state[0]
        # _judge's usual answer without its call: a namespace seen at this revision, not terminating.
        seen = self._terminating.get(attributes.namespace)
        if seen is None or kv is None or seen[0] != kv.mod_revision or seen[1]:
            self._judge(attributes, kv)
        return None

    async def _require(self, attributes: AdmissionAttributes) -> None:
        """An UPDATE needs the namespace to exist, whatever its phase (only a CREATE is refused in a
        Terminating one)."""
        if await self._store.get(f"/registry/core/namespaces/{attributes.namespace}") is None:
            raise not_found("namespaces", attributes.namespace)

    async def _read_and_judge(self, attributes: AdmissionAttributes) -> None:
        self._judge(attributes, await self._store.get(f"/registry/core/namespaces/{attributes.namespace}"))

    def _judge(self, attributes: AdmissionAttributes, kv: KeyValue | None) -> None:
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
