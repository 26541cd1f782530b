"""What RBAC PolicyRules grant: one rule at a time (:func:`rule_allows`), and compiled (:class:`Grants`).

:func:`rule_allows` is upstream's ``RuleAllows`` (k/k ``pkg/apis/rbac/v1/evaluation_helpers.go``):
verb, API group and resource equal or ``*``; the resource is matched as ``resource/subresource`` and
``*/subresource`` matches any resource's subresource; a rule with ``resourceNames`` matches only
requests that name one of them; non-resource paths match ``nonResourceURLs`` exactly or, for one ending
in ``*``, by the prefix left once every trailing ``*`` is cut. There are no deny rules.

:class:`Grants` is the same question answered over many rules at once, in a few dictionary lookups
instead of a walk over every rule. Contract: for any rules ``R`` and attributes ``A``,
``Grants.of(R).allows(A) == any(rule_allows(r, A) for r in R)`` (a property test holds it to that).
How: every rule is expanded into its (verb, API group, resource) triples, each a key of a nested
dictionary (verb, then group, then resource) whose value is the names it is limited to (``None``: any
name; names of several rules on one key are united, since any one rule suffices). A request looks up
its own verb, group and resource and the ``*`` of each (and ``*/subresource``): at most 2 x 2 x 3
lookups, usually three or four, whose answer (any name, or which names) is then remembered per
(verb, group, resource, subresource): a question asked before costs one lookup. Non-resource paths go
to a set of exact paths and a list of prefixes per verb, answers remembered per (verb, path). A rule
whose expansion would pass ``EXPANSION_LIMIT`` entries ((verb, group, resource) triples plus (verb,
path) pairs) stays a rule and is asked with :func:`rule_allows`, so a pathological role cannot blow up
memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubeloop.server._authz import Attributes

__all__ = ["ANSWER_LIMIT", "EXPANSION_LIMIT", "Grants", "policy_rules", "rule_allows", "rule_strings"]

Obj = Mapping[str, Any]

EXPANSION_LIMIT = 512
ANSWER_LIMIT = 128
_ANY_NAME = None


def rule_strings(rule: Obj, key: str) -> Sequence[str]:
    """The strings listed under ``key`` of a PolicyRule (anything else there is ignored)."""
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def policy_rules(role: Obj) -> list[Obj]:
    """The PolicyRules of a Role or ClusterRole (entries that are not objects are ignored)."""
    rules = role.get("rules")
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else []


def rule_allows(rule: Obj, attributes: Attributes) -> bool:
    """Whether one PolicyRule grants ``attributes`` (``RuleAllows``)."""
    # Membership in the raw lists: an entry that is not a string never equals a verb, group or resource.
    verbs = rule.get("verbs")
    if not isinstance(verbs, list) or ("*" not in verbs and attributes.verb not in verbs):
        return False
    if not attributes.resource_request:
        path = attributes.path
        for url in rule_strings(rule, "nonResourceURLs"):
            # Every trailing "*" goes (Go's strings.TrimRight): "/api/**" is the prefix "/api/".
            if url == "*" or url == path or (url.endswith("*") and path.startswith(url.rstrip("*"))):
                return True
        return False
    groups = rule.get("apiGroups")
    if not isinstance(groups, list) or ("*" not in groups and attributes.api_group not in groups):
        return False
    resources = rule.get("resources")
    sub = attributes.subresource
    wanted = (f"{attributes.resource}/{sub}", f"*/{sub}") if sub else (attributes.resource,)
    if not isinstance(resources, list) or ("*" not in resources and not any(w in resources for w in wanted)):
        return False
    names = rule_strings(rule, "resourceNames")
    return not names or attributes.name in names


# verb -> API group -> resource (``resource/subresource`` as written in the rule) -> names or any name.
_ResourceIndex = dict[str, dict[str, dict[str, frozenset[str] | None]]]


class Grants:
    """The rules of one subject in one scope, compiled for lookup (see the module contract). The rules
    never change once built; answers are remembered per (verb, group, resource, subresource) or
    (verb, path), at most ``ANSWER_LIMIT`` of them (then forgotten at once)."""

    __slots__ = ("_answers", "_exact_urls", "_prefixes", "_resources", "_rest")

    def __init__(
        self,
        resources: _ResourceIndex,
        exact_urls: dict[str, frozenset[str]],
        prefixes: dict[str, tuple[str, ...]],
        rest: tuple[Obj, ...],
    ) -> None:
        self._resources = resources
        self._exact_urls = exact_urls
        self._prefixes = prefixes
        self._rest = rest
        # (verb, group, resource, subresource) or (verb, path) -> True (any name) or the names allowed:
        # what the lookups found, kept so that a repeated question costs one lookup.
        self._answers: dict[tuple[str, ...], frozenset[str] | bool] = {}

    @classmethod
    def of(cls, rules: Iterable[Obj], *, expansion_limit: int = EXPANSION_LIMIT) -> Grants:
        """``rules`` compiled; a rule of more than ``expansion_limit`` (verb, group, resource) triples
        and (verb, path) pairs is kept as it is."""
        resources: _ResourceIndex = {}
        exact: dict[str, set[str]] = {}
        prefixes: dict[str, list[str]] = {}
        rest: list[Obj] = []
        for rule in rules:
            if not isinstance(rule.get("verbs"), list):
                continue  # grants nothing (RuleAllows fails on the verbs first)
            verbs = rule_strings(rule, "verbs")
            groups = rule_strings(rule, "apiGroups")
            kinds = rule_strings(rule, "resources")
            urls = rule_strings(rule, "nonResourceURLs")
            if len(verbs) * (len(groups) * len(kinds) + len(urls)) > expansion_limit:
                rest.append(rule)
                continue
            names = rule_strings(rule, "resourceNames")
            limit = frozenset(names) if names else _ANY_NAME
            for verb in verbs:
                for group in groups:
                    by_resource = resources.setdefault(verb, {}).setdefault(group, {})
                    for resource in kinds:
                        if resource not in by_resource:
                            by_resource[resource] = limit
                        else:
                            held = by_resource[resource]
                            by_resource[resource] = _ANY_NAME if held is None or limit is None else held | limit
            for url in urls:
                for verb in verbs:
                    if url.endswith("*"):  # less every trailing "*" ("*" alone: every path), as rule_allows
                        prefixes.setdefault(verb, []).append(url.rstrip("*"))
                    else:
                        exact.setdefault(verb, set()).add(url)
        return cls(
            resources,
            {verb: frozenset(paths) for verb, paths in exact.items()},
            {verb: tuple(dict.fromkeys(found)) for verb, found in prefixes.items()},
            tuple(rest),
        )

    def allows(self, attributes: Attributes) -> bool:
        if attributes.resource_request:
            key: tuple[str, ...] = (attributes.verb, attributes.api_group, attributes.resource, attributes.subresource)
        else:
            key = (attributes.verb, attributes.path)
        names = self._answers.get(key)
        if names is None:
            names = self._names(key) if attributes.resource_request else self._path_allowed(key[0], key[1])
            if len(self._answers) >= ANSWER_LIMIT:
                self._answers.clear()
            self._answers[key] = names
        if names is True or (names and attributes.name in names):
            return True
        return any(rule_allows(rule, attributes) for rule in self._rest) if self._rest else False

    def _names(self, key: tuple[str, ...]) -> frozenset[str] | bool:
        """The names the expanded rules allow for (verb, group, resource, subresource): ``True`` for
        any name, else the names listed (empty: none)."""
        verb, group, resource, sub = key
        wanted = (f"{resource}/{sub}", f"*/{sub}", "*") if sub else (resource, "*")
        found: frozenset[str] = frozenset()
        for by_group in (self._resources.get(verb), self._resources.get("*") if verb != "*" else None):
            if by_group is None:
                continue
            for by_resource in (by_group.get(group), by_group.get("*") if group != "*" else None):
                if by_resource is None:
                    continue
                for name in wanted:
                    if name in by_resource:
                        names = by_resource[name]
                        if names is None:
                            return True
                        found |= names
        return found

    def _path_allowed(self, verb: str, path: str) -> frozenset[str] | bool:
        for key in (verb, "*") if verb != "*" else (verb,):
            paths = self._exact_urls.get(key)
            if paths is not None and path in paths:
                return True
            for prefix in self._prefixes.get(key, ()):
                if path.startswith(prefix):
                    return True
        return frozenset()
