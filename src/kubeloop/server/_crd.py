"""Serving CustomResourceDefinitions: the CRD strategy, the CR schema hook, and the CRD controller.

Three pieces plug into the core server's seams (:class:`~kubeloop.server._state.ServerState`):

- :class:`CrdStrategy` is the registry strategy of ``customresourcedefinitions``: v1 defaults,
  validation (422 naming each bad field), immutable fields on update, ``status.storedVersions`` and
  empty ``acceptedNames`` on create (k/k ``pkg/registry/customresourcedefinition/strategy.go``), and
  the ``customresourcecleanup.apiextensions.k8s.io`` finalizer so a deleted CRD stays until its
  objects are gone.
- A validator per custom (group, kind) in ``state.validators``: prunes undeclared fields, drops
  non-nullable nulls, applies ``default`` and validates against the ``openAPIV3Schema`` of the
  object's version (see :mod:`kubeloop.api._schema_validate`), then runs the version's
  ``x-kubernetes-validations`` rules with the stored object as ``oldSelf`` on updates
  (:mod:`kubeloop.api._cel_validate`), unless the schema errors already make the object unfit for them.
- :class:`CrdController`, a background task started with the app. It lists the CRD keys in the
  store, then watches them from that revision, so after a restart it rebuilds exactly the served
  kinds. For each CRD it registers one :class:`~kubeloop.api.ResourceInfo` per served version (and
  unregisters versions no longer served), then writes the status upstream's naming and
  establishing controllers converge to (``NamesAccepted``, ``Established``, ``acceptedNames``,
  ``storedVersions``) with a compare-and-swap on the CRD's revision. A CRD being deleted has all of
  its objects deleted, then its finalizer removed; the DELETE event unregisters its kinds.

The controller is the only writer of CRD status besides clients using ``/status``; its writes are
conditional, and a lost race is retried by the watch event the winning write produces.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from kubeloop.api import BadRequest, FieldError, KindRegistry, ResourceInfo, ScalePaths, format_time, invalid
from kubeloop.api._cel_presence import has_validation_rules
from kubeloop.api._schema_validate import apply_defaults, drop_nulls, prune, validate
from kubeloop.api._validation import name_is_dns1123_subdomain
from kubeloop.server._crd_validation import (
    CLEANUP_FINALIZER,
    accepted_status,
    default_crd,
    served_versions,
    validate_crd,
)
from kubeloop.server._state import ServerState, collection_prefix, object_key, renderer
from kubeloop.server._strategy import GenericStrategy
from kubeloop.store import Compacted, KeyNotFound, RevisionMismatch, StoreClosed

if TYPE_CHECKING:
    from kubeloop.api._cel_validate import RuleValidator

__all__ = ["CRD_INFO_KEY", "CrdController", "CrdStrategy", "resource_infos"]

log = logging.getLogger(__name__)
CRD_INFO_KEY = ("apiextensions.k8s.io", "CustomResourceDefinition")
_CRD_PREFIX = "/registry/apiextensions.k8s.io/customresourcedefinitions/"
_BLOCKING = frozenset({"not_supported", "required", "too_long", "too_many", "type_invalid"})
_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; correct the existing errors to "
    "complete validation"
)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def resource_infos(crd: Mapping[str, Any]) -> list[ResourceInfo]:
    """One ResourceInfo per served version of ``crd`` (custom-resource strategy switches on)."""
    spec = _dict(crd.get("spec"))
    names = _dict(_dict(crd.get("status")).get("acceptedNames")) or _dict(spec.get("names"))
    if not names.get("plural") or not names.get("kind"):
        return []
    storage = next((v.get("name") for v in spec.get("versions") or () if _dict(v).get("storage")), None)
    infos: list[ResourceInfo] = []
    for version in served_versions(crd):
        subresources = _dict(version.get("subresources"))
        scale = subresources.get("scale")
        scale_paths = None
        if isinstance(scale, dict):
            scale_paths = ScalePaths(
                str(scale.get("specReplicasPath") or ".spec.replicas"),
                str(scale.get("statusReplicasPath") or ".status.replicas"),
                str(scale["labelSelectorPath"]) if scale.get("labelSelectorPath") else None,
            )
        selectable = tuple(
            str(f["jsonPath"]).lstrip(".")
            for f in version.get("selectableFields") or ()
            if _dict(f).get("jsonPath")
        )
        infos.append(
            ResourceInfo(
                group=str(spec.get("group")),
                version=str(version.get("name")),
                kind=str(names["kind"]),
                plural=str(names["plural"]),
                singular=str(names.get("singular") or str(names["kind"]).lower()),
                namespaced=spec.get("scope") != "Cluster",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status_subresource="status" in subresources,
                scale=scale_paths,
                tracks_generation=True,
                allow_unconditional_update=False,
                field_selectors=selectable,
                custom=True,
                storage_version=str(storage) if storage else None,
                custom_list_kind=str(names.get("listKind") or ""),
            )
        )
    return infos


class CrdStrategy(GenericStrategy):
    """``customresourcedefinitions``: defaults, validation, storedVersions, cleanup finalizer."""

    name_validator = staticmethod(name_is_dns1123_subdomain)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        default_crd(obj)
        stored = [
            str(v.get("name"))
            for v in _dict(obj.get("spec")).get("versions") or ()
            if _dict(v).get("storage")
        ]
        # strategy.go PrepareForCreate: a zero status with the storage version stored; its nil Conditions
        # encode as ``null`` (apiextensions/v1 ``Conditions []CustomResourceDefinitionCondition
        # `json:"conditions"```, no omitempty), in the struct's field order.
        obj["status"] = {"conditions": None, "acceptedNames": {"plural": "", "kind": ""},
                         "storedVersions": stored[:1]}
        meta = obj.setdefault("metadata", {})
        finalizers = list(meta.get("finalizers") or ())
        if CLEANUP_FINALIZER not in finalizers:
            meta["finalizers"] = [*finalizers, CLEANUP_FINALIZER]

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        default_crd(new)
        super().prepare_for_update(new, old)
        errors = [e for e in validate_crd(new, old) if e.detail == "field is immutable"]
        if errors:
            raise invalid(
                self.info.kind, str(_dict(new.get("metadata")).get("name") or ""), errors, self.info.group
            )
        status = _dict(new.get("status"))
        stored = list(status.get("storedVersions") or ())
        for version in _dict(new.get("spec")).get("versions") or ():
            if _dict(version).get("storage") and version.get("name") not in stored:
                stored.append(str(version.get("name")))
        if status or stored:
            new["status"] = {**status, "storedVersions": stored}

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return [e for e in validate_crd(obj) if e.detail != "field is immutable"]


class CrdController:
    """Keeps the served custom kinds, their schemas and CRD status in step with the stored CRDs."""

    def __init__(self, state: ServerState) -> None:
        self._state = state
        self._crds: dict[str, dict[str, Any]] = {}
        self._served: dict[str, list[ResourceInfo]] = {}
        self._schemas: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        self._columns: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        # The compiled x-kubernetes-validations of each served schema, built on the first write.
        self._rules: dict[tuple[str, str, str], RuleValidator | None] = {}  # None: no rules
        self._revision = 0
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        state.strategies[CRD_INFO_KEY] = CrdStrategy(self._crd_info(state.kinds))

    @staticmethod
    def _crd_info(kinds: KindRegistry) -> ResourceInfo:
        info = kinds.by_kind(*CRD_INFO_KEY)
        if info is None:
            raise LookupError("the kind registry does not serve customresourcedefinitions")
        return info

    # -- CustomSchemaSource (OpenAPI) ------------------------------------------------------------
    @property
    def revision(self) -> int:
        return self._revision

    def schema(self, group: str, version: str, kind: str) -> Mapping[str, Any] | None:
        return self._schemas.get((group, version, kind))

    def printer_columns(self, info: ResourceInfo) -> list[dict[str, Any]] | None:
        """The ``additionalPrinterColumns`` of a served custom kind's version (None when it has none)."""
        return self._columns.get((info.group, info.version, info.kind))

    def unknown_fields(self, info: ResourceInfo, obj: Mapping[str, Any], field_validation: str) -> list[str]:
        """``fieldValidation`` for a custom resource body: the ``Warning`` texts to send (Warn, the
        default), nothing (Ignore), or a 400 ``strict decoding error: unknown field "spec.foo"`` (Strict).

        Upstream reports the paths pruning removes (customresource_handler.go, unstructured decoder);
        the pruning itself happens in the schema validator whatever the mode.
        """
        schema = self._schemas.get((info.group, info.version, info.kind))
        if schema is None or field_validation == "Ignore":
            return []
        paths = prune(copy.deepcopy(dict(obj)), schema)
        texts = [f'unknown field "{p}"' for p in paths]
        if texts and field_validation == "Strict":
            raise BadRequest("strict decoding error: " + ", ".join(texts))
        return texts

    # -- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        """Load every stored CRD (so its kinds are served when this returns), then watch for changes."""
        listed = await self._state.store.range(_CRD_PREFIX)
        for kv in listed.items:
            await self._observe(orjson.loads(kv.value), kv.mod_revision)
        self._task = asyncio.create_task(self._watch(listed.revision), name="kubeloop-crd-controller")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _watch(self, after: int) -> None:
        while True:
            try:
                async for event in self._state.store.watch(_CRD_PREFIX, after=after):
                    after = event.revision
                    obj = orjson.loads(event.kv.value)
                    if event.type == "DELETE":
                        self._forget(str(_dict(obj.get("metadata")).get("name")))
                    else:
                        await self._observe(obj, event.kv.mod_revision)
                return
            except Compacted:
                listed = await self._state.store.range(_CRD_PREFIX)
                for kv in listed.items:
                    await self._observe(orjson.loads(kv.value), kv.mod_revision)
                after = listed.revision
            except asyncio.CancelledError:
                raise
            except StoreClosed:
                # Nothing more will come: retrying would spin without ever awaiting, starving the loop
                # (an App restarted by a late request after its store closed, in tests).
                return
            except Exception:  # a bad CRD must not stop the controller; the next event retries
                log.exception("CRD controller failed on an event")

    # -- reconcile ---------------------------------------------------------------------------------
    async def _observe(self, crd: dict[str, Any], mod_revision: int) -> None:
        name = str(_dict(crd.get("metadata")).get("name"))
        self._crds[name] = crd
        if _dict(crd.get("metadata")).get("deletionTimestamp"):
            await self._finalize(name, crd, mod_revision)
            return
        now = format_time(self._state.clock.now())
        others = [c for n, c in self._crds.items() if n != name]
        status = accepted_status(crd, others, now=now)
        accepted = any(
            c.get("type") == "NamesAccepted" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        self._register(name, {**crd, "status": status} if accepted else {})
        if status != crd.get("status"):
            await self._write_status(name, crd, status, mod_revision)

    def _register(self, name: str, crd: Mapping[str, Any]) -> None:
        infos = resource_infos(crd) if crd else []
        versions = {str(_dict(v).get("name")): _dict(v) for v in _dict(crd.get("spec")).get("versions") or ()}
        schemas: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        columns: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for info in infos:
            version = versions.get(info.version, {})
            schema = _dict(version.get("schema")).get("openAPIV3Schema")
            if isinstance(schema, dict):
                schemas[(info.group, info.version, info.kind)] = schema
            printer = version.get("additionalPrinterColumns")
            if isinstance(printer, list):
                columns[(info.group, info.version, info.kind)] = [c for c in printer if isinstance(c, dict)]
        previous = self._served.get(name, [])
        if (previous == infos and all(self._schemas.get(k) == v for k, v in schemas.items())
                and all(self._columns.get(k) == v for k, v in columns.items())):
            return
        kinds = self._state.kinds
        for info in self._served.pop(name, []):
            kinds.remove(info.group, info.version, info.plural)
            self._schemas.pop((info.group, info.version, info.kind), None)
            self._rules.pop((info.group, info.version, info.kind), None)
            self._columns.pop((info.group, info.version, info.kind), None)
            self._state.validators.pop((info.group, info.kind), None)
        for info in infos:
            kinds.add(info)
        self._schemas.update(schemas)
        self._columns.update(columns)
        if infos:
            self._served[name] = infos
            self._state.validators[(infos[0].group, infos[0].kind)] = self._validator(infos[0].group)
        self._revision += 1

    def _validator(self, group: str) -> Any:
        schemas = self._schemas
        rules = self._rules

        def validate_custom(obj: dict[str, Any], old: dict[str, Any] | None, warnings: list[str]) -> list[FieldError]:
            version = str(obj.get("apiVersion") or "").rpartition("/")[2]
            key = (group, version, str(obj.get("kind") or ""))
            schema = schemas.get(key)
            if schema is None:
                return []
            prune(obj, schema)
            drop_nulls(obj, schema)
            apply_defaults(obj, schema)
            errors = validate({k: v for k, v in obj.items() if k != "metadata"}, schema)
            if key in rules:
                validator = rules[key]
            else:
                validator = rules[key] = _rule_validator(schema)
            if validator is None or validator.empty:
                return errors
            # customresource strategy.go: a type, required, enum or size violation means the object does
            # not have the shape the rules were written for; they are not run (hasBlockingErr).
            if any(e.type in _BLOCKING for e in errors):
                return [*errors, FieldError.invalid("<nil>", "null", _NOT_CHECKED)]
            return [*errors, *validator.validate(obj, old, warnings)]

        return validate_custom

    def _forget(self, name: str) -> None:
        self._crds.pop(name, None)
        self._register(name, {})

    async def _write_status(
        self, name: str, crd: dict[str, Any], status: dict[str, Any], mod_revision: int
    ) -> None:
        info = self._crd_info(self._state.kinds)
        updated = {**crd, "status": status}
        try:
            await self._state.store.update(
                object_key(info, "", name), renderer(updated), expected_revision=mod_revision
            )
        except (RevisionMismatch, KeyNotFound):
            return  # a newer write exists; its watch event brings us back here

    async def _finalize(self, name: str, crd: dict[str, Any], mod_revision: int) -> None:
        """Delete every object of the CRD's kind, then drop the cleanup finalizer (CRD finalizer controller)."""
        infos = self._served.get(name) or resource_infos(crd)
        self._register(name, {})
        if infos:
            prefix = collection_prefix(infos[0], "")
            listed = await self._state.store.range(prefix)
            for kv in listed.items:
                with contextlib.suppress(KeyNotFound, RevisionMismatch):
                    await self._state.store.delete(kv.key, expected_revision=kv.mod_revision)
        meta = _dict(crd.get("metadata"))
        finalizers = [f for f in meta.get("finalizers") or () if f != CLEANUP_FINALIZER]
        if finalizers == list(meta.get("finalizers") or ()):
            return
        info = self._crd_info(self._state.kinds)
        key = object_key(info, "", name)
        try:
            if not finalizers:
                await self._state.store.delete(key, expected_revision=mod_revision, render=renderer(crd))
            else:
                updated = {**crd, "metadata": {**meta, "finalizers": finalizers}}
                await self._state.store.update(key, renderer(updated), expected_revision=mod_revision)
        except (RevisionMismatch, KeyNotFound):
            return


def _rule_validator(schema: Any) -> RuleValidator | None:
    """The runner of ``schema``'s CEL rules, or None when it has none (CEL is loaded only for rules)."""
    if not has_validation_rules(schema):
        return None
    from kubeloop.api._cel_validate import RuleValidator

    return RuleValidator(schema)
