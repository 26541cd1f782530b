"""The kubeconfig ``kubeloop up`` writes is what clients load: one cluster, admin user, context kubeloop."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from kubeloop.cli._kubeconfig import OwnKubeconfig, read_kubeconfig, server_url, write_kubeconfig


def test_kubeconfig_names_server_ca_token_and_default_namespace(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, server="https://127.0.0.1:6443", ca_pem=b"PEM\n", user="kubernetes-admin", token="t:k")
    doc = yaml.safe_load(path.read_text())
    assert doc["current-context"] == "kubeloop"
    (context,) = doc["contexts"]
    assert context["context"] == {"cluster": "kubeloop", "user": "kubernetes-admin", "namespace": "default"}
    (cluster,) = doc["clusters"]
    assert cluster["cluster"]["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == b"PEM\n"
    assert doc["users"][0]["user"] == {"token": "t:k"}
    assert path.stat().st_mode & 0o077 == 0


def test_server_url_uses_loopback_for_wildcard_addresses_and_brackets_ipv6() -> None:
    assert server_url("0.0.0.0", 6443) == "https://127.0.0.1:6443"
    assert server_url("::1", 1) == "https://[::1]:1"
    assert server_url("10.0.0.5", 2) == "https://10.0.0.5:2"


def test_read_kubeconfig_returns_what_write_kubeconfig_wrote_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, server="https://127.0.0.1:6443", ca_pem=b"PEM\n", user="u", token="t0k")
    own = read_kubeconfig(path)
    assert own == OwnKubeconfig(server="https://127.0.0.1:6443", ca_pem=b"PEM\n", user="u", token="t0k")
    path.write_text(path.read_text().replace('namespace: "default"', 'namespace: "other"'))
    assert read_kubeconfig(path) is None  # edited by hand: not ours any more, read it with a real parser
    assert read_kubeconfig(tmp_path / "missing") is None


def test_a_kubeconfig_that_already_holds_the_text_is_left_alone_and_any_other_is_replaced(tmp_path: Path) -> None:
    # A restart on the same address writes nothing (no rename, no fsync on the start-up path).
    path = tmp_path / "kubeconfig"

    def write(server: str = "https://127.0.0.1:6443") -> None:
        write_kubeconfig(path, server=server, ca_pem=b"PEM\n", user="kubernetes-admin", token="t:k")

    write()
    first = path.stat()
    write()
    assert path.stat().st_ino == first.st_ino and path.stat().st_mtime_ns == first.st_mtime_ns
    path.chmod(0o644)  # the same text readable by others: rewritten with mode 0600
    write()
    assert path.stat().st_ino != first.st_ino and path.stat().st_mode & 0o777 == 0o600
    second = path.stat()
    write("https://127.0.0.1:7443")
    assert path.stat().st_ino != second.st_ino
    own = read_kubeconfig(path)
    assert own is not None and own.server == "https://127.0.0.1:7443"
