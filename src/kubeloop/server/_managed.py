"""managedFields bookkeeping for non-apply writes, through :mod:`kubeloop.api._apply`.

Every create, update and non-apply patch records its field manager (the ``fieldManager`` query
parameter, else the User-Agent prefix, as apiserver ``handlers/rest.go`` managerOrUserAgent) with
operation ``Update``; server-side apply computes its own entries and is skipped here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubeloop.api import ResourceInfo, format_time
from kubeloop.api._apply import default_field_manager, managed_fields_on_create, managed_fields_on_update
from kubeloop.server._state import ServerState

__all__ = ["record_manager_hook"]


def record_manager_hook(state: ServerState) -> Callable[[Any, dict[str, Any], dict[str, Any] | None], None]:
    # Every write asks for its kind's apiVersion (a property that formats it) and schema: a built-in
    # kind's never change (ResourceInfo is frozen, builtin schemas are loaded once), so they are kept
    # per info object; a custom kind's schema follows its CRD and is asked for each time.
    builtin: dict[int, tuple[ResourceInfo, str, Mapping[str, Any] | None]] = {}

    def record(req: Any, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if req.operation == "Apply":
            return
        info = req.info
        hit = builtin.get(id(info))
        if hit is not None and hit[0] is info:
            api_version, schema = hit[1], hit[2]
        else:
            api_version, schema = info.api_version, state.schema(info)
            if not info.custom:
                if len(builtin) > 1_000:  # infos are few and long-lived; never grow without bound
                    builtin.clear()
                builtin[id(info)] = (info, api_version, schema)
        manager = req.options.field_manager or default_field_manager(req.user_agent)
        subresource = req.subresource if req.subresource in ("status", "scale") else None
        if old is None and subresource is None:  # a create: the positional entry point
            managed = managed_fields_on_create(
                obj, manager, format_time(state.clock.now()), api_version, schema, info.status_subresource,
            )
        else:
            managed = managed_fields_on_update(
                old, obj, manager, format_time(state.clock.now()), api_version, schema, subresource,
                info.status_subresource,
            )
        meta = obj.setdefault("metadata", {})
        if managed:
            # Unchanged entries are shared with ``old``, which the write path only reads and serialises.
            meta["managedFields"] = managed
        else:
            meta.pop("managedFields", None)

    return record
