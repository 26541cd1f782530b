"""TLS material for the API server: a private CA and a serving certificate, made once per data dir.

Guarantees:

- :func:`ensure_tls` creates ``DIR/pki/ca.{crt,key}`` and ``DIR/pki/apiserver.{crt,key}`` on first
  use and reuses them afterwards, so a kubeconfig written on first start stays valid across restarts.
- The serving certificate names ``localhost``, ``127.0.0.1``, ``::1`` and the bind address (plus the
  host name when bound to a wildcard address). If a later start binds an address the certificate
  does not name, only the serving certificate is re-issued, by the same CA.
- Keys are EC P-256 (generation takes about a millisecond), written with mode 0600.
- A restart that reuses the material never imports ``cryptography`` (the SAN list is kept beside
  the certificate), which keeps ``kubeloop up`` fast. Making it imports only ``cryptography``'s
  primitives (P-256 keys, ECDSA signatures, PKCS#8): the certificates are laid out by
  :mod:`kubeloop.server._tls_der`, not ``cryptography.x509``, whose import alone cost a first start
  more than the rest of its TLS work.

Errors (unwritable directory, corrupt key) surface as :class:`kubeloop.api.InternalError`.
"""

from __future__ import annotations

import datetime
import os
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kubeloop.api import InternalError

if TYPE_CHECKING:  # cryptography is imported only when material is made (see the contract above)
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["TlsMaterial", "ensure_tls", "server_ssl_context"]

_CA_NAME = "kubeloop-ca"
_VALID_DAYS = 3650


@dataclass(frozen=True, slots=True)
class TlsMaterial:
    """Paths of the PEM files, and the CA certificate's PEM bytes (for kubeconfig ``certificate-authority-data``)."""

    ca_cert: Path
    ca_key: Path
    cert: Path
    key: Path
    ca_pem: bytes
    sans: tuple[str, ...]


def serving_sans(address: str) -> tuple[str, ...]:
    """The names the serving certificate must carry for a server bound to ``address``."""
    names = ["localhost", "127.0.0.1", "::1"]
    if address in ("0.0.0.0", "::", ""):
        names.append(socket.gethostname())
    elif address not in names:
        names.append(address)
    return tuple(names)


def ensure_tls(data_dir: Path, *, address: str = "127.0.0.1") -> TlsMaterial:
    """Load the CA and serving certificate under ``data_dir``, creating what is missing."""
    pki = data_dir / "pki"
    ca_cert, ca_key = pki / "ca.crt", pki / "ca.key"
    cert, key, sans_file = pki / "apiserver.crt", pki / "apiserver.key", pki / "apiserver.sans"
    wanted = serving_sans(address)
    try:
        pki.mkdir(parents=True, exist_ok=True)
        if not (ca_cert.exists() and ca_key.exists()):
            _make_ca(ca_cert, ca_key)
            cert.unlink(missing_ok=True)
        have = tuple(sans_file.read_text().split()) if sans_file.exists() else ()
        if not (cert.exists() and key.exists()) or not set(wanted) <= set(have):
            _make_serving(ca_cert, ca_key, cert, key, wanted)
            sans_file.write_text("\n".join(wanted) + "\n")
            have = wanted
        return TlsMaterial(ca_cert, ca_key, cert, key, ca_cert.read_bytes(), have)
    except (OSError, ValueError) as exc:
        raise InternalError(f"Internal error occurred: cannot prepare TLS material in {pki}: {exc}") from exc


def server_ssl_context(material: TlsMaterial) -> ssl.SSLContext:
    """A server-side context presenting the serving certificate (TLS 1.2+, HTTP/1.1)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(material.cert), str(material.key))
    except (OSError, ssl.SSLError) as exc:
        raise InternalError(f"Internal error occurred: cannot load serving certificate: {exc}") from exc
    return context


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _new_pair() -> tuple[ec.EllipticCurvePrivateKey, bytes, bytes]:
    """A new P-256 key, its ``SubjectPublicKeyInfo`` DER and its public point (X9.62, uncompressed)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key()
    spki = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    point = public.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return key, spki, point


def _signer(key: ec.EllipticCurvePrivateKey) -> Callable[[bytes], bytes]:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    return lambda data: key.sign(data, ec.ECDSA(hashes.SHA256()))


def _validity() -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.UTC)
    return now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=_VALID_DAYS)


def _write_pair(key: ec.EllipticCurvePrivateKey, cert_der: bytes, key_path: Path, cert_path: Path) -> None:
    """The private key (PKCS#8, mode 0600) and the certificate, as PEM."""
    from cryptography.hazmat.primitives import serialization

    _write_private(
        key_path,
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
    cert_path.write_bytes(ssl.DER_cert_to_PEM_cert(cert_der).encode("ascii"))


def _make_ca(cert_path: Path, key_path: Path) -> None:
    from kubeloop.server import _tls_der

    key, spki, point = _new_pair()
    not_before, not_after = _validity()
    cert = _tls_der.ca_certificate(
        _CA_NAME, spki=spki, public_point=point, not_before=not_before, not_after=not_after, sign=_signer(key)
    )
    _write_pair(key, cert, key_path, cert_path)


def _make_serving(ca_cert_path: Path, ca_key_path: Path, cert_path: Path, key_path: Path, sans: tuple[str, ...]) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from kubeloop.server import _tls_der

    ca_subject = _tls_der.subject_of(ssl.PEM_cert_to_DER_cert(ca_cert_path.read_text("ascii")))
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{ca_key_path} is not an EC private key")
    ca_point = ca_key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    key, spki, _ = _new_pair()
    not_before, not_after = _validity()
    cert = _tls_der.serving_certificate(
        sans, issuer=ca_subject, issuer_point=ca_point, spki=spki, not_before=not_before, not_after=not_after,
        sign=_signer(ca_key),
    )  # fmt: skip
    _write_pair(key, cert, key_path, cert_path)
