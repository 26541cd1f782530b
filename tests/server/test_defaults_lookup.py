"""``apply_defaults`` runs exactly the defaulter of the object's (group, kind), for every built-in kind,
and none for a kind of the same name in another group (the kind-name test in front of the lookup)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from kubeloop.api import KindRegistry
from kubeloop.server._defaults import _DEFAULTERS, apply_defaults


def _body() -> dict[str, Any]:
    return {"metadata": {"name": "x"}, "spec": {"template": {"spec": {"containers": [{"image": "nginx"}]}}}}


def test_each_built_in_kind_gets_its_own_defaulter_and_no_other() -> None:
    defaulted = set()
    for info in KindRegistry():
        obj, expected = _body(), _body()
        defaulter = _DEFAULTERS.get((info.group, info.kind))
        if defaulter is not None:
            defaulter(expected)
            defaulted.add((info.group, info.kind))
        apply_defaults(info, obj)
        assert obj == expected, info.kind
    assert defaulted == set(_DEFAULTERS)


def test_a_same_named_kind_in_another_group_is_not_defaulted() -> None:
    for info in KindRegistry():
        if (info.group, info.kind) in _DEFAULTERS:
            for other in (replace(info, group="example.com"), replace(info, group="example.com", custom=True)):
                obj = _body()
                apply_defaults(other, obj)
                assert obj == _body(), other
    pod = KindRegistry().by_kind("", "Pod")
    assert pod is not None
    obj = _body()
    apply_defaults(replace(pod, custom=True), obj)
    assert obj == _body()
    untouched = copy.deepcopy(obj)
    apply_defaults(pod, obj)
    assert obj != untouched  # the built-in Pod itself is defaulted
