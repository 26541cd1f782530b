"""``kubectl get -w`` (Table events) beside other watchers of the same resource in other formats: a
``kubectl get -w -o json`` (plain JSON events) and a ``-o wide`` table. The server shares what watchers
with equal options render from an event; each kubectl still prints its own format, in order."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import Any

import pytest

pytestmark = pytest.mark.slow


class Watch:
    """A running ``kubectl get ... -w``: its stdout lines as they come."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(["kubectl", "get", *args, "-w"], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        out = self.proc.stdout
        self.reader = threading.Thread(target=lambda: [self.lines.put(line) for line in out], daemon=True)
        self.reader.start()

    def next_line(self, accept: Any) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            if accept(line):
                return line
        raise AssertionError("kubectl get -w never printed the expected line")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.reader.join(10)  # the pipe ends with the process
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _post(cluster: Any, path: str, obj: dict[str, Any]) -> None:
    with cluster.http() as http:
        r = http.post(path, json=obj)
        assert r.status_code == 201, r.text


def _patch(cluster: Any, path: str, patch: dict[str, Any]) -> None:
    with cluster.http() as http:
        r = http.patch(path, content=json.dumps(patch), headers={"content-type": "application/merge-patch+json"})
        assert r.status_code == 200, r.text


def test_kubectl_watch_tables_and_json_side_by_side(cluster: Any, namespace: str, kubectl_env: dict[str, str]) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _post(cluster, path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "before"}})
    table = Watch(kubectl_env, "configmaps", "-n", namespace)
    wide = Watch(kubectl_env, "configmaps", "-n", namespace, "-o", "wide")
    as_json = Watch(kubectl_env, "configmaps", "-n", namespace, "-o", "json")
    watches = (table, wide, as_json)
    try:
        first_word = {w: (lambda name: lambda line: line.split()[:1] == [name]) for w in (table, wide)}
        for w in (table, wide):
            w.next_line(first_word[w]("before"))
        as_json.next_line(lambda line: '"name": "before"' in line)
        time.sleep(0.5)  # every kubectl has listed and is watching
        _post(cluster, path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "during"},
                              "data": {"a": "1"}})
        _patch(cluster, f"{path}/during", {"data": {"b": "2"}})
        for w in (table, wide):
            assert w.next_line(first_word[w]("during")).split()[:2] == ["during", "1"]  # NAME, DATA
            assert w.next_line(first_word[w]("during")).split()[:2] == ["during", "2"]
        # -o json prints each object whole, at its own version, in order
        assert as_json.next_line(lambda line: '"a": "1"' in line)
        assert as_json.next_line(lambda line: '"b": "2"' in line)
    finally:
        for w in watches:
            w.stop()
