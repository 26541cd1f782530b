"""The compiled, per-subject RBAC decision equals the definition (every bound rule asked in turn).

Upstream's ``RuleAllows`` / ``VisitRulesFor`` (k/k ``pkg/apis/rbac/v1/evaluation_helpers.go``,
``pkg/registry/rbac/validation/rule.go``) define a decision; :func:`decide` answers from rules compiled
per subject and kept per snapshot. Over generated policies (verbs, API groups, resources with
subresources and ``*/subresource``, resourceNames, nonResourceURLs with ``*`` prefixes, every wildcard,
missing roles, malformed entries) and requests, on one shared snapshot asked many times (with caches
so small that entries are evicted and rebuilt), :func:`decide` must equal :func:`evaluate` on a fresh
snapshot, reason included.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.server._authn import User
from kubeloop.server._authz import Attributes
from kubeloop.server._authz_rbac import RbacSnapshot, allow_reason, decide, evaluate
from kubeloop.server._authz_rbac_rules import ANSWER_LIMIT, Grants, rule_allows

RBAC = "rbac.authorization.k8s.io"
VERBS = ["get", "list", "watch", "create", "update", "delete", "escalate", "*"]
GROUPS = ["", "apps", "batch", RBAC, "*"]
RESOURCES = ["pods", "configmaps", "deployments", "roles", "*", "pods/log", "pods/status", "*/status",
             "deployments/scale", "*/scale", "*/*"]
NAMES = ["a", "b", ""]
URLS = ["/healthz", "/healthz/*", "/api", "/api/*", "/apis/apps", "/apis/*", "*", "/metrics", "/version/",
        "/apis/**", "/metrics**"]
PATHS = ["/healthz", "/healthz/etcd", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/metrics",
         "/version", "/version/", "/logs/x"]
NAMESPACES = ["", "ns1", "ns2", "ns3"]
USERS = [
    User("alice", groups=("devs", "system:authenticated")),
    User("alice", groups=("system:authenticated",)),
    User("bob", groups=("ops",)),
    User("system:serviceaccount:ns1:sa", groups=("system:serviceaccounts", "system:authenticated")),
    User("system:serviceaccount:ns2:sa", groups=("system:serviceaccounts", "system:authenticated")),
    User("carol"),
]

# Mostly strings from the vocabulary; now and then something a validated object would not hold.
def _strings(vocabulary: list[str]) -> st.SearchStrategy[Any]:
    word = st.sampled_from(vocabulary)
    odd = st.sampled_from([1, None, ["get"]])
    return st.one_of(st.lists(word, max_size=4), st.lists(st.one_of(word, word, odd), max_size=4),
                     st.sampled_from([None, "get", {}]))


_rule = st.fixed_dictionaries({"verbs": _strings(VERBS)}, optional={
    "apiGroups": _strings(GROUPS), "resources": _strings(RESOURCES), "resourceNames": _strings(NAMES),
    "nonResourceURLs": _strings(URLS),
})
# Verbs nearly always, resources and groups often, names and URLs now and then.
_resource_rule = st.fixed_dictionaries({"verbs": _strings(VERBS), "apiGroups": _strings(GROUPS),
                                        "resources": _strings(RESOURCES)}, optional={"resourceNames": _strings(NAMES)})
_url_rule = st.fixed_dictionaries({"verbs": _strings(VERBS), "nonResourceURLs": _strings(URLS)})


# Few words, so that several rules land on the same (verb, group, resource) with different names.
_narrow_rule = st.fixed_dictionaries({
    "verbs": st.lists(st.sampled_from(["get", "*"]), min_size=1, max_size=2),
    "apiGroups": st.lists(st.sampled_from(["", "*"]), min_size=1, max_size=2),
    "resources": st.lists(st.sampled_from(["pods", "pods/log", "*", "*/log"]), min_size=1, max_size=2),
}, optional={"resourceNames": st.lists(st.sampled_from(["a", "b"]), max_size=2)})


def rules() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(_resource_rule, _narrow_rule, _narrow_rule, _url_rule, _rule)


def _role(kind: str, name: str, namespace: str, role_rules: list[Any]) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "rules": role_rules}


subjects = st.lists(st.one_of(
    st.builds(lambda n: {"kind": "User", "name": n}, st.sampled_from(["alice", "bob", "carol", "dave"])),
    st.builds(lambda n: {"kind": "Group", "name": n}, st.sampled_from(["devs", "ops", "system:authenticated"])),
    st.builds(lambda ns: {"kind": "ServiceAccount", "name": "sa", **({"namespace": ns} if ns else {})},
              st.sampled_from(["", "ns1", "ns2"])),
    st.sampled_from([{"kind": "User"}, "junk"]),
), max_size=3)
rule_lists = st.lists(st.one_of(rules(), rules(), st.just("junk")), max_size=4)


_refs = st.one_of(
    st.builds(lambda n: {"apiGroup": RBAC, "kind": "ClusterRole", "name": n}, st.sampled_from(["c1", "c2", "c3", "gone"])),
    st.builds(lambda n: {"apiGroup": RBAC, "kind": "Role", "name": n}, st.sampled_from(["r1", "r2", "missing"])),
    st.just("junk"),
)
_cluster_role_names = st.lists(st.sampled_from(["c1", "c2", "c3"]), unique=True)
_role_names = st.lists(st.sampled_from([("ns1", "r1"), ("ns1", "r2"), ("ns2", "r1")]), unique=True)
_cluster_bindings = st.lists(st.builds(
    lambda ref, who: {"kind": "ClusterRoleBinding", "metadata": {"name": "cb"}, "roleRef": ref, "subjects": who},
    _refs, subjects), max_size=4)
_bindings = st.lists(st.builds(
    lambda ns, ref, who: {"kind": "RoleBinding", "metadata": {"name": "b", "namespace": ns}, "roleRef": ref,
                          "subjects": who},
    st.sampled_from(["ns1", "ns2"]), _refs, subjects), max_size=5)


@st.composite
def snapshots(draw: st.DrawFn) -> dict[str, list[dict[str, Any]]]:
    cluster_roles = [_role("ClusterRole", n, "", draw(rule_lists)) for n in draw(_cluster_role_names)]
    roles = [_role("Role", n, ns, draw(rule_lists)) for ns, n in draw(_role_names)]
    return {"roles": roles, "cluster_roles": cluster_roles, "role_bindings": draw(_bindings),
            "cluster_role_bindings": draw(_cluster_bindings)}


_users = st.sampled_from(USERS)
_verbs = st.sampled_from(VERBS)
_url_requests = st.builds(lambda user, verb, path: Attributes(user=user, verb=verb, resource_request=False, path=path),
                          _users, _verbs, st.sampled_from(PATHS))
_resource_requests = st.builds(
    lambda user, verb, group, resource, sub, namespace, name: Attributes(
        user=user, verb=verb, resource_request=True, api_group=group, resource=resource, subresource=sub,
        namespace=namespace, name=name),
    _users, _verbs, st.sampled_from(GROUPS), st.sampled_from(["pods", "configmaps", "deployments", "roles", "secrets", "*"]),
    st.sampled_from(["", "", "log", "status", "scale"]), st.sampled_from(NAMESPACES), st.sampled_from(NAMES),
)  # fmt: skip


def requests() -> st.SearchStrategy[Attributes]:
    return st.one_of(_url_requests, _resource_requests)


def _sample() -> list[Attributes]:
    """A fixed, seeded sample of every kind of request, asked of each generated policy besides the drawn
    ones (drawing hundreds of requests per example would cost hypothesis far more than asking them)."""
    rng = random.Random(20261130)
    resource = [
        Attributes(user=u, verb=v, resource_request=True, api_group=g, resource=r, subresource=sub, namespace=ns, name=n)
        for u, v, g, r, sub, ns, n in itertools.product(USERS, VERBS, GROUPS, ["pods", "deployments", "roles", "*"],
                                                         ["", "log", "status", "scale"], NAMESPACES, NAMES)
    ]  # fmt: skip
    urls = [Attributes(user=u, verb=v, resource_request=False, path=path)
            for u, v, path in itertools.product(USERS, VERBS, PATHS)]  # fmt: skip
    # Every request in the narrow rules' words (names they list and do not list), so that rules which
    # share a (verb, group, resource) are asked about exactly what tells them apart.
    narrow = [
        Attributes(user=USERS[0], verb=v, resource_request=True, api_group=g, resource="pods", subresource=sub,
                   namespace=ns, name=n)
        for v, g, sub, ns, n in itertools.product(["get", "list"], ["", "apps"], ["", "log"], ["", "ns1"],
                                                  ["a", "b", "c", ""])
    ]  # fmt: skip
    return rng.sample(resource, 300) + rng.sample(urls, 60) + narrow


SAMPLE = _sample()


@settings(max_examples=200, deadline=None)
@given(policy=snapshots(), asked=st.lists(requests(), min_size=1, max_size=10),
       capacity=st.sampled_from([1, 2, 4096]))
def test_the_cached_decision_equals_the_definition_on_a_shared_snapshot(
    policy: dict[str, list[dict[str, Any]]], asked: list[Attributes], capacity: int
) -> None:
    shared = RbacSnapshot.of(**policy, capacity=capacity)
    reference = RbacSnapshot.of(**policy)  # evaluate() keeps nothing in it
    for attributes in [*asked, *SAMPLE, *reversed(asked)]:  # the drawn ones twice: compiled once, then kept
        assert decide(shared, attributes) == evaluate(reference, attributes), attributes
    assert len(shared.scopes) <= capacity and len(shared.subjects) <= capacity
    for attributes in asked:  # the reviews' reason names a binding exactly when the definition allows
        reason = allow_reason(reference, attributes)
        assert reason.startswith("RBAC: allowed by ") if evaluate(reference, attributes).allowed else reason == ""


@settings(max_examples=200, deadline=None)
@given(rule_list=st.lists(rules(), max_size=6), asked=st.lists(requests(), min_size=1, max_size=10),
       limit=st.sampled_from([0, 3, 512]))
def test_compiled_grants_allow_what_one_of_their_rules_allows(
    rule_list: list[dict[str, Any]], asked: list[Attributes], limit: int
) -> None:
    # limit 0 and 3: wide rules stay rules (the memory bound); asked one by one, the answer is the same.
    grants = Grants.of(rule_list, expansion_limit=limit)
    for attributes in [*asked, *SAMPLE]:
        assert grants.allows(attributes) == any(rule_allows(r, attributes) for r in rule_list), (rule_list, attributes)


def test_wildcards_subresources_names_and_paths_as_upstream() -> None:
    # A few hand-written points of RuleAllows, so a wrong reference cannot hide a wrong compilation.
    grants = Grants.of([
        {"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]},
        {"verbs": ["*"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/api/*"]},
    ])  # fmt: skip
    user = User("u")

    def res(verb: str, group: str, resource: str, sub: str = "", name: str = "") -> bool:
        return grants.allows(Attributes(user=user, verb=verb, resource_request=True, api_group=group,
                                        resource=resource, subresource=sub, name=name, namespace="ns"))

    def url(verb: str, path: str) -> bool:
        return grants.allows(Attributes(user=user, verb=verb, resource_request=False, path=path))

    assert res("get", "", "pods", "status") and res("get", "", "nodes", "status")
    assert not res("get", "", "pods") and not res("get", "", "pods", "log") and not res("list", "", "pods", "status")
    assert res("delete", "apps", "deployments", name="web") and not res("delete", "apps", "deployments", name="api")
    assert not res("list", "apps", "deployments") and not res("get", "apps", "deployments", "scale", name="web")
    assert url("get", "/healthz") and url("get", "/api/v1") and url("get", "/api/")
    assert not url("get", "/healthz/etcd") and not url("get", "/api") and not url("post", "/healthz")


def test_a_url_ending_in_several_stars_is_the_prefix_left_without_them() -> None:
    # RuleAllows trims every trailing "*" (strings.TrimRight(ruleURL, "*")): "/api/**" is the prefix
    # "/api/", "/metrics**" the prefix "/metrics"; one rule and its compiled form agree.
    rule = {"verbs": ["get"], "nonResourceURLs": ["/api/**", "/metrics**"]}
    grants = Grants.of([rule])
    for path, allowed in [("/api/v1", True), ("/api/", True), ("/api", False), ("/metrics", True),
                          ("/metrics/cadvisor", True), ("/metric", False)]:  # fmt: skip
        attributes = Attributes(user=User("u"), verb="get", resource_request=False, path=path)
        assert rule_allows(rule, attributes) is allowed, path
        assert grants.allows(attributes) is allowed, path


def test_a_rule_too_wide_to_expand_stays_a_rule_and_answers_the_same() -> None:
    # Memory is bounded by EXPANSION_LIMIT: 30 verbs x 30 resources (900 triples) or x 30 paths (900
    # pairs) is past 512, so neither is expanded into the lookup tables; either still grants as RuleAllows.
    verbs = [f"v{i}" for i in range(30)]
    wide_resources = {"verbs": verbs, "apiGroups": [""], "resources": [f"r{i}" for i in range(30)]}
    wide_paths = {"verbs": verbs, "nonResourceURLs": [f"/p{i}" for i in range(30)]}
    grants = Grants.of([wide_resources, wide_paths])
    assert not grants._resources and not grants._exact_urls and not grants._prefixes
    assert grants._rest == (wide_resources, wide_paths)
    user = User("u")
    assert grants.allows(Attributes(user=user, verb="v7", resource_request=True, resource="r29"))
    assert not grants.allows(Attributes(user=user, verb="get", resource_request=True, resource="r29"))
    assert grants.allows(Attributes(user=user, verb="v29", resource_request=False, path="/p3"))
    assert not grants.allows(Attributes(user=user, verb="v29", resource_request=False, path="/p30"))


def test_rules_on_the_same_resource_add_up() -> None:
    # Any one rule suffices: names of two rules on one (verb, group, resource) are united, and a rule
    # without names lifts the limit of another, in either order.
    user = User("u")

    def get(grants: Grants, name: str) -> bool:
        return grants.allows(Attributes(user=user, verb="get", resource_request=True, resource="pods", name=name))

    a, b, every = ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": names}
                   for names in (["a"], ["b"], []))  # fmt: skip
    both = Grants.of([a, b])
    assert get(both, "a") and get(both, "b") and not get(both, "c") and not get(both, "")
    assert all(get(Grants.of(order), "c") for order in ([a, every], [every, a]))


def test_what_is_kept_is_bounded_however_many_users_namespaces_and_questions() -> None:
    everything = _role("ClusterRole", "c1", "", [{"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}])
    shared = RbacSnapshot.of(cluster_roles=[everything], capacity=8, cluster_role_bindings=[
        {"kind": "ClusterRoleBinding", "metadata": {"name": "cb"},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "c1"},
         "subjects": [{"kind": "Group", "name": "system:authenticated"}]},
    ])  # fmt: skip
    for i in range(50):
        user = User(f"user-{i}", groups=("system:authenticated",))
        for namespace in ("", "a", "b", "c"):
            for resource in range(ANSWER_LIMIT + 10):
                attributes = Attributes(user=user, verb="get", resource_request=True, resource=f"r{resource}",
                                        namespace=namespace)  # fmt: skip
                assert decide(shared, attributes).allowed
    assert len(shared.scopes) == 8 and len(shared.subjects) <= 8
    assert all(len(scope.grants._answers) <= ANSWER_LIMIT for scope in shared.scopes.values())
