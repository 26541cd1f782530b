"""The AdmissionReview a webhook is sent, and what its answer means for the request.

Request (k8s.io/apiserver ``pkg/admission/plugin/webhook/request/admissionreview.go``
``CreateV1AdmissionReview``): ``uid`` (new per call), ``kind``/``resource`` at the version the webhook
matched, ``requestKind``/``requestResource`` as the request came, ``subResource`` and
``requestSubResource``, ``name`` and ``namespace`` (omitted when empty; a Namespace's own requests carry
its name as the namespace, as upstream's request info sets it), ``operation``, ``userInfo``,
``object`` (``null`` for DELETE), ``oldObject`` (``null`` for CREATE), ``dryRun`` and ``options``
(CreateOptions, UpdateOptions or DeleteOptions, ``meta.k8s.io/v1``). A ``/scale`` request's objects are
``autoscaling/v1`` Scales, and their kind is Scale's, as upstream's scale storage admits them.

Answers (``pkg/admission/plugin/webhook/errors/statuserror.go`` ``ToStatusErr``, 1.32): a denial is the
webhook's Status with its code (one below 400 made 400), ``status: Failure`` and the message
``admission webhook "NAME" denied the request: MSG`` (or the reason, or ``without explanation``); a call
failure is 500 InternalError ``failed calling webhook "NAME": REASON``
(``pkg/util/webhook/error.go`` ``ErrCallingWebhook``, through ``apierrors.NewInternalError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import ApiError, BadRequest, InternalError, ResourceInfo, split_api_version
from kubeloop.server._admission import AdmissionAttributes
from kubeloop.server._authn import user_info as authenticated_user_info
from kubeloop.server._scale import scale_of

__all__ = ["call_failed", "dry_run_unsupported", "internal", "object_at", "rejection", "review_for", "user_info"]


def user_info(user: Any) -> dict[str, Any]:
    """``authentication.k8s.io/v1`` UserInfo of the request's user (empty for an unauthenticated server)."""
    return {} if user is None else authenticated_user_info(user)


def _options(attributes: AdmissionAttributes) -> dict[str, Any] | None:
    options = attributes.options
    if options is None:
        return None
    kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}.get(attributes.operation)
    if kind is None:
        return None
    out: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if getattr(options, "dry_run", False):
        out["dryRun"] = ["All"]
    if kind == "DeleteOptions":
        if options.grace_period_seconds is not None:
            out["gracePeriodSeconds"] = options.grace_period_seconds
        preconditions = {k: v for k, v in (("uid", options.uid_precondition),
                                           ("resourceVersion", options.rv_precondition)) if v is not None}
        if preconditions:
            out["preconditions"] = preconditions
        if options.orphan_dependents is not None:
            out["orphanDependents"] = options.orphan_dependents
        if options.propagation_policy is not None:
            out["propagationPolicy"] = options.propagation_policy
        return out
    if options.field_manager:
        out["fieldManager"] = options.field_manager
    if options.field_validation:
        out["fieldValidation"] = options.field_validation
    return out


def object_at(obj: dict[str, Any] | None, attributes: AdmissionAttributes, matched: ResourceInfo
              ) -> dict[str, Any] | None:
    """The object as the webhook sees it: a ``/scale`` request's as its ``autoscaling/v1`` Scale (kubeloop
    admits the parent there), else at the matched version (conversion None: ``apiVersion`` only)."""
    request = attributes.resource
    if obj is None:
        return None
    if attributes.subresource == "scale" and request.scale is not None and obj.get("kind") == request.kind:
        return scale_of(request, obj)
    if matched is request or obj.get("apiVersion") != request.api_version:
        return obj
    return {**obj, "apiVersion": matched.api_version}


def _kind(obj: Mapping[str, Any] | None, info: ResourceInfo) -> dict[str, str]:
    if obj is not None and isinstance(obj.get("kind"), str) and isinstance(obj.get("apiVersion"), str) \
            and obj["kind"] != info.kind:  # a subresource's own kind (a Scale)
        group, version = split_api_version(obj["apiVersion"])
        return {"group": group, "version": version, "kind": obj["kind"]}
    return {"group": info.group, "version": info.version, "kind": info.kind}


def review_for(uid: str, attributes: AdmissionAttributes, matched: ResourceInfo, obj: dict[str, Any] | None,
               old: dict[str, Any] | None, review_version: str) -> dict[str, Any]:
    """The AdmissionReview (``object``/``oldObject`` already at the matched version)."""
    info = attributes.resource
    sample = obj if obj is not None else old
    request: dict[str, Any] = {
        "uid": uid,
        "kind": _kind(sample, matched),
        "resource": {"group": matched.group, "version": matched.version, "resource": matched.plural},
        "requestKind": _kind(sample, info),
        "requestResource": {"group": info.group, "version": info.version, "resource": info.plural},
    }
    if attributes.subresource:
        request["subResource"] = request["requestSubResource"] = attributes.subresource
    if attributes.name:
        request["name"] = attributes.name
    namespace = attributes.namespace
    if not namespace and info.group == "" and info.plural == "namespaces" and attributes.operation != "CREATE":
        namespace = attributes.name
    if namespace:
        request["namespace"] = namespace
    request["operation"] = attributes.operation
    request["userInfo"] = user_info(attributes.user)
    request["object"] = obj
    request["oldObject"] = old
    request["dryRun"] = attributes.dry_run
    options = _options(attributes)
    if options is not None or attributes.operation == "CONNECT":  # a CONNECT has no options: null
        request["options"] = options
    return {"kind": "AdmissionReview", "apiVersion": f"admission.k8s.io/{review_version}", "request": request}


def rejection(name: str, status: Any) -> ApiError:
    """ToStatusErr: the webhook's denial as the error the client gets."""
    result = dict(status) if isinstance(status, Mapping) else {}
    code = result.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    denied = f'admission webhook "{name}" denied the request'
    if result.get("message"):
        message = f"{denied}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied}: {result['reason']}"
    else:
        message = f"{denied} without explanation"
    details = result.get("details") if isinstance(result.get("details"), dict) else None
    return ApiError(message, reason=str(result.get("reason") or ""), code=code, details=details)


def call_failed(name: str, reason: str) -> InternalError:
    """A call that failed with ``failurePolicy: Fail``: ``apierrors.NewInternalError(ErrCallingWebhook)``."""
    text = f'failed calling webhook "{name}": {reason}'
    return InternalError(f"Internal error occurred: {text}", details={"causes": [{"message": text}]})


def internal(text: str) -> InternalError:
    return InternalError(f"Internal error occurred: {text}", details={"causes": [{"message": text}]})


def dry_run_unsupported(name: str) -> BadRequest:
    """NewDryRunUnsupportedErr: a dry run reaching a webhook with side effects."""
    return BadRequest(f'admission webhook "{name}" does not support dry run')
