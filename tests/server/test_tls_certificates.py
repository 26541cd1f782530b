"""The CA and serving certificates ``kubeloop/_tls.py`` makes: their fields and extensions, as its contract says.

Each certificate is parsed with ``cryptography.x509``, its extensions compared with the contract's, its
signature verified against its issuer, and its to-be-signed part compared with what
``CertificateBuilder`` makes from the certificate's own fields (so nothing else is in it).
"""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, SignatureAlgorithmOID

from kubeloop._tls import ensure_tls


def _load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return key


def _rebuilt(cert: x509.Certificate, issuer_key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    """What ``CertificateBuilder`` makes from ``cert``'s own fields and extensions."""
    builder = (
        x509.CertificateBuilder()
        .subject_name(cert.subject)
        .issuer_name(cert.issuer)
        .public_key(cert.public_key())  # type: ignore[arg-type]
        .serial_number(cert.serial_number)
        .not_valid_before(cert.not_valid_before_utc)
        .not_valid_after(cert.not_valid_after_utc)
    )
    for extension in cert.extensions:
        builder = builder.add_extension(extension.value, critical=extension.critical)
    return builder.sign(issuer_key, hashes.SHA256())


def test_the_ca_is_a_self_signed_p256_ca_with_the_contracts_extensions(tmp_path: Path) -> None:
    material = ensure_tls(tmp_path)
    ca, key = _load(material.ca_cert), _key(material.ca_key)
    assert ca.version is x509.Version.v3
    assert ca.signature_algorithm_oid == SignatureAlgorithmOID.ECDSA_WITH_SHA256
    assert ca.subject == ca.issuer == x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubeloop-ca")])
    assert [(e.oid, e.critical, e.value) for e in ca.extensions] == [
        (x509.BasicConstraints.oid, True, x509.BasicConstraints(ca=True, path_length=0)),
        (
            x509.KeyUsage.oid,
            True,
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False,
            ),
        ),
        (x509.SubjectKeyIdentifier.oid, False, x509.SubjectKeyIdentifier.from_public_key(key.public_key())),
    ]  # fmt: skip
    assert ca.public_key() == key.public_key()
    assert ca.tbs_certificate_bytes == _rebuilt(ca, key).tbs_certificate_bytes
    ca.verify_directly_issued_by(ca)
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == datetime.timedelta(days=3650, minutes=5)
    assert 0 < ca.serial_number < 2**159


def test_the_serving_certificate_names_the_sans_and_verifies_against_the_ca(tmp_path: Path) -> None:
    material = ensure_tls(tmp_path, address="10.1.2.3")
    ca, ca_key = _load(material.ca_cert), _key(material.ca_key)
    cert = _load(material.cert)
    assert cert.subject == x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    assert cert.issuer == ca.subject
    assert [(e.oid, e.critical, e.value) for e in cert.extensions] == [
        (
            x509.SubjectAlternativeName.oid,
            False,
            x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.IPAddress(ipaddress.ip_address("::1")), x509.IPAddress(ipaddress.ip_address("10.1.2.3")),
            ]),
        ),
        (x509.BasicConstraints.oid, True, x509.BasicConstraints(ca=False, path_length=None)),
        (x509.ExtendedKeyUsage.oid, False, x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])),
        (
            x509.AuthorityKeyIdentifier.oid,
            False,
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
        ),
    ]  # fmt: skip
    assert cert.public_key() == _key(material.key).public_key()
    assert cert.tbs_certificate_bytes == _rebuilt(cert, ca_key).tbs_certificate_bytes
    cert.verify_directly_issued_by(ca)


def test_a_restart_that_reuses_the_material_never_imports_cryptography(tmp_path: Path) -> None:
    # A first start makes keys and certificates with cryptography; a restart that finds the material
    # loads it with ``ssl`` alone (the contract of kubeloop/_tls.py).
    code = (
        "import sys; from pathlib import Path; from kubeloop.server import ensure_tls, server_ssl_context;"
        f"material = ensure_tls(Path({str(tmp_path)!r}));"
        "server_ssl_context(material);"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'cryptography')))"
    )
    first = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert {"cryptography.hazmat.primitives.asymmetric.ec", "cryptography.x509"} <= set(first)
    restart = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert restart == []
