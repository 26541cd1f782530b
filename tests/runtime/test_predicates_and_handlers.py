"""Predicates and event handlers (controller-runtime pkg/predicate, pkg/handler)."""

from __future__ import annotations

from typing import Any

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.runtime import (
    AnnotationsChanged,
    EnqueueForObject,
    EnqueueForOwner,
    EnqueueMapped,
    Event,
    GenerationChanged,
    LabelsChanged,
    Request,
    ResourceVersionChanged,
    all_of,
    any_of,
    negate,
)

KINDS = KindRegistry()


def kind(group: str, name: str) -> ResourceInfo:
    info = KINDS.by_kind(group, name)
    assert info is not None
    return info


def meta(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"namespace": "ns", "name": "x", "generation": 1, "resourceVersion": "1"}
    base.update(fields)
    return {"metadata": base}


def update(old: dict[str, Any], new: dict[str, Any]) -> Event:
    return Event("update", new, old)


def owner_ref(
    kind_: str, name: str, *, api_version: str = "apps/v1", controller: bool | None = True
) -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": api_version, "kind": kind_, "name": name, "uid": f"uid-{name}"}
    if controller is not None:
        ref["controller"] = controller
    return ref


def test_generation_changed_drops_status_only_updates() -> None:
    p = GenerationChanged()
    assert not p(update(meta(generation=2, resourceVersion="5"), meta(generation=2, resourceVersion="6")))
    assert p(update(meta(generation=2), meta(generation=3)))


def test_builtin_predicates_let_create_and_delete_through() -> None:
    for p in (GenerationChanged(), LabelsChanged(), AnnotationsChanged(), ResourceVersionChanged()):
        assert p(Event("create", meta()))
        assert p(Event("delete", meta()))
        assert p(Event("generic", meta()))


def test_an_update_without_the_old_object_is_dropped() -> None:
    assert not GenerationChanged()(Event("update", meta()))


def test_labels_changed_and_annotations_changed_compare_their_maps() -> None:
    assert LabelsChanged()(update(meta(labels={"a": "1"}), meta(labels={"a": "2"})))
    assert not LabelsChanged()(update(meta(), meta(labels={})))  # absent and empty are the same
    assert AnnotationsChanged()(update(meta(), meta(annotations={"k": "v"})))
    assert not AnnotationsChanged()(update(meta(annotations={"k": "v"}), meta(annotations={"k": "v"})))


def test_resource_version_changed_drops_resync_replays() -> None:
    same = meta(resourceVersion="7")
    assert not ResourceVersionChanged()(update(same, same))


def test_predicates_combine_with_and_or_not() -> None:
    spec = update(meta(generation=1), meta(generation=2))
    labels = update(meta(labels={"a": "1"}), meta(labels={"a": "2"}))
    either = GenerationChanged() | LabelsChanged()
    assert either(spec) and either(labels)
    both = GenerationChanged() & LabelsChanged()
    assert not both(spec) and not both(labels)
    assert (~GenerationChanged())(labels)
    assert any_of(GenerationChanged(), lambda e: e.object["metadata"]["name"] == "x")(labels)
    assert not all_of(GenerationChanged(), lambda e: True)(labels)
    assert negate(lambda e: False)(spec)
    assert all_of()(spec)


def test_enqueue_for_object_enqueues_the_object_itself() -> None:
    assert list(EnqueueForObject().requests(Event("create", meta(name="web")))) == [Request("ns", "web")]
    cluster_scoped = {"metadata": {"name": "node-1"}}
    assert list(EnqueueForObject().requests(Event("delete", cluster_scoped))) == [Request("", "node-1")]


def test_enqueue_for_owner_enqueues_the_controlling_owner_in_the_objects_namespace() -> None:
    rs = meta(name="web-abc", ownerReferences=[owner_ref("Deployment", "web")])
    handler = EnqueueForOwner(kind("apps", "Deployment"))
    assert list(handler.requests(Event("create", rs))) == [Request("ns", "web")]


def test_enqueue_for_owner_ignores_non_controller_refs_and_other_kinds() -> None:
    pod = meta(
        ownerReferences=[
            owner_ref("Deployment", "not-controller", controller=False),
            owner_ref("Deployment", "no-flag", controller=None),
            owner_ref("StatefulSet", "other-kind"),
            owner_ref("Deployment", "other-group", api_version="example.com/v1"),
        ]
    )
    handler = EnqueueForOwner(kind("apps", "Deployment"))
    assert list(handler.requests(Event("create", pod))) == []
    every_owner = EnqueueForOwner(kind("apps", "Deployment"), only_controller=False)
    assert set(every_owner.requests(Event("create", pod))) == {
        Request("ns", "not-controller"),
        Request("ns", "no-flag"),
    }


def test_enqueue_for_owner_matches_the_group_not_the_version() -> None:
    rs = meta(ownerReferences=[owner_ref("Deployment", "web", api_version="apps/v1beta2")])
    assert list(EnqueueForOwner(kind("apps", "Deployment")).requests(Event("create", rs))) == [
        Request("ns", "web")
    ]


def test_enqueue_for_owner_wakes_old_and_new_owner_on_update() -> None:
    old = meta(ownerReferences=[owner_ref("Deployment", "a")])
    new = meta(ownerReferences=[owner_ref("Deployment", "b")])
    handler = EnqueueForOwner(kind("apps", "Deployment"))
    assert list(handler.requests(update(old, new))) == [Request("ns", "a"), Request("ns", "b")]
    assert list(handler.requests(update(old, old))) == [Request("ns", "a")]  # once, not twice


def test_a_cluster_scoped_owner_is_enqueued_without_a_namespace() -> None:
    pod = meta(ownerReferences=[owner_ref("Node", "node-1", api_version="v1")])
    assert list(EnqueueForOwner(kind("", "Node")).requests(Event("create", pod))) == [Request("", "node-1")]


def test_enqueue_mapped_uses_the_mapping_function_for_old_and_new() -> None:
    def by_label(obj: Any) -> list[Request]:
        app = obj["metadata"].get("labels", {}).get("app")
        return [Request("ns", app)] if app else []

    handler = EnqueueMapped(by_label)
    event = update(meta(labels={"app": "one"}), meta(labels={"app": "two"}))
    assert list(handler.requests(event)) == [Request("ns", "one"), Request("ns", "two")]
    assert list(handler.requests(Event("create", meta()))) == []
