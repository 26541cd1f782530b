"""TLS material: made once per data dir, reused, and good enough for a real TLS handshake."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

from cryptography import x509

from kubeloop.server._tls import ensure_tls, server_ssl_context


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
