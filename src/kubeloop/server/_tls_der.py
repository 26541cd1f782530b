"""The two X.509 certificates the API server makes (its CA, its serving certificate), laid out in DER.

Contract: :func:`ca_certificate` and :func:`serving_certificate` return the DER of an X.509 v3
certificate (RFC 5280 section 4.1, DER as X.690 section 10) signed with ECDSA over SHA-256, with the
fields and extensions ``cryptography``'s ``CertificateBuilder`` wrote for kubeloop before, in the same
order and with the same criticality:

* the CA: subject = issuer = ``CN=<name>``, ``BasicConstraints(ca, pathlen 0)`` critical,
  ``KeyUsage(digitalSignature, keyCertSign, cRLSign)`` critical, ``SubjectKeyIdentifier``;
* the serving certificate: ``CN=kube-apiserver`` issued by the CA's subject, ``SubjectAltName`` (DNS
  names and IP addresses), ``BasicConstraints(not a CA)`` critical, ``ExtendedKeyUsage(serverAuth)``,
  ``AuthorityKeyIdentifier`` (the CA key's identifier).

Key identifiers are the SHA-1 of the public key's bit string (RFC 5280 section 4.2.1.2, method 1, what
``cryptography``'s ``from_public_key`` computes); serial numbers are 159 random bits (as
``x509.random_serial_number``); validity times are UTCTime before 2050 and GeneralizedTime from then on,
in whole seconds.

Keys, signatures and key files stay ``cryptography``'s: this module gets the public key already encoded
(``SubjectPublicKeyInfo`` DER) and a ``sign`` function, and only lays out the bytes around them. Why not
``cryptography.x509``: importing it costs the API server's first start about 140 M instructions (40 ms
on the benchmark machine) on the way to ``/readyz``, more than everything else TLS costs together. The
tests parse what this module writes back with ``cryptography.x509`` and check every field.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import secrets
from collections.abc import Callable, Sequence

__all__ = ["ca_certificate", "key_identifier", "serving_certificate", "subject_of"]

Sign = Callable[[bytes], bytes]  # DER of an ECDSA-Sig-Value over SHA-256 of the argument

_ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2"
_COMMON_NAME = "2.5.4.3"
_SUBJECT_KEY_IDENTIFIER = "2.5.29.14"
_KEY_USAGE = "2.5.29.15"
_SUBJECT_ALT_NAME = "2.5.29.17"
_BASIC_CONSTRAINTS = "2.5.29.19"
_AUTHORITY_KEY_IDENTIFIER = "2.5.29.35"
_EXTENDED_KEY_USAGE = "2.5.29.37"
_SERVER_AUTH = "1.3.6.1.5.5.7.3.1"


def ca_certificate(
    common_name: str, *, spki: bytes, public_point: bytes, not_before: datetime.datetime,
    not_after: datetime.datetime, sign: Sign,
) -> bytes:  # fmt: skip
    """A self-signed CA certificate for the key whose ``SubjectPublicKeyInfo`` is ``spki``."""
    name = _name(common_name)
    extensions = [
        _extension(_BASIC_CONSTRAINTS, _seq(_boolean(True), _integer(0)), critical=True),
        # digitalSignature (bit 0), keyCertSign (5), cRLSign (6): one unused bit after bit 6.
        _extension(_KEY_USAGE, _tlv(0x03, b"\x01\x86"), critical=True),
        _extension(_SUBJECT_KEY_IDENTIFIER, _tlv(0x04, key_identifier(public_point))),
    ]
    return _signed(name, name, spki, not_before, not_after, extensions, sign)


def serving_certificate(
    sans: Sequence[str], *, issuer: bytes, issuer_point: bytes, spki: bytes, not_before: datetime.datetime,
    not_after: datetime.datetime, sign: Sign,
) -> bytes:  # fmt: skip
    """``CN=kube-apiserver`` for ``sans`` (IP addresses where they parse as one, DNS names otherwise),
    issued by the CA whose subject is ``issuer`` (a DER ``Name``) and public key ``issuer_point``."""
    names = []
    for san in sans:
        try:
            names.append(_tlv(0x87, ipaddress.ip_address(san).packed))  # iPAddress [7]
        except ValueError:
            names.append(_tlv(0x82, san.encode("ascii")))  # dNSName [2] IA5String
    extensions = [
        _extension(_SUBJECT_ALT_NAME, _seq(*names)),
        _extension(_BASIC_CONSTRAINTS, _seq(), critical=True),  # cA DEFAULT FALSE: an empty sequence
        _extension(_EXTENDED_KEY_USAGE, _seq(_oid(_SERVER_AUTH))),
        _extension(_AUTHORITY_KEY_IDENTIFIER, _seq(_tlv(0x80, key_identifier(issuer_point)))),  # keyIdentifier [0]
    ]
    return _signed(issuer, _name("kube-apiserver"), spki, not_before, not_after, extensions, sign)


def key_identifier(public_point: bytes) -> bytes:
    """RFC 5280 4.2.1.2 method 1: SHA-1 of the public key's bit string (an EC key's X9.62 point)."""
    return hashlib.sha1(public_point, usedforsecurity=False).digest()


def subject_of(certificate: bytes) -> bytes:
    """The subject ``Name`` (its whole DER) of a DER certificate: the issuer of what that CA signs."""
    tbs, _ = _element(_contents(certificate), 0)  # Certificate ::= SEQUENCE { tbsCertificate, ... }
    fields = _contents(tbs)
    offset = 0
    if fields[0] == 0xA0:  # version [0] EXPLICIT
        offset = _element(fields, 0)[1]
    for _ in range(4):  # serialNumber, signature, issuer, validity
        offset = _element(fields, offset)[1]
    return _element(fields, offset)[0]


def _signed(
    issuer: bytes, subject: bytes, spki: bytes, not_before: datetime.datetime, not_after: datetime.datetime,
    extensions: list[bytes], sign: Sign,
) -> bytes:  # fmt: skip
    algorithm = _seq(_oid(_ECDSA_WITH_SHA256))  # no parameters for ECDSA (RFC 5758 3.2)
    serial = int.from_bytes(secrets.token_bytes(20), "big") >> 1
    tbs = _seq(
        _tlv(0xA0, _integer(2)),  # version [0] EXPLICIT v3
        _integer(serial),
        algorithm,
        issuer,
        _seq(_time(not_before), _time(not_after)),
        subject,
        spki,
        _tlv(0xA3, _seq(*extensions)),  # extensions [3] EXPLICIT
    )
    return _seq(tbs, algorithm, _tlv(0x03, b"\x00" + sign(tbs)))


def _name(common_name: str) -> bytes:
    attribute = _seq(_oid(_COMMON_NAME), _tlv(0x0C, common_name.encode()))  # UTF8String
    return _seq(_tlv(0x31, attribute))  # RDNSequence of one SET


def _extension(oid: str, value: bytes, *, critical: bool = False) -> bytes:
    return _seq(_oid(oid), *([_boolean(True)] if critical else []), _tlv(0x04, value))


def _time(moment: datetime.datetime) -> bytes:
    moment = moment.astimezone(datetime.UTC)
    if 1950 <= moment.year < 2050:  # RFC 5280 4.1.2.5
        return _tlv(0x17, moment.strftime("%y%m%d%H%M%SZ").encode())
    return _tlv(0x18, moment.strftime("%Y%m%d%H%M%SZ").encode())


def _oid(dotted: str) -> bytes:
    arcs = [int(a) for a in dotted.split(".")]
    body = bytearray()
    for arc in [40 * arcs[0] + arcs[1], *arcs[2:]]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        body += bytes(reversed(chunk))
    return _tlv(0x06, bytes(body))


def _integer(value: int) -> bytes:
    return _tlv(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big"))  # non-negative, minimal


def _boolean(value: bool) -> bytes:
    return _tlv(0x01, b"\xff" if value else b"\x00")


def _seq(*parts: bytes) -> bytes:
    return _tlv(0x30, b"".join(parts))


def _tlv(tag: int, content: bytes) -> bytes:
    size = len(content)
    if size < 0x80:
        return bytes((tag, size)) + content
    length = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes((tag, 0x80 | len(length))) + length + content


def _element(data: bytes, offset: int) -> tuple[bytes, int]:
    """The whole element (tag, length, contents) starting at ``offset``, and the offset after it."""
    size = data[offset + 1]
    start = offset + 2
    if size & 0x80:
        count = size & 0x7F
        size = int.from_bytes(data[start : start + count], "big")
        start += count
    return data[offset : start + size], start + size


def _contents(element: bytes) -> bytes:
    size = element[1]
    return element[2 + (size & 0x7F if size & 0x80 else 0) :]
