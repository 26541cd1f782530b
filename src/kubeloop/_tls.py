"""TLS material for the API server: a private CA and a serving certificate, made once per data dir.

Guarantees:

- :func:`ensure_tls` creates ``DIR/pki/ca.{crt,key}`` and ``DIR/pki/apiserver.{crt,key}`` on first
  use and reuses them afterwards, so a kubeconfig written on first start stays valid across restarts.
  :func:`ensure_ca` is its first half alone (the CA, made if missing; its PEM returned): a kubeconfig
  needs only the CA, so ``kubeloop up`` writes its kubeconfigs while the serving certificate is made.
- The serving certificate names ``localhost``, ``127.0.0.1``, ``::1`` and the bind address (plus the
  host name when bound to a wildcard address). If a later start binds an address the certificate
  does not name, only the serving certificate is re-issued, by the same CA.
- Keys are EC P-256 (generation takes about a millisecond), written with mode 0600.
- Every file is written atomically and durably (:func:`kubeloop._files.write_atomically`: a temporary
  file, fsync, rename, fsync of the directory): a start killed or a machine that loses power at any
  moment leaves each file whole or absent, never truncated, and the next start reuses what is whole
  and makes what is absent.
- A restart that reuses the material never imports ``cryptography`` (the SAN list is kept beside
  the certificate), which keeps ``kubeloop up`` fast.

Errors (unwritable directory, corrupt key) surface as :class:`kubeloop.api.InternalError`.

The module sits at the bottom of the package, beside :mod:`kubeloop._files` (the server re-exports it,
``kubeloop up``'s TLS child and ``kubeloop webhook`` use it): at import time it loads nothing of kubeloop
but ``_files``, and ``ssl``, ``cryptography`` and ``kubeloop.api`` (its errors) only when they are used,
so that the process ``kubeloop up`` forks to make the material (``cli/_tls_child.py``) loads only what
making it needs.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kubeloop._files import make_directory, sync_directory, write_atomically

if TYPE_CHECKING:  # imported only when used (see the contract above)
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["TlsMaterial", "ensure_ca", "ensure_tls", "needs_making", "server_ssl_context"]

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


def needs_making(data_dir: Path, *, address: str = "127.0.0.1") -> bool:
    """Whether :func:`ensure_tls` would make anything under ``data_dir`` (a few ``stat`` calls)."""
    pki = data_dir / "pki"
    if not all((pki / name).exists() for name in ("ca.crt", "ca.key", "apiserver.crt", "apiserver.key")):
        return True
    try:
        have = (pki / "apiserver.sans").read_text().split()
    except OSError:
        return True
    return not set(serving_sans(address)) <= set(have)


def ensure_ca(data_dir: Path) -> bytes:
    """The CA certificate (PEM) under ``data_dir``, the CA made first if it is missing."""
    pki = data_dir / "pki"
    try:
        _ensure_ca(pki)
        return (pki / "ca.crt").read_bytes()
    except (OSError, ValueError) as exc:
        raise _internal_error(f"cannot prepare TLS material in {pki}: {exc}") from exc


def _ensure_ca(pki: Path) -> None:
    ca_cert, ca_key = pki / "ca.crt", pki / "ca.key"
    make_directory(pki)
    if not (ca_cert.exists() and ca_key.exists()):
        # The old serving certificate goes first: a start killed after the new CA is written must
        # not find a certificate that CA did not sign.
        _remove(pki / "apiserver.crt")
        _make_ca(ca_cert, ca_key)


def ensure_tls(data_dir: Path, *, address: str = "127.0.0.1") -> TlsMaterial:
    """Load the CA and serving certificate under ``data_dir``, creating what is missing."""
    pki = data_dir / "pki"
    ca_cert, ca_key = pki / "ca.crt", pki / "ca.key"
    cert, key, sans_file = pki / "apiserver.crt", pki / "apiserver.key", pki / "apiserver.sans"
    wanted = serving_sans(address)
    try:
        _ensure_ca(pki)
        have = tuple(sans_file.read_text().split()) if sans_file.exists() else ()
        if not (cert.exists() and key.exists()) or not set(wanted) <= set(have):
            # The SAN list goes first, and comes back last: a start killed between the new key and the
            # new certificate leaves no SAN list, so the next start issues the pair again rather than
            # load a certificate with another certificate's key.
            _remove(sans_file)
            _make_serving(ca_cert, ca_key, cert, key, wanted)
            write_atomically(sans_file, ("\n".join(wanted) + "\n").encode(), mode=0o644)
            have = wanted
        return TlsMaterial(ca_cert, ca_key, cert, key, ca_cert.read_bytes(), have)
    except (OSError, ValueError) as exc:
        raise _internal_error(f"cannot prepare TLS material in {pki}: {exc}") from exc


def server_ssl_context(material: TlsMaterial) -> ssl.SSLContext:
    """A server-side context presenting the serving certificate (TLS 1.2+, HTTP/1.1)."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(material.cert), str(material.key))
    except (OSError, ssl.SSLError) as exc:
        raise _internal_error(f"cannot load serving certificate: {exc}") from exc
    return context


def _internal_error(reason: str) -> Exception:
    from kubeloop.api import InternalError

    return InternalError(f"Internal error occurred: {reason}")


def _remove(path: Path) -> None:
    """Remove ``path`` if it exists, durably (before anything written after it)."""
    if path.exists():
        path.unlink()
        sync_directory(path.parent)


def _write_pair(key: ec.EllipticCurvePrivateKey, cert: x509.Certificate, key_path: Path, cert_path: Path) -> None:
    """The private key (PKCS#8, mode 0600), then the certificate, as PEM, each written atomically: a
    certificate on disk always has its key beside it."""
    from cryptography.hazmat.primitives import serialization

    write_atomically(
        key_path,
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        mode=0o600,
    )
    write_atomically(cert_path, cert.public_bytes(serialization.Encoding.PEM), mode=0o644)


def _make_ca(cert_path: Path, key_path: Path) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, _CA_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write_pair(key, cert, key_path, cert_path)


def _make_serving(ca_cert_path: Path, ca_key_path: Path, cert_path: Path, key_path: Path, sans: tuple[str, ...]) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{ca_key_path} is not an EC private key")
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = []
    for san in sans:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(san)))
        except ValueError:
            alt_names.append(x509.DNSName(san))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_pair(key, cert, key_path, cert_path)
