"""The Kubernetes CEL libraries a CRD's ``x-kubernetes-validations`` rules may call, as plain functions.

k8s.io/apiserver ``pkg/cel/library`` and cel-go's ``ext`` package give CRD rules (1.32) more than
the CEL standard library: the strings extension (``charAt``, ``indexOf``, ``lastIndexOf``,
``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``, ``trim``, ``join``,
``reverse``, ``format``), the lists library (``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``,
``lastIndexOf``), regex (``find``, ``findAll``), ``url``, ``quantity``, ``ip`` and ``cidr``, cel-go's sets
(``sets.contains``, ``sets.equivalent``, ``sets.intersects``) and the format library
(``format.dns1123Label().validate(self)``, ``format.named("uuid")``): what ``environment/base.go``
enables for a new expression in 1.32 (compatibility version 1.31).

:data:`FUNCTIONS` maps each name to one Python callable; the engine (:mod:`kubeloop.api._cel_validate`)
registers them on every evaluation. They live by family in :mod:`kubeloop.api._cel_strings`,
:mod:`kubeloop.api._cel_kinds` and :mod:`kubeloop.api._cel_extensions`. A receiver-style call
``x.f(a)`` reaches ``f(x, a)``, so one callable serves every overload of its name and dispatches on
the receiver's type, as cel-go's overload resolution does at run time.

Upstream's opaque types (``URL``, ``Quantity``, ``IP``, ``CIDR``) travel as small tagged maps
(``{"@type": "quantity", "value": <canonical text>}``): the engine cannot carry a Python object, and
a canonical value keeps ``==`` meaningful (``quantity("1Gi") == quantity("1024Mi")`` holds, as
upstream's ``Equal``). An error is a :class:`CelFunctionError` whose text is upstream's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeloop.api._cel_extensions import EXTENSION_FUNCTIONS, NAMESPACES
from kubeloop.api._cel_kinds import KIND_FUNCTIONS
from kubeloop.api._cel_opaque import TYPE_KEY, CelFunctionError, opaque_type
from kubeloop.api._cel_strings import STRING_FUNCTIONS

__all__ = ["FUNCTIONS", "NAMESPACES", "TYPE_KEY", "CelFunctionError", "opaque_type"]

FUNCTIONS: dict[str, Callable[..., Any]] = {**STRING_FUNCTIONS, **KIND_FUNCTIONS, **EXTENSION_FUNCTIONS}
# CEL's own functions are not here: size, matches, startsWith, endsWith, string, int, uint, double, bytes,
# bool, duration, timestamp, type, dyn and the macros (a Python "contains" serves only sets.contains: the
# engine keeps its own for strings).
