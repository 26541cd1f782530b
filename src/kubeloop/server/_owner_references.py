"""Duplicate ``metadata.ownerReferences`` on writes: dropped with a warning, or refused by apply.

Upstream's handlers (apiserver ``pkg/endpoints/handlers/rest.go`` ``dedupOwnerReferencesAndAddWarning``)
keep the first of owner references that are equal entry for entry (a second entry with the same uid
but another field different is kept), and add one ``Warning`` naming the uid of every entry dropped:

- create and update (PUT, ``/status`` too) deduplicate the decoded body, before mutating admission
  (:data:`DUPLICATES`), and again after it (:data:`DUPLICATES_AFTER_ADMISSION`), in case a plugin added some;
- a patch (JSON, merge, strategic, apply, an apply that creates too) only after mutating admission.

The object stored, and answered, is the deduplicated one. Server-side apply also types the applied
configuration first, where ``ownerReferences`` is a list map keyed by ``uid``: an applied
configuration that names one uid twice fails there, as every repeated key of a keyed list does
(``server/_patching``); duplicates already stored (from before 1.20) are let through there
(``typed.AllowDuplicates`` on the live object).

Callers test ``"ownerReferences" in meta`` first: a write without owners costs that one lookup.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DUPLICATES",
    "DUPLICATES_AFTER_ADMISSION",
    "dedup_owner_references",
]

_ADVICE = ("API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; "
           "please fix your requests; duplicate UID(s) observed: ")
# rest.go DuplicateOwnerReferencesWarningFormat and DuplicateOwnerReferencesAfterMutatingAdmissionWarningFormat.
DUPLICATES = ".metadata.ownerReferences contains duplicate entries; " + _ADVICE
DUPLICATES_AFTER_ADMISSION = ".metadata.ownerReferences contains duplicate entries after mutating admission happens; " + _ADVICE


def _identity(ref: dict[str, Any]) -> tuple[Any, ...]:
    """What ``apiequality.Semantic.DeepEqual`` compares of two decoded ``OwnerReference`` structs: the
    four strings (absent is ``""``) and the two optional booleans (absent and null are both nil)."""
    return (ref.get("uid") or "", ref.get("apiVersion") or "", ref.get("kind") or "", ref.get("name") or "",
            ref.get("controller"), ref.get("blockOwnerDeletion"))


def dedup_owner_references(meta: dict[str, Any], warnings: list[str], *, after_admission: bool) -> None:
    """Drop every owner reference equal to an earlier one from ``meta`` (in place) and, if any went,
    add the warning naming their uids (once per request: upstream's recorder keeps one of each text)."""
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list) or len(refs) < 2:
        return
    kept: list[Any] = []
    seen: set[tuple[Any, ...]] = set()
    dropped: list[str] = []
    for ref in refs:
        if not isinstance(ref, dict):  # ill-typed: validation answers for it
            kept.append(ref)
            continue
        identity = _identity(ref)
        if identity in seen:
            dropped.append(str(identity[0]))
        else:
            seen.add(identity)
            kept.append(ref)
    if not dropped:
        return
    meta["ownerReferences"] = kept
    text = (DUPLICATES_AFTER_ADMISSION if after_admission else DUPLICATES) + ", ".join(dropped)
    if text not in warnings:
        warnings.append(text)
