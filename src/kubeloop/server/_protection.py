"""Deletion protection: a protected object is deleted only through a reviewed plan.

The rule (one decision function, :func:`deletion_refusal`, shared by the built-in admission plugin
:class:`DeletionProtection` and the ValidatingAdmissionWebhook app :func:`protection_webhook_app`):

* An object (a namespace included) whose annotation ``kubeloop.dev/protect`` is ``"true"`` cannot
  be deleted by a plain DELETE (kubectl, a client library, the garbage collector, the namespace
  controller): the request is refused with 403 Forbidden and a message naming the two-step
  ``kubeloop delete KIND/NAME`` then ``kubeloop delete KIND/NAME --confirm PLAN``. Protection is per
  object: the content of a protected namespace is not protected by it (deleting the namespace is).
* The approval token is the annotation ``kubeloop.dev/delete-approved: "<plan-id>/<uid>"``.
  ``kubeloop delete --confirm PLAN`` recomputes the impact, and only if the plan id is unchanged
  writes this annotation (an update, which protection does not restrict) with a resourceVersion
  precondition on every protected object of the impact, then issues the DELETE with uid and
  resourceVersion preconditions. The plugin lets a DELETE through when the approval names a
  well-formed plan id and the object's own uid.

Why this is "stateless enough": the server cannot recompute a plan (that needs a cluster-wide
read), and need not: protection guards against *accidental* deletes, not against someone with
update rights (who could just remove the ``protect`` annotation). What it must guarantee is that a
delete happens only after a deliberate review step, and that an approval cannot leak to another
object: binding the token to the uid means an approval copied by ``kubectl get -o yaml | kubectl
apply`` onto a recreated object (new uid) is void, and an approval written for one object means
nothing on another. The window between the approval write and the DELETE is the one request
``kubeloop delete`` makes next (its DELETE carries a uid+resourceVersion precondition, so it only
deletes the approved state); if that DELETE fails, ``kubeloop delete`` removes its approvals.

An object already being deleted (``deletionTimestamp`` set) is not refused again: a repeated
DELETE changes nothing upstream except shortening a grace period.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from kubeloop.api import (
    APPROVED_ANNOTATION,
    PROTECT_ANNOTATION,
    Forbidden,
    ResourceInfo,
    approval_value,
    is_protected,
    kubectl_name,
    qualified_resource,
)
from kubeloop.server._admission import AdmissionAttributes, ValidatingPlugin
from kubeloop.server._http import Receive, Scope, Send, send_bytes, send_json

__all__ = [
    "APPROVED_ANNOTATION",
    "PROTECT_ANNOTATION",
    "DeletionProtection",
    "approval_value",
    "deletion_refusal",
    "is_protected",
    "protection_webhook_app",
]

_PLAN_ID = re.compile(r"^[0-9a-f]{16}$")


def deletion_refusal(obj: Mapping[str, Any], *, kind: str, group: str) -> str | None:
    """Why a DELETE of ``obj`` (the stored object) must be refused, or ``None`` when it may proceed."""
    if not is_protected(obj):
        return None
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return None
    approval = str((meta.get("annotations") or {}).get(APPROVED_ANNOTATION, ""))
    plan, _, uid = approval.partition("/")
    if _PLAN_ID.match(plan) and uid and uid == meta.get("uid"):
        return None
    target = f"{kubectl_name(kind, group)}/{meta.get('name', '')}"
    if meta.get("namespace"):
        target += f" -n {meta['namespace']}"
    return (
        f'it is protected by the annotation {PROTECT_ANNOTATION}="true"; preview what the delete would '
        f"remove with `kubeloop delete {target}`, review it, then run "
        f"`kubeloop delete {target} --confirm PLAN` with the plan id the preview printed"
    )


class DeletionProtection(ValidatingPlugin):
    """The admission plugin: refuses DELETE of a protected object that carries no valid approval (403).
    A validating plugin, as the webhook form of the same rule is."""

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return operation == "DELETE"

    def validate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        if attributes.operation != "DELETE" or old is None or attributes.subresource:
            return
        info = attributes.resource
        reason = deletion_refusal(old, kind=info.kind, group=info.group)
        if reason is None:
            return
        details: dict[str, Any] = {"name": attributes.name, "kind": info.plural}
        if info.group:
            details["group"] = info.group
        raise Forbidden(f'{info.group_resource} "{attributes.name}" is forbidden: {reason}', details=details)


def review_response(review: Mapping[str, Any]) -> dict[str, Any]:
    """Answer one ``admission.k8s.io/v1`` AdmissionReview (validating) with the same rule."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    old = request.get("oldObject")
    if request.get("operation") == "DELETE" and not request.get("subResource") and isinstance(old, dict):
        kind = request.get("kind") or {}
        reason = deletion_refusal(old, kind=str(kind.get("kind", "")), group=str(kind.get("group", "")))
        if reason is not None:
            resource = request.get("resource") or {}
            qualified = qualified_resource(str(resource.get("resource", "")), str(resource.get("group", "")))
            response["allowed"] = False
            response["status"] = {
                "code": 403, "reason": "Forbidden", "status": "Failure",
                "message": f'{qualified} "{request.get("name", "")}" is forbidden: {reason}',
            }  # fmt: skip
    return {"apiVersion": review.get("apiVersion") or "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": response}


async def protection_webhook_app(scope: Scope, receive: Receive, send: Send) -> None:
    """ASGI app: ``POST`` an AdmissionReview to any path (``/validate``); ``GET /healthz`` is 200."""
    if scope["type"] != "http":
        return
    if scope["method"] == "GET":
        await send_bytes(send, 200, b"ok", content_type="text/plain; charset=utf-8")
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError:
        review = None
    if scope["method"] != "POST" or not isinstance(review, dict) or not isinstance(review.get("request"), dict):
        await send_json(send, 400, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 400,
                                    "reason": "BadRequest", "message": "expected an admission.k8s.io/v1 AdmissionReview"})
        return
    await send_json(send, 200, review_response(review))
