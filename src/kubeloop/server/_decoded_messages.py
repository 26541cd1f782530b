"""An update's validation messages as upstream prints them: from the decoded object, whose emptied maps and
lists are empty, not nil.

Upstream validates the object it decoded from the request (``sigs.k8s.io/json``): a ``{}`` or ``[]`` there is
an empty, non-nil Go map or slice, which ``field.Error`` prints with ``%#v`` as ``map[string]string{}`` or
``[]string{}``. Its comparisons of that object with the stored one are semantic (apimachinery
``equality.Semantic.DeepEqual``, used by ``ValidateImmutableField`` and the strategies' generation checks:
an empty map equals a nil one). kubeloop validates an update in its stored form instead (the empties nil:
:func:`kubeloop.api._go_empty.store_empty_collections`), so those comparisons hold as plain dict equality,
and its message would print ``map[string]string(nil)``.

:func:`decoded_errors` runs only once that validation has failed: it validates again with the empties put
back as sent, and takes each error's text from that run, matched by type and field, in order. An error only
the second run finds (an immutable field seeing ``{}`` against nil, which upstream's semantic comparison
does not report) is left out; an error it lacks keeps the first run's text. The object is left in its
stored form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._go_empty import Empty

__all__ = ["decoded_errors"]


def decoded_errors(errors: list[FieldError], found: list[Empty],
                   revalidate: Callable[[], list[FieldError]]) -> list[FieldError]:
    """``errors`` (the stored form's) with each text taken from ``revalidate()`` run on the object as decoded."""
    restored: list[tuple[dict[str, Any], str, Any]] = []
    for parent, key, value, _ in found:
        if not value and parent.get(key) is None:  # stored as nil: not written, or null
            restored.append((parent, key, parent.get(key, _ABSENT)))
            parent[key] = value
    if not restored:
        return errors
    try:
        again = revalidate()
    finally:
        for parent, key, before in restored:
            if before is _ABSENT:
                parent.pop(key, None)
            else:
                parent[key] = before
    pool: dict[tuple[str, str], list[FieldError]] = {}
    for error in again:
        pool.setdefault((error.type, error.field), []).append(error)
    out: list[FieldError] = []
    for error in errors:
        matches = pool.get((error.type, error.field))
        out.append(matches.pop(0) if matches else error)
    return out


_ABSENT = object()
