"""ResourceInfo.api_version: derived from group and version once, and again for a replaced copy."""

from __future__ import annotations

import dataclasses

from kubeloop.api import ResourceInfo


def test_api_version_is_group_slash_version_or_the_version_alone_for_the_core_group() -> None:
    apps = ResourceInfo("apps", "v1", "Deployment", "deployments", "deployment", True)
    core = ResourceInfo("", "v1", "Pod", "pods", "pod", True)
    assert apps.api_version == "apps/v1"
    assert core.api_version == "v1"


def test_a_replaced_copy_derives_its_own_api_version_and_equality_ignores_it() -> None:
    info = ResourceInfo("example.com", "v1alpha1", "Widget", "widgets", "widget", True, custom=True)
    moved = dataclasses.replace(info, version="v1")
    assert moved.api_version == "example.com/v1"
    assert dataclasses.replace(moved, version="v1alpha1") == info
    assert hash(dataclasses.replace(moved, version="v1alpha1")) == hash(info)
    assert "api_version" not in repr(info)
