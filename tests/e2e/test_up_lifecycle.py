"""``kubeloop up`` as users run it: HTTPS with a token, readiness, clean stop, restart and crash durability."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

CM = "/api/v1/namespaces/default/configmaps"


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_requests_without_or_with_a_wrong_token_are_401(cluster: Any) -> None:
    expected = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Unauthorized", "reason": "Unauthorized", "code": 401}  # fmt: skip
    with cluster.http(token=None) as anonymous, cluster.http(token="wrong") as wrong:
        for http in (anonymous, wrong):
            r = http.get("/api/v1/namespaces")
            assert r.status_code == 401
            assert r.json() == expected
        assert anonymous.get("/readyz").text == "ok"
        assert wrong.get("/readyz").status_code == 401


def test_kubeconfig_has_server_ca_admin_token_and_default_namespace(cluster: Any) -> None:
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    assert doc["current-context"] == "kubeloop"
    assert doc["clusters"][0]["cluster"]["server"] == cluster.url
    assert doc["contexts"][0]["context"]["namespace"] == "default"
    assert f"export KUBECONFIG={cluster.kubeconfig}" in cluster.output
    with cluster.http() as http:
        names = {ns["metadata"]["name"] for ns in http.get("/api/v1/namespaces").json()["items"]}
        assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
        who = http.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json={"kind": "SelfSubjectReview"})
        assert "system:masters" in who.json()["status"]["userInfo"]["groups"]


def test_controller_manager_runs_as_its_own_process_and_identity(cluster: Any) -> None:
    assert "Controller manager is running" in cluster.output
    config = yaml.safe_load((cluster.data_dir / "controller-manager.kubeconfig").read_text())
    token = config["users"][0]["user"]["token"]
    with cluster.http(token=token) as http:
        who = http.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json={"kind": "SelfSubjectReview"})
        assert who.json()["status"]["userInfo"]["username"] == "system:kube-controller-manager"
        assert "system:masters" not in who.json()["status"]["userInfo"]["groups"]
        assert http.get("/api/v1/namespaces").status_code == 200  # granted by its ClusterRoleBinding


def test_sigterm_stops_cleanly_and_restart_keeps_objects_with_increasing_revisions(start_kubeloop: Any, tmp_path: Path) -> None:
    first: Any = start_kubeloop(tmp_path / "d", "--no-controllers")
    with first.http() as http:
        created = [http.post(CM, json=configmap(f"keep{i}", n=str(i))).json() for i in range(5)]
        last_rv = int(http.get(CM).json()["metadata"]["resourceVersion"])
    assert first.stop() == 0
    assert first.output[-1] == "Stopped"

    second: Any = start_kubeloop(tmp_path / "d", "--no-controllers")
    with second.http() as http:
        for obj in created:
            again = http.get(f"{CM}/{obj['metadata']['name']}").json()
            assert again["metadata"]["uid"] == obj["metadata"]["uid"]
            assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
            assert again["data"] == obj["data"]
        new = http.post(CM, json=configmap("after-restart")).json()
        assert int(new["metadata"]["resourceVersion"]) > last_rv


def test_sigkill_during_concurrent_writes_loses_no_acknowledged_write(start_kubeloop: Any, tmp_path: Path) -> None:
    server: Any = start_kubeloop(tmp_path / "d", "--no-controllers")
    acknowledged: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def writer(worker: int) -> None:
        with server.http(timeout=5) as http:
            i = 0
            while not stop.is_set():
                name = f"w{worker}-{i}"
                i += 1
                try:
                    r = http.post(CM, json=configmap(name))
                except httpx.HTTPError:
                    return  # the server is gone: this write was never acknowledged
                if r.status_code == 201:
                    with lock:
                        acknowledged.add(name)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(writer, n) for n in range(8)]
        deadline = time.monotonic() + 30
        while len(acknowledged) < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()  # SIGKILL, mid-stream
        stop.set()
        for f in futures:
            f.result()
    assert len(acknowledged) >= 200

    restarted: Any = start_kubeloop(tmp_path / "d", "--no-controllers")
    with restarted.http() as http:
        stored = {item["metadata"]["name"] for item in http.get(CM).json()["items"]}
    assert acknowledged <= stored, f"lost {len(acknowledged - stored)} acknowledged writes"


def test_second_server_on_the_same_data_dir_is_refused(cluster: Any) -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "kubeloop.cli", "up", "--port", "0", "--data-dir", str(cluster.data_dir)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == f"Error: another kubeloop server is already using {cluster.data_dir}"


def test_sigint_stops_cleanly_with_the_controller_manager(start_kubeloop: Any, tmp_path: Path) -> None:
    import signal

    server: Any = start_kubeloop(tmp_path / "d")
    server.proc.send_signal(signal.SIGINT)
    assert server.proc.wait(30) == 0
    server.kill()  # drains and closes the output pipe
    assert server.output[-2:] == ["Shutting down", "Stopped"]


def test_sigterm_with_an_open_watch_ends_the_watch_and_exits_0(start_kubeloop: Any, tmp_path: Path) -> None:
    server: Any = start_kubeloop(tmp_path / "d", "--no-controllers")
    with server.http(timeout=30) as http, http.stream("GET", f"{CM}?watch=true&timeoutSeconds=300") as watch:
        assert watch.status_code == 200
        server.proc.terminate()
        assert server.proc.wait(30) == 0
        for _ in watch.iter_lines():  # the stream ends (rather than hanging) once the server is gone
            pass
    server.kill()
    assert server.output[-1] == "Stopped"


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_controller_manager_exits_when_kubeloop_up_is_killed_and_the_directory_is_free_again(
    start_kubeloop: Any, tmp_path: Path
) -> None:
    server: Any = start_kubeloop(tmp_path / "d")
    (child,) = _children(server.proc.pid)  # the controller manager, forked before the event loop started
    server.kill()  # SIGKILL: no chance to stop its child
    deadline = time.monotonic() + 20
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not Path(f"/proc/{child}").exists(), "the controller manager outlived kubeloop up"
    # The child held no copy of the data directory's lock: a new server starts on it at once.
    again: Any = start_kubeloop(tmp_path / "d")
    with again.http() as http:
        assert http.get("/readyz").status_code == 200
