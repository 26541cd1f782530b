"""The one error tree, on both sides of the wire.

``ApiError(code, reason, message, details)`` and its subclasses each mean exactly one thing.
The server renders any of them as a Kubernetes ``Status`` with :meth:`ApiError.to_status`; the
client parses a ``Status`` back into the same class with :func:`error_from_status`, so code that
catches ``Conflict`` works identically against kubeloop's server and a real cluster.

Messages follow apimachinery ``pkg/api/errors/errors.go`` (constructors ``not_found``,
``already_exists``, ``conflict``, ``invalid`` ...); field errors follow
``pkg/util/validation/field/errors.go`` (cause ``reason`` and message prefix per error type).

Tree::

    ApiError
    ├── BadRequest (400)
    ├── Unauthorized (401)
    ├── Forbidden (403)
    ├── NotFound (404)
    ├── MethodNotAllowed (405)
    ├── NotAcceptable (406)
    ├── AlreadyExists (409, reason AlreadyExists)
    ├── Conflict (409, reason Conflict)
    ├── Gone (410)
    │   └── Expired (410, reason Expired)
    ├── RequestEntityTooLarge (413)
    ├── UnsupportedMediaType (415)
    ├── Invalid (422)
    ├── TooManyRequests (429)
    ├── InternalError (500)
    ├── ServiceUnavailable (503)
    └── Timeout (504)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "UNKNOWN_REASON",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Expired",
    "FieldError",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "RequestEntityTooLarge",
    "ServiceUnavailable",
    "Timeout",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "already_exists",
    "conflict",
    "error_from_status",
    "invalid",
    "not_found",
    "qualified_resource",
]


# StatusReasonUnknown (apimachinery meta/v1 types.go): "the server has declined to indicate a specific reason".
UNKNOWN_REASON = ""


class ApiError(Exception):
    """A Kubernetes API error: HTTP ``code``, machine ``reason``, human ``message``, ``details``.

    ``reason=UNKNOWN_REASON`` (``""``) is upstream's ``StatusReasonUnknown``: the reason of an error the
    server did not turn into a Status (apiserver ``ErrorToAPIStatus``' default case, a 500); the
    ``Status`` then has no ``reason`` field (``json:"reason,omitempty"``), and kubectl prints
    ``Error from server: ...`` without a reason in brackets."""

    code: ClassVar[int] = 500
    reason_default: ClassVar[str] = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        code: int | None = None,
        retry_after_seconds: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = self.reason_default if reason is None else reason
        self.details: dict[str, Any] = dict(details or {})
        if code is not None:
            self.status_code = code
        else:
            self.status_code = self.code
        if retry_after_seconds is not None:
            self.details["retryAfterSeconds"] = retry_after_seconds

    @property
    def retry_after_seconds(self) -> int | None:
        value = self.details.get("retryAfterSeconds")
        return value if isinstance(value, int) else None

    @property
    def causes(self) -> list[dict[str, str]]:
        causes = self.details.get("causes")
        return list(causes) if isinstance(causes, list) else []

    def to_status(self) -> dict[str, Any]:
        """The ``Status`` object the server answers with (``code`` is the HTTP status)."""
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.status_code,
        }
        if not self.reason:
            del status["reason"]
        if self.details:
            status["details"] = self.details
        return status

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status_code}, {self.reason!r}, {self.message!r})"


class BadRequest(ApiError):
    code = 400
    reason_default = "BadRequest"


class Unauthorized(ApiError):
    code = 401
    reason_default = "Unauthorized"


class Forbidden(ApiError):
    code = 403
    reason_default = "Forbidden"


class NotFound(ApiError):
    code = 404
    reason_default = "NotFound"


class MethodNotAllowed(ApiError):
    code = 405
    reason_default = "MethodNotAllowed"


class NotAcceptable(ApiError):
    code = 406
    reason_default = "NotAcceptable"


class AlreadyExists(ApiError):
    code = 409
    reason_default = "AlreadyExists"


class Conflict(ApiError):
    code = 409
    reason_default = "Conflict"


class Gone(ApiError):
    code = 410
    reason_default = "Gone"


class Expired(Gone):
    """A resourceVersion or continue token older than the store's window (``too old resource version``)."""

    reason_default = "Expired"


class RequestEntityTooLarge(ApiError):
    code = 413
    reason_default = "RequestEntityTooLarge"


class UnsupportedMediaType(ApiError):
    code = 415
    reason_default = "UnsupportedMediaType"


class Invalid(ApiError):
    code = 422
    reason_default = "Invalid"


class TooManyRequests(ApiError):
    code = 429
    reason_default = "TooManyRequests"


class InternalError(ApiError):
    code = 500
    reason_default = "InternalError"


class ServiceUnavailable(ApiError):
    code = 503
    reason_default = "ServiceUnavailable"


class Timeout(ApiError):
    code = 504
    reason_default = "Timeout"


_BY_REASON: dict[str, type[ApiError]] = {
    cls.reason_default: cls
    for cls in (
        BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, NotAcceptable,
        AlreadyExists, Conflict, Gone, Expired, RequestEntityTooLarge, UnsupportedMediaType,
        Invalid, TooManyRequests, InternalError, ServiceUnavailable, Timeout,
    )
}
_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    406: NotAcceptable, 409: Conflict, 410: Gone, 413: RequestEntityTooLarge,
    415: UnsupportedMediaType, 422: Invalid, 429: TooManyRequests, 500: InternalError,
    503: ServiceUnavailable, 504: Timeout,
}


def error_from_status(status: Any, code: int) -> ApiError:
    """Rebuild the error a server sent: the class is chosen by ``reason``, then by HTTP ``code``."""
    if not isinstance(status, dict) or status.get("kind") != "Status":
        text = status if isinstance(status, str) else json.dumps(status)[:500] if status is not None else ""
        cls = _BY_CODE.get(code, ApiError)
        return cls(f"the server responded with HTTP {code}: {text}".rstrip(": "), code=code)
    reason = str(status.get("reason") or "")
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code, ApiError)
    details = status.get("details")
    return cls(
        str(status.get("message") or ""),
        reason=reason or None,
        details=details if isinstance(details, dict) else None,
        code=code,
    )


def qualified_resource(resource: str, group: str = "") -> str:
    """``resource[.group]``, the way apimachinery names a resource in messages."""
    return f"{resource}.{group}" if group else resource


def _details(resource: str, name: str, group: str) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": resource}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def not_found(resource: str, name: str, group: str = "") -> NotFound:
    return NotFound(f'{qualified_resource(resource, group)} "{name}" not found', details=_details(resource, name, group))


def already_exists(resource: str, name: str, group: str = "") -> AlreadyExists:
    return AlreadyExists(
        f'{qualified_resource(resource, group)} "{name}" already exists', details=_details(resource, name, group)
    )


OPTIMISTIC_LOCK_MESSAGE = "the object has been modified; please apply your changes to the latest version and try again"


def conflict(resource: str, name: str, group: str = "", detail: str = OPTIMISTIC_LOCK_MESSAGE) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {qualified_resource(resource, group)} "{name}": {detail}',
        details=_details(resource, name, group),
    )


# Field error types: (cause reason, message prefix); apimachinery field/errors.go.
_FIELD_TYPES: dict[str, tuple[str, str]] = {
    "required": ("FieldValueRequired", "Required value"),
    "invalid": ("FieldValueInvalid", "Invalid value"),
    "not_supported": ("FieldValueNotSupported", "Unsupported value"),
    "forbidden": ("FieldValueForbidden", "Forbidden"),
    "duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "too_long": ("FieldValueTooLong", "Too long"),
    "too_many": ("FieldValueTooMany", "Too many"),
    "not_found": ("FieldValueNotFound", "Not found"),
    "type_invalid": ("FieldValueTypeInvalid", "Invalid value"),
    "internal": ("InternalError", "Internal error"),
}
_NO_VALUE = object()


@dataclass(frozen=True, slots=True)
class GoSyntax:
    """A value a field error shows as Go's ``%#v`` prints it, unquoted: a struct such as upstream's
    ``apiextensions.ValidationRule{Rule:"self.x > 0", ...}`` (``field.Error.ErrorBody``'s fallback)."""

    text: str


def _go_quote(value: Any) -> str:
    if isinstance(value, GoSyntax):
        return value.text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation failure at a field path such as ``metadata.name`` or ``spec.containers[0].image``.

    ``type`` is one of: required, invalid, not_supported, forbidden, duplicate, too_long, too_many,
    not_found, type_invalid, internal.
    """

    type: str
    field: str
    detail: str = ""
    value: Any = _NO_VALUE

    @classmethod
    def required(cls, field: str, detail: str = "") -> FieldError:
        return cls("required", field, detail)

    @classmethod
    def invalid(cls, field: str, value: Any, detail: str = "") -> FieldError:
        return cls("invalid", field, detail, value)

    @classmethod
    def forbidden(cls, field: str, detail: str = "") -> FieldError:
        return cls("forbidden", field, detail)

    @classmethod
    def not_supported(cls, field: str, value: Any, supported: list[str]) -> FieldError:
        quoted = ", ".join(_go_quote(s) for s in supported)
        return cls("not_supported", field, f"supported values: {quoted}", value)

    @classmethod
    def duplicate(cls, field: str, value: Any) -> FieldError:
        return cls("duplicate", field, "", value)

    @classmethod
    def too_long(cls, field: str, limit: int) -> FieldError:
        return cls("too_long", field, f"may not be more than {limit} bytes")

    @classmethod
    def type_invalid(cls, field: str, value: Any, detail: str) -> FieldError:
        return cls("type_invalid", field, detail, value)

    @property
    def cause_reason(self) -> str:
        return _FIELD_TYPES.get(self.type, ("FieldValueInvalid", ""))[0]

    @property
    def body(self) -> str:
        """The message without the field, e.g. ``Invalid value: "Foo": a lowercase RFC 1123 ...``."""
        prefix = _FIELD_TYPES.get(self.type, ("", "Invalid value"))[1]
        text = prefix
        if self.value is not _NO_VALUE and self.type not in ("required", "forbidden", "too_long", "too_many"):
            text += f": {_go_quote(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        # field.Error.Error prints the path even when it is empty (": Forbidden: ...").
        return f"{self.field}: {self.body}"

    def to_cause(self) -> dict[str, str]:
        # A StatusCause's field is omitempty: an error on the empty path has none.
        if not self.field:
            return {"reason": self.cause_reason, "message": self.body}
        return {"reason": self.cause_reason, "message": self.body, "field": self.field}


def invalid(kind: str, name: str, errors: list[FieldError], group: str = "") -> Invalid:
    """422 Invalid: ``Kind[.group] "name" is invalid: e1`` (or ``[e1, e2]``), one cause per error."""
    # field.ErrorList.ToAggregate: the message names each distinct error once; the causes keep all.
    texts = list(dict.fromkeys(str(e) for e in errors))
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {"name": name, "kind": kind, "causes": [e.to_cause() for e in errors]}
    if group:
        details["group"] = group
    return Invalid(f'{qualified_resource(kind, group)} "{name}" is invalid: {joined}', details=details)
