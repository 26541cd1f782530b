"""Whether an ``openAPIV3Schema`` holds any ``x-kubernetes-validations`` rule, without loading CEL.

The CEL engine (the ``cel`` package) takes about 130 ms to import: its package imports its own
command-line interface and prompt_toolkit. Most servers never see a CRD with rules, so the modules that
compile and run rules (:mod:`kubeloop.api._cel_crd`, :mod:`kubeloop.api._cel_validate`) are imported
only once :func:`has_validation_rules` finds one, keeping ``kubeloop up``'s start-up (issue #2
measures it) free of that import.
"""

from __future__ import annotations

from typing import Any

__all__ = ["has_validation_rules"]

_RULES = "x-kubernetes-validations"


def has_validation_rules(schema: Any) -> bool:
    """Whether ``schema`` or any schema nested in it (properties, items, additionalProperties, allOf,
    anyOf, oneOf, not, ...: every map below it) has a non-empty ``x-kubernetes-validations`` list."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if node.get(_RULES):
                return True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False
