"""managedFields bookkeeping for non-apply writes, through :mod:`kubeloop.api._apply`.

Every create, update and non-apply patch records its field manager (the ``fieldManager`` query
parameter, else the User-Agent prefix, as apiserver ``handlers/rest.go`` managerOrUserAgent) with
operation ``Update``; server-side apply computes its own entries and is skipped here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeloop.api import format_time
from kubeloop.api._apply import default_field_manager, managed_fields_on_create, managed_fields_on_update
from kubeloop.server._state import ServerState

__all__ = ["record_manager_hook"]


def record_manager_hook(state: ServerState) -> Callable[[Any, dict[str, Any], dict[str, Any] | None], None]:
    def record(req: Any, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if req.operation == "Apply":
            return
        info = req.info
        api_version, schema = info.api_version, state.schema(info)
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
