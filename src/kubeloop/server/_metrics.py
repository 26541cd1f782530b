"""The API server's own metrics, served at ``GET /metrics`` as kube-apiserver serves them.

:class:`RequestMetrics` counts the resource requests the app answers, under the names and labels of
upstream's ``k8s.io/apiserver/pkg/endpoints/metrics`` (``MonitorRequest``, ``CleanScope``, ``CanonicalVerb``,
``cleanVerb``, ``cleanDryRun``), and reads the rest when scraped:

- ``apiserver_request_total{verb, dry_run, group, version, resource, subresource, scope, component, code}``;
- ``apiserver_longrunning_requests{verb, group, version, resource, subresource, scope, component}``: the
  watches open now;
- ``apiserver_storage_objects{resource}``: the objects stored per resource (``configmaps``,
  ``deployments.apps``), read from the store;
- ``kubernetes_build_info`` (the version ``/version`` reports) and the process collector's ``process_*``.

Labels as upstream's: ``verb`` is the method in capitals, GET of a collection reported as ``LIST`` (and, as
upstream, a list narrowed to one name by a ``metadata.name`` field selector as ``GET`` of that object), a
watch as ``WATCH``, a patch of ``application/apply-patch+yaml`` as ``APPLY``, a method outside upstream's
list as ``other``; ``scope`` is ``resource`` for a named object or a create, ``namespace`` for a collection
in a namespace, else ``cluster``; ``dry_run`` is empty, ``All``, or ``invalid``; ``component`` is
``apiserver``. Only requests for a resource the server serves are counted, as upstream instruments only its
REST routes: a request refused by authentication or authorization never reaches them, and a path with no
route (an unknown resource) would otherwise let any client grow the label sets without bound.

What a request costs: the app notes the request's parse (``request_info`` shares one per URL and method,
whose labels are the same for every request to it) and its status in a list, which :meth:`RequestMetrics.fold`
counts in bulk (C-level ``Counter``) when it is long or scraped; a patch or a dry run, whose labels say more
than the parse, is counted at once. The status is read from the scope where kubeloop's serving layer puts it
(:data:`STATUS_KEY`), or by a wrapper around ``send`` (:class:`ResponseObserver`) under another ASGI
server. The text is made only when ``/metrics`` is read, with ``prometheus_client`` (imported then, not at
start-up), in the format the ``Accept`` header asks for.

Not served: ``apiserver_request_duration_seconds`` and ``apiserver_response_sizes`` (clock readings and a
histogram per request: about 2% more of a create's CPU, docs/performance.md "Request metrics"), the in-flight
gauges of upstream's max-in-flight filter (kubeloop has none), the watch cache's, etcd's and admission's
metrics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Iterator, MutableMapping
from operator import itemgetter
from typing import Any

from kubeloop.api import KindRegistry
from kubeloop.server._discovery import VERSION_INFO
from kubeloop.server._http import Request, Send, header_map
from kubeloop.server._requestinfo import SCOPE_KEY, RequestInfo, parse_request_info
from kubeloop.store import Store

__all__ = ["FOLD_AT", "STATUS_KEY", "RequestMetrics", "ResponseObserver"]

# The scope key of the response status, for a server that tells it (kubeloop's serving layer sets it when it
# writes the head): the app reads it there instead of wrapping ``send``.
STATUS_KEY = "kubeloop.response_status"
# Requests noted before they are counted (RequestMetrics.answered).
FOLD_AT = 1024

# metrics.go validRequestMethods, as request_info's verbs (the HTTP method, by its _VERBS) say them.
_REPORTED = {"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE"}
_APPLY_PATCH = "application/apply-patch+yaml"
_COMPONENT = "apiserver"
_first, _second = itemgetter(0), itemgetter(1)

# (verb, dry_run, group, version, resource, subresource, scope)
_Labels = tuple[str, str, str, str, str, str, str]


class ResponseObserver:
    """An ASGI ``send`` that passes every message on and puts the response status in the scope
    (:data:`STATUS_KEY`), for a server that does not. A plain call returning the wrapped ``send``'s awaitable."""

    __slots__ = ("scope", "send")

    def __init__(self, scope: MutableMapping[str, Any], send: Send) -> None:
        self.scope = scope
        self.send = send
        scope[STATUS_KEY] = 0

    def __call__(self, message: MutableMapping[str, Any]) -> Awaitable[None]:
        if message["type"] == "http.response.start":
            self.scope[STATUS_KEY] = message["status"]
        return self.send(message)


class RequestMetrics:
    """The counts behind ``/metrics``."""

    def __init__(self, kinds: KindRegistry, store: Store) -> None:
        self._kinds = kinds
        self._store = store
        # (parse, status) of each request answered and not yet counted: the app appends a request its routing
        # parsed, neither a patch nor a dry run (whose labels the parse alone says), and fold() counts them.
        self.answered: list[tuple[RequestInfo, int]] = []
        self.requests: dict[tuple[_Labels, int], int] = {}
        self.longrunning: dict[_Labels, int] = {}
        self._registry: Any = None
        self._stored: dict[str, int] = {}

    # -- the request path -----------------------------------------------------------------------------
    def count(self, scope: MutableMapping[str, Any], status: int) -> None:
        """Count at once a request the app does not note for the next fold (:attr:`answered`): one its routing
        did not parse (a pod's eviction, a token request), a patch (APPLY or PATCH: the content type says) or
        a dry run (the query says)."""
        labels = self.labels(scope)
        if labels is not None:
            key = (labels, status)
            self.requests[key] = self.requests.get(key, 0) + 1

    def fold(self) -> None:
        """Count the requests the app noted in :attr:`answered`: grouped by parse and status in C, labelled once per
        group. A parse whose resource is no longer served (a custom resource deleted since) is not counted."""
        answered = self.answered[:]
        self.answered.clear()  # in place: the app holds its append method
        parses = list(map(_first, answered))
        ids = list(map(id, parses))
        by_id = dict(zip(ids, parses, strict=True))
        requests = self.requests
        labelled: dict[int, _Labels | None] = {}
        for (parse_id, status), count in Counter(zip(ids, map(_second, answered), strict=True)).items():
            if parse_id in labelled:
                labels = labelled[parse_id]
            else:
                labels = labelled[parse_id] = self._labels(by_id[parse_id], "")
            if labels is not None:
                key = (labels, status)
                requests[key] = requests.get(key, 0) + count

    def labels(self, scope: MutableMapping[str, Any]) -> _Labels | None:
        """The request's labels, or None when it is not for a resource this server serves."""
        cached = scope.get(SCOPE_KEY)
        method: str = scope["method"]
        if cached is not None:
            info: RequestInfo = cached[3]
        else:  # answered before the app's routing parsed it (a pod's eviction, a token request, ...)
            info = parse_request_info(method, scope["path"], Request(scope, _no_body).query)
        apply = (method == "PATCH"
                 and header_map(scope).get("content-type", "").split(";")[0].strip() == _APPLY_PATCH)  # fmt: skip
        query: bytes = scope.get("query_string", b"")
        return self._labels(info, "" if b"dryRun" not in query else _dry_run_label(scope), apply=apply)

    def _labels(self, info: RequestInfo, dry_run: str, *, apply: bool = False) -> _Labels | None:
        if not info.is_resource_request or self._kinds.get(info.api_group, info.api_version, info.resource) is None:
            return None
        # CleanScope, then CanonicalVerb and cleanVerb.
        where = "resource" if info.name or info.verb == "create" else "namespace" if info.namespace else "cluster"
        if apply:
            verb = "APPLY"
        elif info.verb == "watch":
            verb = "WATCH"
        elif info.verb in ("get", "list"):  # GET or HEAD
            verb = "GET" if where == "resource" else "LIST"
        else:
            verb = _REPORTED.get(info.verb, "other")
        return verb, dry_run, info.api_group, info.api_version, info.resource, info.subresource, where

    def watch_started(self, scope: MutableMapping[str, Any]) -> _Labels | None:
        """Count a watch as open (``apiserver_longrunning_requests``) until :meth:`watch_ended` (the watch
        handler calls both); None when ``scope`` is no watch of a served resource."""
        labels = self.labels(scope)
        if labels is None or labels[0] != "WATCH":
            return None
        self.longrunning[labels] = self.longrunning.get(labels, 0) + 1
        return labels

    def watch_ended(self, labels: _Labels) -> None:
        self.longrunning[labels] -= 1

    # -- the scrape ---------------------------------------------------------------------------------
    async def exposition(self, accept: str) -> tuple[bytes, str]:
        """The metrics as text, and their content type, in the format ``accept`` asks for."""
        from prometheus_client import CollectorRegistry, ProcessCollector
        from prometheus_client.exposition import choose_encoder

        self.fold()
        self._stored = await self._stored_objects()
        if self._registry is None:
            self._registry = CollectorRegistry(auto_describe=False)
            ProcessCollector(registry=self._registry)
            self._registry.register(_Collector(self))
        encode, content_type = choose_encoder(accept)
        return encode(self._registry), content_type

    async def _stored_objects(self) -> dict[str, int]:
        """Objects per storage prefix (one per resource, whatever versions serve it), by upstream's
        resource label: ``plural`` for the core group, else ``plural.group``."""
        counts: dict[str, int] = {}
        for info in self._kinds:
            label = f"{info.plural}.{info.group}" if info.group else info.plural
            if label not in counts:
                result = await self._store.range(f"/registry/{info.group or 'core'}/{info.plural}/", limit=1)
                counts[label] = result.count
        return counts

    @property
    def stored(self) -> dict[str, int]:
        """``apiserver_storage_objects`` as the last scrape read it."""
        return self._stored


def _no_body() -> Any:
    raise RuntimeError("the metrics never read a request's body")


def _dry_run_label(scope: MutableMapping[str, Any]) -> str:
    """cleanDryRun: the sorted distinct values when every one is ``All`` (ValidateDryRun), else ``invalid``."""
    values = Request(scope, _no_body).query.get("dryRun") or []
    if any(value != "All" for value in values):
        return "invalid"
    return ",".join(sorted(set(values)))


class _Collector:
    """What :class:`RequestMetrics` counted, as ``prometheus_client`` metric families."""

    def __init__(self, metrics: RequestMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        m = self._metrics
        names = ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"]
        total = CounterMetricFamily(
            "apiserver_request", "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.", labels=[*names, "code"])
        for (labels, status), count in sorted(m.requests.items()):
            total.add_metric([*labels, _COMPONENT, str(status)], count)
        yield total
        longrunning = GaugeMetricFamily(
            "apiserver_longrunning_requests", "Gauge of all active long-running apiserver requests broken out by "
            "verb, group, version, resource, scope and component. Not all requests are tracked this way.",
            labels=[n for n in names if n != "dry_run"])
        for labels, count in sorted(m.longrunning.items()):  # a watch's dry_run is always empty
            longrunning.add_metric([labels[0], *labels[2:], _COMPONENT], count)
        yield longrunning
        stored = GaugeMetricFamily(
            "apiserver_storage_objects", "Number of stored objects at the time of last check split by kind. In "
            "case of a fetching error, the value will be -1.", labels=["resource"])
        for resource, count in sorted(m.stored.items()):
            stored.add_metric([resource], count)
        yield stored
        build = GaugeMetricFamily(
            "kubernetes_build_info", "A metric with a constant '1' value labeled by major, minor, git version, "
            "git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, "
            "and platform on which it is running.",
            labels=["build_date", "compiler", "git_commit", "git_tree_state", "git_version", "go_version", "major",
                    "minor", "platform"])  # fmt: skip
        v = VERSION_INFO
        build.add_metric([v["buildDate"], v["compiler"], v["gitCommit"], v["gitTreeState"], v["gitVersion"],
                          v["goVersion"], v["major"], v["minor"], v["platform"]], 1)  # fmt: skip
        yield build
