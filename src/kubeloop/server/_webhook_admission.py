"""The MutatingAdmissionWebhook and ValidatingAdmissionWebhook admission plugins.

As upstream (k8s.io/apiserver ``pkg/admission/plugin/webhook/mutating/dispatcher.go`` and
``validating/dispatcher.go``), for every operation on every resource but the admission configurations
themselves (:func:`~kubeloop.server._webhook_matching.exempt`), subresources and custom resources
included:

- :class:`MutatingWebhooks` (a mutating plugin, after the built-in mutating ones) calls each matching
  mutating webhook in order (:mod:`kubeloop.server._webhook_matching`), one after the other, and applies
  each JSONPatch answer to the object before the next call. When a webhook changed the object, the
  webhooks with ``reinvocationPolicy: IfNeeded`` called before it are called once more, in order, after
  the first round (the reinvocation round changes nothing more).
- :class:`ValidatingWebhooks` (a validating plugin, after validation) calls the matching validating
  webhooks concurrently and waits for all; when some refuse or fail, the first failure to arrive is the
  answer and the others are logged, as upstream's dispatcher takes the first error from its channel.
- A webhook's ``warnings`` become the request's ``Warning`` headers; a denial is the webhook's Status
  (:func:`~kubeloop.server._webhook_review.rejection`).
- A call that fails (connection, timeout, a bad answer, a matchCondition error) is skipped under
  ``failurePolicy: Ignore`` (and logged) and refuses the request under ``Fail`` (500).
- A dry run reaching a webhook whose ``sideEffects`` is not None/NoneOnDryRun is 400.

Both read the stored configurations through a :class:`~kubeloop.server._webhook_matching.WebhookSource`,
current at each request; with none stored, a write costs a poll of the store's revision.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable
from typing import Any

import orjson

from kubeloop.api import ApiError, ResourceInfo
from kubeloop.server._admission import (
    AdmissionAttributes,
    MutatingPlugin,
    Operation,
    ValidatingPlugin,
    forget_plans,
)
from kubeloop.server._admission_authorizer import request_authorizer
from kubeloop.server._scale import set_path
from kubeloop.server._state import ServerState
from kubeloop.server._webhook_calls import CallFailed, call_webhook
from kubeloop.server._webhook_matching import (
    Webhook,
    WebhookSource,
    exempt,
    matching_resource,
    namespace_matches,
    object_matches,
)
from kubeloop.server._webhook_review import (
    call_failed,
    dry_run_unsupported,
    internal,
    object_at,
    rejection,
    review_for,
)

__all__ = ["MutatingWebhooks", "ValidatingWebhooks"]

log = logging.getLogger("kubeloop.server.webhooks")

_NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")


def _review_version(hook: Webhook) -> str:
    for version in hook.spec.get("admissionReviewVersions") or ():
        if version in ("v1", "v1beta1"):
            return str(version)
    return "v1"


class _Dispatcher(ABC):
    def __init__(self, state: ServerState, plural: str) -> None:
        self._state = state
        self.source = WebhookSource(state.store, plural)

    def handles(self, operation: Operation, resource: ResourceInfo) -> bool:
        # Planned out while no configuration of this kind is stored: the admission chain plans again when
        # one is written (AdmissionChain.follow_configurations), so a write without webhooks pays nothing.
        return not exempt(resource) and self.source.configured()

    def _dispatch(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
                  ) -> Awaitable[None] | None:
        """The plugin's step: its webhooks, read first if they must be; nothing to await without any."""
        hooks = self.source.current()
        if hooks is None:
            return self._load_and_run(attributes, obj, old)
        return self._run(hooks, attributes, obj, old) if hooks else None

    async def _load_and_run(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None,
                            old: dict[str, Any] | None) -> None:
        hooks = await self.source.load()
        if not hooks:  # none stored: the chain may now plan this plugin out
            forget_plans(self._state.admission)
            return
        await self._run(hooks, attributes, obj, old)

    @abstractmethod
    async def _run(self, hooks: tuple[Webhook, ...], attributes: AdmissionAttributes, obj: dict[str, Any] | None,
                   old: dict[str, Any] | None) -> None:
        """Call the matching ``hooks``: in order (mutating) or all at once (validating)."""

    async def _matches(self, hook: Webhook, attributes: AdmissionAttributes, obj: Any, old: Any
                       ) -> tuple[ResourceInfo, dict[str, Any]] | None:
        """The matched resource and the review's request when ``hook`` is to be called, else ``None``;
        raises for a dry run it cannot take, and :class:`CallFailed` for a matchCondition error."""
        matched = matching_resource(hook, attributes, self._state.kinds)
        if matched is None or not await namespace_matches(hook, attributes, obj, self._state.store) \
                or not object_matches(hook, obj, old):
            return None
        review = review_for(self._state.new_uid(), attributes, matched, object_at(obj, attributes, matched),
                            object_at(old, attributes, matched), _review_version(hook))
        if hook.conditions:
            from kubeloop.api._webhook_conditions import ConditionError, conditions_match  # CEL, when used

            request = review["request"]
            context = {k: v for k, v in request.items() if k not in ("object", "oldObject")}
            authorizer, functions = None, None
            if hook.reads_authorizer:
                authorizer, functions = await request_authorizer(self._state, attributes.user, context)
            try:
                if not conditions_match(hook.conditions, request["object"], request["oldObject"], context,
                                        authorizer=authorizer, functions=functions):
                    return None
            except ConditionError as exc:
                if hook.failure_policy == "Ignore":
                    return None
                raise CallFailed(str(exc)) from None
        if attributes.dry_run and hook.side_effects not in _NO_SIDE_EFFECTS:
            raise dry_run_unsupported(hook.name)
        return matched, review

    async def _call(self, hook: Webhook, attributes: AdmissionAttributes, obj: Any, old: Any, *,
                    mutating: bool) -> tuple[ResourceInfo, dict[str, Any], dict[str, Any]] | None:
        """Match and call ``hook``: the matched resource, the review sent and the allowed answer; ``None`` when
        not called or failed open. Raises the denial, or the failure under ``failurePolicy: Fail``."""
        try:
            found = await self._matches(hook, attributes, obj, old)
            if found is None:
                return None
            matched, review = found
            response = await call_webhook(hook.spec.get("clientConfig") or {}, review,
                                          timeout=hook.timeout_seconds, mutating=mutating)
        except CallFailed as exc:
            if hook.failure_policy == "Ignore":
                log.warning("failed calling webhook, failing open %s: %s", hook.name, exc)
                return None
            log.warning("failed calling webhook, failing closed %s: %s", hook.name, exc)
            raise call_failed(hook.name, str(exc)) from None
        warnings = attributes.warnings
        for text in response.get("warnings") or ():
            if warnings is not None and isinstance(text, str) and text not in warnings:
                warnings.append(text)
        if response.get("allowed") is not True:
            raise rejection(hook.name, response.get("status"))
        return matched, review, response


class MutatingWebhooks(_Dispatcher, MutatingPlugin):
    """MutatingAdmissionWebhook: see the module contract."""

    def __init__(self, state: ServerState) -> None:
        super().__init__(state, "mutatingwebhookconfigurations")

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
               ) -> Awaitable[None] | None:
        return self._dispatch(attributes, obj, old)

    async def _run(self, hooks: tuple[Webhook, ...], attributes: AdmissionAttributes, obj: dict[str, Any] | None,
                   old: dict[str, Any] | None) -> None:
        invoked: list[tuple[str, int]] = []  # reinvocable webhooks called since the last change
        again: set[tuple[str, int]] = set()
        for hook in hooks:
            called, changed = await self._mutate_once(hook, attributes, obj, old)
            if changed:
                again.update(invoked)
                invoked.clear()
            if called and hook.reinvoke_if_needed:
                invoked.append(hook.key)
        for hook in hooks:  # the reinvocation round: only webhooks a later change concerns
            if hook.key in again:
                await self._mutate_once(hook, attributes, obj, old)

    async def _mutate_once(self, hook: Webhook, attributes: AdmissionAttributes, obj: dict[str, Any] | None,
                           old: dict[str, Any] | None) -> tuple[bool, bool]:
        """Call ``hook`` and apply its patch to ``obj`` in place: whether it was called, and whether the
        object changed."""
        called = await self._call(hook, attributes, obj, old, mutating=True)
        if called is None:
            return False, False
        return True, self._apply(hook, attributes, obj, called)

    def _apply(self, hook: Webhook, attributes: AdmissionAttributes, obj: dict[str, Any] | None,
               called: tuple[ResourceInfo, dict[str, Any], dict[str, Any]]) -> bool:
        matched, review, response = called
        patch = response.get("patch")
        if not patch:
            return False
        if response.get("patchType") != "JSONPatch":
            error = CallFailed(f'unsupported patch type "{response.get("patchType")}"')
            if hook.failure_policy == "Ignore":
                log.warning("failed calling webhook, failing open %s: %s", hook.name, error)
                return False
            raise call_failed(hook.name, str(error))
        try:
            operations = orjson.loads(base64.b64decode(str(patch), validate=True))
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise internal(str(exc)) from None
        if not operations:
            return False
        if obj is None:
            raise internal(f'admission webhook "{hook.name}" attempted to modify the object, which is not '
                           "supported for this operation")
        import jsonpatch

        sent = review["request"]["object"]
        try:
            patched = jsonpatch.JsonPatch(operations).apply(sent)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError) as exc:
            raise internal(str(exc)) from None
        if not isinstance(patched, dict) or patched == sent:
            return False
        paths = attributes.resource.scale
        if sent is not obj and sent.get("kind") == "Scale" and paths is not None:  # a /scale request's Scale
            replicas = (patched.get("spec") or {}).get("replicas")
            set_path(obj, paths.spec_replicas, replicas)
            return True
        if matched is not attributes.resource and patched.get("apiVersion") == matched.api_version:
            patched["apiVersion"] = attributes.resource.api_version  # back to the request's version
        obj.clear()
        obj.update(patched)
        return True


class ValidatingWebhooks(_Dispatcher, ValidatingPlugin):
    """ValidatingAdmissionWebhook: see the module contract."""

    def __init__(self, state: ServerState) -> None:
        super().__init__(state, "validatingwebhookconfigurations")

    def validate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
                 ) -> Awaitable[None] | None:
        return self._dispatch(attributes, obj, old)

    async def _run(self, hooks: tuple[Webhook, ...], attributes: AdmissionAttributes, obj: dict[str, Any] | None,
                   old: dict[str, Any] | None) -> None:
        candidates = [h for h in hooks if matching_resource(h, attributes, self._state.kinds) is not None]
        if not candidates:
            return
        # validating/dispatcher.go: every call sends its failure to one channel as it ends, the dispatcher
        # waits for all, answers with the first failure received and logs the others (utilruntime.HandleError).
        failures: list[ApiError] = []

        async def call(hook: Webhook) -> None:
            try:
                await self._call(hook, attributes, obj, old, mutating=False)
            except ApiError as error:
                log.info('rejected by webhook "%s": %s', hook.name, error.message)
                failures.append(error)

        outcomes = await asyncio.gather(*(call(h) for h in candidates), return_exceptions=True)
        for outcome in outcomes:  # a bug, not an answer: raised once every call has ended
            if isinstance(outcome, BaseException):
                raise outcome
        if failures:
            for extra in failures[1:]:
                log.info("admission webhook refused the request too: %s", extra)
            raise failures[0]
