"""kubectl against ``kubeloop up``: the pod garbage collector force-deletes the terminating pods of a node
that is down and marked ``node.kubernetes.io/out-of-service`` (NodeOutOfServiceVolumeDetach, GA in 1.28).

Upstream (release 1.32): k/k ``pkg/controller/podgc/gc_controller.go`` ``gcTerminating``: a pod being
deleted on a node that is not Ready and has the taint goes (phase Failed, then a delete with grace
period 0); until the taint is added, nothing confirms such a pod's end, so it stays Terminating. The
node here has no kubelet (no ``kubeloop.dev/simulated`` annotation): it never posts Ready.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.slow


def _pod(name: str, namespace: str, node: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx:1.25"}], **spec}}  # fmt: skip


# The taint is NoExecute: the taint-eviction controller deletes every pod on the node that does not
# tolerate it (pkg/controller/tainteviction), as the non-graceful node shutdown KEP relies on; this one
# does, so only the pod GC could touch it.
_TOLERATES_OUT_OF_SERVICE = [{"key": "node.kubernetes.io/out-of-service", "operator": "Exists", "effect": "NoExecute"}]


def test_terminating_pods_of_an_out_of_service_node_go_once_it_is_tainted(
    kubectl: Any, namespace: str, tmp_path: Any
) -> None:
    node = f"e2e-oos-{uuid.uuid4().hex[:6]}"
    manifest = tmp_path / "objects.yaml"
    docs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}},
            _pod("stuck", namespace, node), _pod("bystander", namespace, node, tolerations=_TOLERATES_OUT_OF_SERVICE),
            _pod("evicted", namespace, node)]  # fmt: skip
    manifest.write_text(yaml.safe_dump_all(docs))
    try:
        kubectl("apply", "-f", str(manifest))
        kubectl("delete", "pod", "stuck", "-n", namespace, "--wait=false")
        time.sleep(1)  # nothing finishes a pod on a node without a kubelet
        stuck = json.loads(kubectl("get", "pod", "stuck", "-n", namespace, "-o", "json").stdout)
        assert stuck["metadata"]["deletionTimestamp"] and stuck["metadata"]["deletionGracePeriodSeconds"] == 30

        out = kubectl("taint", "node", node, "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute").stdout
        assert f"node/{node} tainted" in out
        kubectl("wait", "--for=delete", "pod/stuck", "-n", namespace, "--timeout=60s", timeout=90)
        # Not tolerating the taint: evicted at once (taint-eviction), then, Terminating, force-deleted (pod GC).
        kubectl("wait", "--for=delete", "pod/evicted", "-n", namespace, "--timeout=60s", timeout=90)
        bystander = json.loads(kubectl("get", "pod", "bystander", "-n", namespace, "-o", "json").stdout)
        assert not bystander["metadata"].get("deletionTimestamp")  # not being deleted: the pod GC leaves it
    finally:
        kubectl("delete", "pod", "--all", "-n", namespace, "--grace-period=0", "--force", check=False)
        kubectl("delete", "node", node, "--wait=false", check=False)
