"""JSON Patch (RFC 6902) and JSON Merge Patch (RFC 7386) over plain JSON values.

Guarantees: no function mutates its inputs, and no result shares a mutable container with an
input, so callers may edit results freely. The one exception is asked for: ``owned=True`` says the
caller hands ``obj`` over (a private copy nobody else reads, such as an object just decoded for this
patch), and the patch is then applied to it in place instead of to a deep copy of it; the result, or
the error, is the same as without it. Errors are the ``ApiError`` tree, with the statuses the
upstream apiserver gives for ``PATCH`` (apiserver ``pkg/endpoints/handlers/patch.go``
``applyJSPatch``):

- JSON Patch that is not a list of objects -> 400 BadRequest (the decode failure);
- more than :data:`MAX_JSON_PATCH_OPERATIONS` operations -> 413 RequestEntityTooLarge;
- a patch that fails to apply (a failing ``test``, a missing path, an unknown ``op``) -> 422
  Invalid. Upstream builds this with ``NewGenericServerResponse(422, ...)``: the message is
  ``the server rejected our request due to an error in our request``; we also carry the patch
  library's own message as the single cause, so the reason reaches the user.
- a merge patch document that is ``null`` -> 400 ``Invalid JSON Patch`` (``ErrBadJSONPatch``).

:func:`create_merge_patch` is the inverse of :func:`apply_merge_patch`:
``apply_merge_patch(a, create_merge_patch(a, b)) == b`` whenever ``b`` has no ``null`` inside an
object (merge patch cannot express "set to null").
"""

from __future__ import annotations

from typing import Any

from kubeloop.api._errors import BadRequest, Invalid, RequestEntityTooLarge
from kubeloop.api._go_json import go_json_kind

__all__ = [
    "MAX_JSON_PATCH_OPERATIONS",
    "apply_json_patch",
    "apply_merge_patch",
    "copy_json",
    "create_merge_patch",
]

MAX_JSON_PATCH_OPERATIONS = 10000
_REJECTED = "the server rejected our request due to an error in our request"


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists, scalars), faster than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def _go_unmarshal_error(value: Any, target: str) -> BadRequest:
    return BadRequest(f"json: cannot unmarshal {go_json_kind(value)} into Go value of type {target}")


def apply_json_patch(obj: Any, ops: Any, *, owned: bool = False) -> Any:
    """Apply RFC 6902 operations ``ops`` (the decoded request body) to ``obj``; returns a new value
    (``obj`` itself, changed, when ``owned``)."""
    if ops is None:
        ops = []  # Go decodes a JSON null into an empty patch
    if not isinstance(ops, list):
        raise _go_unmarshal_error(ops, "jsonpatch.Patch")
    for op in ops:
        if not isinstance(op, dict):
            raise _go_unmarshal_error(op, "jsonpatch.Operation")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise RequestEntityTooLarge(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}"
        )
    # RFC 6902, the library in deps (pyproject) rather than a hand-written patcher; imported by the first
    # JSON patch, not by importing kubeloop.api (start-up).
    import jsonpatch
    import jsonpointer

    try:
        # The library inserts the operations' values themselves, and a later operation may change one in
        # place (``add ""`` then ``add /metadata``): the patch document must stay as the client sent it.
        patch = jsonpatch.JsonPatch(copy_json(ops))
        return patch.apply(obj if owned else copy_json(obj), in_place=True)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException,
            TypeError, KeyError, IndexError, ValueError) as exc:
        message = str(exc) or type(exc).__name__
        raise Invalid(_REJECTED, details={"causes": [{"reason": "UnexpectedServerResponse", "message": message}]}) from None


def _merge(target: Any, patch: Any) -> Any:
    # RFC 7386 MergePatch; ``target`` is already a private copy, ``patch`` is only read.
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def apply_merge_patch(obj: Any, patch: Any, *, owned: bool = False) -> Any:
    """Apply an RFC 7386 merge patch: objects merge recursively, ``null`` deletes a key, anything
    else (arrays included) replaces. A non-object patch replaces the whole value. ``owned``: merge
    into ``obj`` itself (the caller's private copy) rather than into a deep copy of it."""
    if patch is None:
        raise BadRequest("Invalid JSON Patch")
    return _merge(obj if owned else copy_json(obj), patch)


def _json_equal(a: Any, b: Any) -> bool:
    # Python's == says 1 == 1.0 == True; JSON does not.
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def create_merge_patch(original: Any, modified: Any) -> Any:
    """The smallest merge patch that turns ``original`` into ``modified`` (``{}`` when equal)."""
    if not isinstance(original, dict) or not isinstance(modified, dict):
        return copy_json(modified)
    patch: dict[str, Any] = {}
    for key in original:
        if key not in modified:
            patch[key] = None
    for key, value in modified.items():
        if key not in original:
            patch[key] = copy_json(value)
            continue
        old = original[key]
        if _json_equal(old, value):
            continue
        if isinstance(old, dict) and isinstance(value, dict):
            patch[key] = create_merge_patch(old, value)
        else:
            patch[key] = copy_json(value)
    return patch
