"""Which admission webhooks a request calls: the stored configurations, their rules and selectors.

:class:`WebhookSource` keeps the webhooks of one configuration kind (Validating or Mutating) current with
the store (:class:`~kubeloop.server._prefix_changes.PrefixObjects`: a request sees every configuration
committed before it), in upstream's order: configurations sorted by name, then each configuration's
webhooks in order (k8s.io/apiserver ``pkg/admission/configuration``: ``sort.Sort(...ByName)``).

Matching is upstream's ``ShouldCallHook`` (``pkg/admission/plugin/webhook/generic/webhook.go``), in its
order: namespaceSelector, objectSelector, rules (with matchPolicy), matchConditions:

- **rules** (``predicates/rules/rules.go``): operation (``*`` or equal), apiGroups and apiVersions (``*``
  or equal), resources (``*`` is every resource without a subresource, ``x/*`` every subresource of
  x, ``*/s`` subresource s of every resource, ``*/*`` everything), scope (``Cluster``: a request without a
  namespace or for a Namespace; ``Namespaced``: a namespaced request that is not for a Namespace; ``*``).
  With ``matchPolicy: Equivalent`` a request that matches no rule as it is also matches when another
  version kubeloop serves of the same group and resource does (a custom resource's other versions); the
  webhook then gets the object at that version (conversion None).
- **namespaceSelector** (``predicates/namespace/matcher.go``): a cluster-scoped object that is not a
  Namespace always matches; a Namespace's CREATE or UPDATE is judged on the object's own labels, anything
  else on the stored namespace's (a missing namespace is 404).
- **objectSelector** (``predicates/object/matcher.go``): the new object's labels or the old one's.

Configurations of admission itself (webhook configurations, admission policies and their bindings) are
never sent to webhooks (``IsExemptAdmissionConfigurationResource``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kubeloop.api import KindRegistry, LabelSelector, ResourceInfo, label_selector_from_dict, not_found
from kubeloop.server._admission import AdmissionAttributes
from kubeloop.server._prefix_changes import PrefixObjects
from kubeloop.server._state import namespace_key
from kubeloop.store import KeyValue, Store

__all__ = ["Webhook", "WebhookSource", "exempt", "matching_resource", "namespace_matches", "object_matches"]

GROUP = "admissionregistration.k8s.io"
_EXEMPT = frozenset({"validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                     "validatingadmissionpolicies", "validatingadmissionpolicybindings",
                     "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"})


def exempt(resource: ResourceInfo) -> bool:
    return resource.group == GROUP and resource.plural in _EXEMPT


def _selector(value: Any) -> LabelSelector | None:
    """A webhook's selector, or ``None`` for the empty one (matches everything, nothing to read)."""
    if not isinstance(value, Mapping) or (not value.get("matchLabels") and not value.get("matchExpressions")):
        return None
    return label_selector_from_dict(value)


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a stored configuration, with what matching needs decoded once."""

    configuration: str
    index: int
    name: str
    spec: Mapping[str, Any]
    rules: tuple[Mapping[str, Any], ...]
    namespace_selector: LabelSelector | None
    object_selector: LabelSelector | None
    failure_policy: str
    match_policy: str
    side_effects: str
    timeout_seconds: int
    reinvoke_if_needed: bool
    conditions: tuple[Mapping[str, Any], ...]

    @property
    def reads_authorizer(self) -> bool:
        """Whether a matchCondition reads ``authorizer`` (only then is one made for the call)."""
        from kubeloop.api._cel_admission import uses_authorizer  # the CEL engine: only with conditions

        return any(uses_authorizer(str(c.get("expression") or "")) for c in self.conditions)

    @property
    def key(self) -> tuple[str, int]:
        """Which webhook this is across calls of one request (upstream's webhook UID)."""
        return self.configuration, self.index

    @classmethod
    def parse(cls, configuration: str, index: int, hook: Mapping[str, Any]) -> Webhook:
        timeout = hook.get("timeoutSeconds")
        return cls(
            configuration, index, str(hook.get("name") or ""), hook,
            tuple(r for r in hook.get("rules") or () if isinstance(r, Mapping)),
            _selector(hook.get("namespaceSelector")), _selector(hook.get("objectSelector")),
            str(hook.get("failurePolicy") or "Fail"), str(hook.get("matchPolicy") or "Equivalent"),
            str(hook.get("sideEffects") or ""), timeout if isinstance(timeout, int) else 10,
            hook.get("reinvocationPolicy") == "IfNeeded",
            tuple(c for c in hook.get("matchConditions") or () if isinstance(c, Mapping)),
        )  # fmt: skip


def _parse(name: str, kv: KeyValue) -> tuple[Webhook, ...]:
    try:
        obj = orjson.loads(kv.value)
        hooks = obj.get("webhooks") or []
        return tuple(Webhook.parse(name, i, h) for i, h in enumerate(hooks) if isinstance(h, Mapping))
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return ()


class WebhookSource:
    """The webhooks of one configuration kind, in call order, current at every :meth:`current`."""

    def __init__(self, store: Store, plural: str) -> None:
        self._configurations = PrefixObjects(store, f"/registry/{GROUP}/{plural}/", _parse)
        self._ordered: tuple[Webhook, ...] = ()
        self._generation = -1  # the configurations' generation _ordered was made from

    def current(self) -> tuple[Webhook, ...] | None:
        """The webhooks now, or ``None`` when they must be read first (:meth:`load`)."""
        configurations = self._configurations.current()
        if configurations is None:
            return None
        return self._order(configurations)

    def configured(self) -> bool:
        """Whether a webhook may be stored: ``False`` only when the webhooks are known and there are none."""
        hooks = self.current()
        return hooks is None or bool(hooks)

    async def load(self) -> tuple[Webhook, ...]:
        return self._order(await self._configurations.load())

    def _order(self, configurations: dict[str, tuple[Webhook, ...]]) -> tuple[Webhook, ...]:
        generation = self._configurations.generation
        if generation != self._generation:
            self._ordered = tuple(h for name in sorted(configurations) for h in configurations[name])
            self._generation = generation
        return self._ordered


def _any(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _resource_matches(resources: Any, plural: str, subresource: str) -> bool:
    for entry in resources if isinstance(resources, list) else ():
        res, _, sub = str(entry).partition("/")
        if (res == "*" or res == plural) and (sub == "*" or sub == subresource):
            return True
    return False


def _rule_matches(rule: Mapping[str, Any], attributes: AdmissionAttributes, info: ResourceInfo) -> bool:
    scope = rule.get("scope") or "*"
    is_namespace = info.group == "" and info.plural == "namespaces"
    if scope == "Namespaced" and (is_namespace or not attributes.namespace):
        return False
    if scope == "Cluster" and not (is_namespace or not attributes.namespace):
        return False
    if scope not in ("*", "Namespaced", "Cluster"):
        return False
    return (_any(rule.get("operations"), attributes.operation) and _any(rule.get("apiGroups"), info.group)
            and _any(rule.get("apiVersions"), info.version)
            and _resource_matches(rule.get("resources"), info.plural, attributes.subresource))


def matching_resource(hook: Webhook, attributes: AdmissionAttributes, kinds: KindRegistry) -> ResourceInfo | None:
    """The resource (version) the webhook is called for: the request's own when a rule matches it, else,
    with matchPolicy Equivalent, another served version of the same group and resource; ``None``: no call."""
    info = attributes.resource
    if any(_rule_matches(rule, attributes, info) for rule in hook.rules):
        return info
    if hook.match_policy != "Equivalent":
        return None
    for other in kinds:
        if other.group == info.group and other.plural == info.plural and other.version != info.version \
                and any(_rule_matches(rule, attributes, other) for rule in hook.rules):
            return other
    return None


def _labels(obj: Any) -> Mapping[str, str]:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def object_matches(hook: Webhook, obj: Any, old: Any) -> bool:
    selector = hook.object_selector
    if selector is None:
        return True
    return (obj is not None and selector.matches(_labels(obj))) or (old is not None and selector.matches(_labels(old)))


async def namespace_matches(hook: Webhook, attributes: AdmissionAttributes, obj: Any, store: Store) -> bool:
    selector = hook.namespace_selector
    info = attributes.resource
    is_namespace = info.group == "" and info.plural == "namespaces"
    if selector is None or (not attributes.namespace and not is_namespace):
        return True
    if is_namespace and not attributes.subresource and attributes.operation in ("CREATE", "UPDATE"):
        return selector.matches(_labels(obj))
    name = attributes.name if is_namespace else attributes.namespace
    kv = await store.get(namespace_key(name))
    if kv is None:
        raise not_found("namespaces", name)
    return selector.matches(_labels(orjson.loads(kv.value)))
