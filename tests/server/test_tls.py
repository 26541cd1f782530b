"""TLS material: made once per data dir, reused, and good enough for a real TLS handshake."""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from kubeloop import _files, _tls
from kubeloop._tls import ensure_ca, ensure_tls, server_ssl_context
from kubeloop.api import InternalError


def _sans(path: Path) -> list[str]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(v) for v in ext.get_values_for_type(x509.DNSName)] + [
        str(v) for v in ext.get_values_for_type(x509.IPAddress)
    ]


def test_first_start_creates_ca_and_serving_certificate_with_loopback_names(tmp_path: Path) -> None:
    material = ensure_tls(tmp_path, address="127.0.0.1")
    assert material.ca_pem.startswith(b"-----BEGIN CERTIFICATE-----")
    assert set(_sans(material.cert)) >= {"localhost", "127.0.0.1", "::1"}
    assert material.key.stat().st_mode & 0o077 == 0
    assert material.ca_key.stat().st_mode & 0o077 == 0


def test_restart_reuses_the_same_material(tmp_path: Path) -> None:
    first = ensure_tls(tmp_path)
    cert_bytes = first.cert.read_bytes()
    second = ensure_tls(tmp_path)
    assert second.ca_pem == first.ca_pem
    assert second.cert.read_bytes() == cert_bytes


def test_new_bind_address_reissues_only_the_serving_certificate(tmp_path: Path) -> None:
    first = ensure_tls(tmp_path, address="127.0.0.1")
    second = ensure_tls(tmp_path, address="10.1.2.3")
    assert second.ca_pem == first.ca_pem
    assert "10.1.2.3" in _sans(second.cert)


async def test_serving_certificate_verifies_against_the_ca_over_a_real_handshake(tmp_path: Path) -> None:
    material = ensure_tls(tmp_path)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_ssl_context(material))
    port = server.sockets[0].getsockname()[1]
    client = ssl.create_default_context(cadata=material.ca_pem.decode())
    try:
        for host in ("localhost", "127.0.0.1"):
            reader, writer = await asyncio.open_connection(host, port, ssl=client)
            assert await reader.read() == b"hello"
            writer.close()
            await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()


def _verifies(material_ca: bytes, cert_path: Path) -> bool:
    ca = x509.load_pem_x509_certificate(material_ca)
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    try:
        cert.verify_directly_issued_by(ca)
    except Exception:  # any failure to verify is the answer
        return False
    return True


def test_a_write_that_fails_half_way_leaves_the_old_files_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ensure_tls(tmp_path, address="127.0.0.1")
    old_cert, old_key = first.cert.read_bytes(), first.key.read_bytes()
    real_replace = os.replace

    def failing_replace(src: str | Path, dst: str | Path) -> None:
        if Path(dst).name == "apiserver.crt":  # the process dies between the key's rename and the cert's
            raise OSError("injected: killed while writing")
        real_replace(src, dst)

    monkeypatch.setattr(_files.os, "replace", failing_replace)
    with pytest.raises(InternalError):
        ensure_tls(tmp_path, address="10.1.2.3")  # a new address re-issues the serving certificate
    monkeypatch.undo()
    assert first.cert.read_bytes() == old_cert  # whole, never truncated
    assert first.key.read_bytes() != old_key  # the new key landed; the next start pairs them again
    assert not [p for p in (tmp_path / "pki").iterdir() if p.name.endswith(".tmp")]
    again = ensure_tls(tmp_path, address="10.1.2.3")
    assert "10.1.2.3" in _sans(again.cert)
    server_ssl_context(again)  # the key and the certificate belong together


def test_a_new_ca_never_finds_the_old_serving_certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ensure_tls(tmp_path)
    first.ca_key.unlink()  # the CA is made again (its key removed by hand)

    def dying_make_ca(cert_path: Path, key_path: Path) -> None:
        raise OSError("injected: killed while making the CA")

    monkeypatch.setattr(_tls, "_make_ca", dying_make_ca)
    with pytest.raises(InternalError):
        ensure_tls(tmp_path)
    assert not first.cert.exists()  # gone before the new CA, so no later start can serve it
    monkeypatch.undo()
    again = ensure_tls(tmp_path)
    assert again.ca_pem != first.ca_pem
    assert _verifies(again.ca_pem, again.cert)


def test_ensure_ca_makes_only_the_ca_and_ensure_tls_then_signs_with_it(tmp_path: Path) -> None:
    # kubeloop up writes its kubeconfigs (which need only the CA) while the serving certificate is made.
    ca_pem = _tls.ensure_ca(tmp_path)
    pki = tmp_path / "pki"
    assert ca_pem == (pki / "ca.crt").read_bytes()
    assert not (pki / "apiserver.crt").exists() and not (pki / "apiserver.key").exists()
    assert _tls.ensure_ca(tmp_path) == ca_pem  # made once, then read
    material = ensure_tls(tmp_path)
    assert material.ca_pem == ca_pem
    issuer = x509.load_pem_x509_certificate(ca_pem)
    x509.load_pem_x509_certificate(material.cert.read_bytes()).verify_directly_issued_by(issuer)


def test_a_new_ca_from_ensure_ca_never_finds_the_old_serving_certificate(tmp_path: Path) -> None:
    first = ensure_tls(tmp_path)
    first.ca_cert.unlink()
    ensure_ca(tmp_path)
    assert not first.cert.exists()  # removed before the new CA was made: the next ensure_tls issues one
    second = ensure_tls(tmp_path)
    issuer = x509.load_pem_x509_certificate(second.ca_pem)
    x509.load_pem_x509_certificate(second.cert.read_bytes()).verify_directly_issued_by(issuer)


def test_ensure_ca_reports_an_unwritable_directory_as_an_internal_error(tmp_path: Path) -> None:
    (tmp_path / "pki").write_text("not a directory")
    with pytest.raises(InternalError, match="cannot prepare TLS material"):
        ensure_ca(tmp_path)
