"""Kubeconfig loading: contexts, namespaces, KUBECONFIG lists, TLS material inline or in files,
bearer token, token file and exec plugins, checked against a real TLS server that requires a
client certificate."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _certs import Pki, make_pki

from kubeloop.api import KindRegistry, Unauthorized
from kubeloop.client import Client, ConfigError, load_kubeconfig

CM = KindRegistry().by_kind("", "ConfigMap")
assert CM is not None


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write(path: Path, conf: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(conf))
    return path


def kubeconfig(server: str, *, user: dict[str, Any], cluster: dict[str, Any] | None = None,
               namespace: str | None = None, name: str = "main") -> dict[str, Any]:
    ctx: dict[str, Any] = {"cluster": name, "user": name}
    if namespace:
        ctx["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Config", "current-context": name,
            "clusters": [{"name": name, "cluster": {"server": server, **(cluster or {})}}],
            "users": [{"name": name, "user": user}], "contexts": [{"name": name, "context": ctx}]}


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path)


@pytest.fixture
async def tls_server(pki: Pki) -> AsyncIterator[str]:
    """HTTPS echo server requiring a client certificate; answers with the Authorization header it saw."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca_cert))
    ctx.load_cert_chain(pki.server_cert, pki.server_key)
    ctx.verify_mode = ssl.CERT_REQUIRED

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:] if ": " in line)
            auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
            if auth == "Bearer bad":
                status, body = "401 Unauthorized", {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                    "reason": "Unauthorized", "message": "Unauthorized", "code": 401}
            else:
                peer = writer.get_extra_info("peercert") or {}
                cn = [v for rdn in peer.get("subject", ()) for k, v in rdn if k == "commonName"]
                status, body = "200 OK", {"metadata": {"name": "a"}, "auth": auth, "cn": cn}
            data = json.dumps(body).encode()
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                         "Connection: close\r\n\r\n".encode() + data)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


async def test_inline_ca_client_certificate_and_token_reach_a_tls_server(
    tls_server: str, pki: Pki, tmp_path: Path
) -> None:
    conf = kubeconfig(tls_server, cluster={"certificate-authority-data": b64(pki.ca_cert)},
                      user={"client-certificate-data": b64(pki.client_cert), "client-key-data": b64(pki.client_key),
                            "token": "t0ken"}, namespace="team")
    async with Client.from_kubeconfig(str(write(tmp_path / "config", conf))) as client:
        assert client.default_namespace == "team"
        got = await client.get(CM, "a")
    assert got["auth"] == "Bearer t0ken"
    assert got["cn"] == ["alice"]


async def test_an_inline_client_certificate_may_take_its_key_from_a_file(
    tls_server: str, pki: Pki, tmp_path: Path
) -> None:
    conf = kubeconfig(tls_server, cluster={"certificate-authority-data": b64(pki.ca_cert)},
                      user={"client-certificate-data": b64(pki.client_cert), "client-key": str(pki.client_key)})
    async with Client.from_kubeconfig(str(write(tmp_path / "config", conf))) as client:
        assert (await client.get(CM, "a"))["cn"] == ["alice"]


async def test_relative_certificate_files_and_token_file_resolve_against_the_kubeconfig(
    tls_server: str, pki: Pki, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text("from-file\n")
    conf = kubeconfig(tls_server, cluster={"certificate-authority": "ca.crt"},
                      user={"client-certificate": "client.crt", "client-key": "client.key", "tokenFile": "token"})
    path = write(tmp_path / "config", conf)
    async with Client.from_kubeconfig(str(path)) as client:
        assert (await client.get(CM, "a"))["auth"] == "Bearer from-file"


async def test_exec_plugin_token_is_used_and_rerun_after_a_401(tls_server: str, pki: Pki, tmp_path: Path) -> None:
    counter = tmp_path / "runs"
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, os, pathlib\n"
        f"p = pathlib.Path({str(counter)!r}); n = int(p.read_text()) + 1 if p.exists() else 1; p.write_text(str(n))\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "token = 'bad' if n == 1 else 'good-' + os.environ['EXTRA']\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential', 'status': {'token': token}}))\n"
    )
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(plugin)], "env": [{"name": "EXTRA", "value": "x"}], "interactiveMode": "Never"},
            "client-certificate": str(pki.client_cert), "client-key": str(pki.client_key)}
    conf = kubeconfig(tls_server, cluster={"certificate-authority": str(pki.ca_cert)}, user=user)
    async with Client.from_kubeconfig(str(write(tmp_path / "config", conf))) as client:
        assert (await client.get(CM, "a"))["auth"] == "Bearer good-x"
        assert (await client.get(CM, "a"))["auth"] == "Bearer good-x"  # cached: no third run
    assert counter.read_text() == "2"


async def test_a_failing_exec_plugin_is_a_config_error(tls_server: str, pki: Pki, tmp_path: Path) -> None:
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                     "args": ["-c", "import sys; sys.exit(3)"]}}
    conf = kubeconfig(tls_server, cluster={"certificate-authority": str(pki.ca_cert)}, user=user)
    with pytest.raises(ConfigError, match="exited with 3"):  # run at load: it may hand out a certificate
        Client.from_kubeconfig(str(write(tmp_path / "config", conf)))
    user["client-certificate"], user["client-key"] = str(pki.client_cert), str(pki.client_key)
    conf = kubeconfig(tls_server, cluster={"certificate-authority": str(pki.ca_cert)}, user=user)
    async with Client.from_kubeconfig(str(write(tmp_path / "config", conf))) as client:
        with pytest.raises(ConfigError, match="exited with 3"):  # a token plugin runs at first use
            await client.get(CM, "a")


async def test_an_exec_plugin_may_hand_out_a_client_certificate_instead_of_a_token(
    tls_server: str, pki: Pki, tmp_path: Path
) -> None:
    status = {"clientCertificateData": pki.client_cert.read_text(), "clientKeyData": pki.client_key.read_text()}
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', "
        f"'status': {status!r}}}))\n"
    )
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(plugin)], "interactiveMode": "Never"}}
    conf = kubeconfig(tls_server, cluster={"certificate-authority": str(pki.ca_cert)}, user=user)
    async with Client.from_kubeconfig(str(write(tmp_path / "config", conf))) as client:
        got = await client.get(CM, "a")
    assert got["cn"] == ["alice"] and got["auth"] == ""  # the server required and saw the certificate


async def test_a_rejected_token_is_unauthorized(tls_server: str, pki: Pki, tmp_path: Path) -> None:
    conf = kubeconfig(tls_server, cluster={"certificate-authority": str(pki.ca_cert)},
                      user={"token": "bad", "client-certificate": str(pki.client_cert),
                            "client-key": str(pki.client_key)})
    async with Client.from_kubeconfig(str(write(tmp_path / "config", conf))) as client:
        with pytest.raises(Unauthorized):
            await client.get(CM, "a")


def test_kubeconfig_lists_merge_with_the_first_definition_winning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write(tmp_path / "a", kubeconfig("https://first:6443", user={"token": "one"}, name="shared")
                  | {"current-context": "shared"})
    second_conf = kubeconfig("https://second:6443", user={"token": "two"}, name="shared")
    second_conf["clusters"].append({"name": "other", "cluster": {"server": "https://other:6443"}})
    second_conf["contexts"].append({"name": "other", "context": {"cluster": "other", "namespace": "ns2"}})
    second_conf["current-context"] = "other"
    second = write(tmp_path / "b", second_conf)
    import os

    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "missing"), str(first), str(second)]))
    conn = load_kubeconfig()
    assert (conn.server, conn.context) == ("https://first:6443", "shared")
    other = load_kubeconfig(context="other")
    assert (other.server, other.namespace, other.auth) == ("https://other:6443", "ns2", None)


def test_in_cluster_service_account_is_used_when_there_is_no_kubeconfig(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubeloop.client import in_cluster_connection

    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa-token")
    (sa / "namespace").write_text("kube-system")
    (sa / "ca.crt").write_bytes(pki.ca_cert.read_bytes())
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    conn = in_cluster_connection(service_account_dir=sa)
    assert (conn.server, conn.namespace) == ("https://10.0.0.1:443", "kube-system")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(ConfigError, match="not running in a cluster"):
        in_cluster_connection(service_account_dir=sa)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.update({"current-context": "nope"}), "nope"),
        (lambda c: c["users"][0].update({"user": {"auth-provider": {"name": "gcp"}}}), "auth-provider"),
        (lambda c: c["clusters"][0]["cluster"].update({"certificate-authority-data": "!!"}), "base64"),
        (lambda c: c["clusters"][0]["cluster"].update({"certificate-authority": "/nonexistent/ca"}), "TLS"),
        # An inline client certificate without its key (it raised a TypeError).
        (lambda c: c["users"][0]["user"].update({"client-certificate-data": "QQ=="}), "client-key-data or client-key"),
    ],
)
def test_unusable_kubeconfigs_are_config_errors(tmp_path: Path, mutate: Any, message: str) -> None:
    conf = kubeconfig("https://x:6443", user={"token": "t"})
    mutate(conf)
    with pytest.raises(ConfigError, match=message):
        load_kubeconfig(write(tmp_path / "config", conf))
    with pytest.raises(ConfigError, match="no kubeconfig"):
        load_kubeconfig(tmp_path / "absent")
