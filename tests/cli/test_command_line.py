"""The command-line contract of DESIGN.md: --help everywhere, one-line errors, exit codes."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest


def kubeloop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubeloop.cli", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.parametrize("command", [[], ["up"], ["apiserver"], ["controller-manager"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = kubeloop(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: ")


def test_up_help_documents_the_contract_defaults() -> None:
    out = kubeloop("up", "--help").stdout
    for fragment in ("--data-dir", "./.kubeloop", "--address", "127.0.0.1", "--port", "6443", "--no-controllers"):
        assert fragment in out


def test_port_in_use_fails_with_a_one_line_reason_naming_the_port(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = kubeloop("up", "--port", str(port), "--data-dir", str(tmp_path / "d"))
    assert result.returncode == 1
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1, result.stderr
    assert f"port {port} on 127.0.0.1 is already in use" in errors[0]
    assert "--port 0" in errors[0]


def test_unusable_data_dir_fails_with_a_one_line_reason(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = kubeloop("apiserver", "--port", "0", "--data-dir", str(blocker / "sub"))
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_controller_manager_without_a_server_gives_up_with_a_one_line_reason(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    result = kubeloop("controller-manager", "--kubeconfig", str(config), "--connect-timeout", "0.5")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no API server reachable" in lines[0], result.stderr


def test_controller_manager_help_documents_upstreams_namespace_grace_period() -> None:
    out = " ".join(kubeloop("controller-manager", "--help").stdout.split())
    assert "--namespace-deletion-grace-period" in out and "[default: 5.0; x>=0]" in out


def test_controller_manager_takes_upstreams_terminated_pod_gc_threshold() -> None:
    out = " ".join(kubeloop("controller-manager", "--help").stdout.split())
    assert "--terminated-pod-gc-threshold" in out and "[default: 12500; x>=0]" in out
    result = kubeloop("controller-manager", "--kubeconfig", "x", "--terminated-pod-gc-threshold", "-1")
    assert result.returncode == 2 and "Invalid value for '--terminated-pod-gc-threshold'" in result.stderr


def test_the_controller_managers_threshold_reaches_the_pod_garbage_collector() -> None:
    from kubeloop.cli._controller_manager import _builtin_controllers
    from kubeloop.client import Client
    from kubeloop.controllers import PodGarbageCollector

    client = Client.from_url("https://127.0.0.1:1", token="t")  # never used: nothing is started
    for threshold, expected in ((None, 12500), (7, 7)):
        options = {} if threshold is None else {"terminated_pod_gc_threshold": threshold}
        _, controllers = _builtin_controllers(client, 5.0, **options)
        pod_gc = controllers["pod-garbage-collector"]
        assert isinstance(pod_gc, PodGarbageCollector) and pod_gc.terminated_pod_threshold == expected
