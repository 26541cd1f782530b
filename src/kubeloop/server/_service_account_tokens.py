"""Bound ServiceAccount tokens: the ``serviceaccounts/token`` subresource (TokenRequest) and their authentication.

Upstream (1.32): ``pkg/registry/core/serviceaccount/storage/token.go`` (``TokenREST.Create``),
``pkg/apis/authentication/validation`` (``ValidateTokenRequest``), ``pkg/serviceaccount/claims.go``
(``Claims`` and the validator) and ``pkg/serviceaccount/jwt.go`` (the signed JWT).

Issuing, ``POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`` with a TokenRequest
(``authentication.k8s.io/v1``, JSON or protobuf), answered 201 with the request and its ``status``:

- a ``metadata.name``/``namespace`` in the body must match the URL (422); the ServiceAccount must
  exist (404);
- ``spec.audiences`` defaults to the server's audiences, ``spec.expirationSeconds`` to 3600 and must
  lie in [600, 2^32] (422 ``may not specify a duration less than 10 minutes`` / ``larger than 2^32
  seconds``, on a TokenRequest named ``""`` as upstream's);
- ``spec.boundObjectRef`` names a Pod (which must run as this ServiceAccount: 400 otherwise), a
  Secret or a Node of ``v1`` (400 ``cannot bind token to object of type ...`` for anything else), which
  must exist (404) and carry the given uid (409);
- ``status.token`` is an ES256 JWT with upstream's claims (``iss``, ``sub``
  ``system:serviceaccount:<ns>:<name>``, ``aud``, ``exp``, ``iat``, ``nbf``, ``jti`` and
  ``kubernetes.io`` with the namespace, the ServiceAccount and the bound object), and
  ``status.expirationTimestamp`` is the request time plus ``expirationSeconds``.

Authentication (:meth:`ServiceAccountTokens.authenticate`): a token whose signature is the server's,
whose issuer is the server's, that has not expired (60 s leeway, as go-jose's), whose audiences meet
the server's, and whose ServiceAccount and bound object still exist with the same uids (and are not
being deleted) runs as ``system:serviceaccount:<ns>:<name>`` (uid: the ServiceAccount's) in groups
``system:serviceaccounts`` and ``system:serviceaccounts:<ns>``, with upstream's ``extra``
(``authentication.kubernetes.io/credential-id``, and the bound pod's and node's name and uid). Any
other token is not one of ours: ``None``.

The signing key is ``pki/sa.key`` under ``kubeloop up``'s data directory (kept across restarts, like
kube-apiserver's ``--service-account-signing-key-file``), or a fresh key per in-process server; either
is read or made on first use, so a server that never sees a ServiceAccount token never loads
cryptography (a restart's start-up stays without it).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kubeloop._files import make_directory, write_atomically
from kubeloop.api import (
    PROTOBUF_MEDIA_TYPE,
    ApiError,
    BadRequest,
    Conflict,
    FieldError,
    InternalError,
    MethodNotAllowed,
    decode_protobuf_object,
    format_time,
    invalid,
    not_found,
)
from kubeloop.server._authn import User
from kubeloop.server._http import Receive, Request, Scope, Send, decode_json, send_error, send_json
from kubeloop.server._state import ServerState

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = [
    "DEFAULT_AUDIENCES",
    "DEFAULT_ISSUER",
    "TOKEN_PATH",
    "ServiceAccountTokens",
    "TokenRequests",
    "load_signing_key",
]

# kubeadm's --service-account-issuer; --api-audiences defaults to the issuer.
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
DEFAULT_AUDIENCES = (DEFAULT_ISSUER,)
MIN_EXPIRATION_SECONDS = 10 * 60
MAX_EXPIRATION_SECONDS = 1 << 32
DEFAULT_EXPIRATION_SECONDS = 60 * 60  # SetDefaults_TokenRequestSpec
LEEWAY_SECONDS = 60  # go-jose jwt.DefaultLeeway
TOKEN_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/serviceaccounts/([^/]+)/token$")
_GROUP = "authentication.k8s.io"
_BINDABLE = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}


def load_signing_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """The P-256 key in ``path`` (PEM), created (mode 0600, atomically and durably) when the file does not exist."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if isinstance(key, ec.EllipticCurvePrivateKey):
            return key
    except FileNotFoundError:
        pass
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    make_directory(path.parent)
    write_atomically(path, pem, mode=0o600)  # never readable by others, never truncated
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class ServiceAccountTokens:
    """Issues and checks bound ServiceAccount tokens for one server (see the module docstring)."""

    def __init__(
        self,
        state: ServerState,
        *,
        key: ec.EllipticCurvePrivateKey | None = None,
        key_file: Path | None = None,
        issuer: str = DEFAULT_ISSUER,
        audiences: tuple[str, ...] = DEFAULT_AUDIENCES,
    ) -> None:
        self._state = state
        # The key is read (or made) on first use: cryptography costs a server's start-up a tenth of a
        # second, and most starts never see a ServiceAccount token.
        self._key = key
        self._key_file = key_file
        self._kid = ""
        self.issuer = issuer
        self.audiences = audiences

    def _signing_key(self) -> ec.EllipticCurvePrivateKey:
        if self._key is None:
            from cryptography.hazmat.primitives.asymmetric import ec

            self._key = (load_signing_key(self._key_file) if self._key_file is not None
                         else ec.generate_private_key(ec.SECP256R1()))  # fmt: skip
        if not self._kid:
            from cryptography.hazmat.primitives import serialization

            der = self._key.public_key().public_bytes(serialization.Encoding.DER,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)
            self._kid = _b64(hashlib.sha256(der).digest())  # upstream's keyIDFromPublicKey
        return self._key

    # -- issuing -----------------------------------------------------------------------------------
    async def create(self, namespace: str, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``TokenREST.Create``: the TokenRequest with its ``status`` (raises an ``ApiError``)."""
        meta = dict(_dict(body.get("metadata")))
        for field, expected in (("name", name), ("namespace", namespace)):
            given = meta.get(field)
            if given and given != expected:
                raise invalid("TokenRequest", name, [FieldError.invalid(
                    f"metadata.{field}", given, f"must match the service account {field} if specified")], group=_GROUP)
        account = await self._get("serviceaccounts", namespace, name)
        if account is None:
            raise not_found("serviceaccounts", name)
        spec = dict(_dict(body.get("spec")))
        if not spec.get("audiences"):
            spec["audiences"] = list(self.audiences)
        seconds = spec.get("expirationSeconds")
        if seconds is None:
            seconds = spec["expirationSeconds"] = DEFAULT_EXPIRATION_SECONDS
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise BadRequest("spec.expirationSeconds must be an integer")
        meta.setdefault("name", name)
        meta.setdefault("namespace", namespace)
        now = self._state.clock.now()
        meta["creationTimestamp"] = format_time(now)
        errors = []
        if seconds < MIN_EXPIRATION_SECONDS:
            errors.append(FieldError.invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"))
        if seconds > MAX_EXPIRATION_SECONDS:
            errors.append(FieldError.invalid("spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds"))
        if errors:
            raise invalid("TokenRequest", "", errors, group=_GROUP)
        bound = await self._bound_object(namespace, name, _dict(spec.get("boundObjectRef")))
        token = self._sign(self._claims(account, bound, now, seconds, [str(a) for a in spec["audiences"]]))
        return {
            "kind": "TokenRequest", "apiVersion": f"{_GROUP}/v1", "metadata": meta, "spec": spec,
            "status": {"token": token, "expirationTimestamp": format_time(now + seconds)},
        }  # fmt: skip

    async def _get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        key = f"/registry/core/{plural}/{namespace}/{name}" if namespace else f"/registry/core/{plural}/{name}"
        kv = await self._state.store.get(key)
        if kv is None:
            return None
        found = orjson.loads(kv.value)
        return found if isinstance(found, dict) else None

    async def _bound_object(self, namespace: str, name: str, ref: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if not ref:
            return None
        kind, api_version, ref_name = str(ref.get("kind") or ""), str(ref.get("apiVersion") or ""), str(ref.get("name") or "")
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        plural = _BINDABLE.get(kind) if group == "" else None
        if plural is None:
            version = api_version.rpartition("/")[2]
            gvk = f"{group}/{version}, Kind={kind}" if group else f"/{version}, Kind={kind}"
            raise BadRequest(f"cannot bind token to object of type {gvk}")
        obj = await self._get(plural, "" if kind == "Node" else namespace, ref_name)
        if obj is None:
            raise not_found(plural, ref_name)
        if kind == "Pod" and _dict(obj.get("spec")).get("serviceAccountName") != name:
            raise BadRequest(f'cannot bind token for serviceaccount "{name}" to pod running with different serviceaccount name.')
        uid = _dict(obj.get("metadata")).get("uid")
        if ref.get("uid") and ref["uid"] != uid:
            raise Conflict(f'Operation cannot be fulfilled on {kind} "{ref_name}": the UID in the bound object reference '
                           f"({ref['uid']}) does not match the UID in record. The object might have been deleted and then "
                           "recreated", details={"name": ref_name, "kind": kind})
        return kind, obj

    def _claims(self, account: dict[str, Any], bound: tuple[str, dict[str, Any]] | None, now: float, seconds: int,
                audiences: list[str]) -> dict[str, Any]:  # fmt: skip
        """``token.Claims``: the public and private claims of a token for ``account``."""
        meta = _dict(account.get("metadata"))
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        private: dict[str, Any] = {"namespace": namespace, "serviceaccount": {"name": name, "uid": meta.get("uid", "")}}
        if bound is not None:
            kind, obj = bound
            ref = {"name": _dict(obj.get("metadata")).get("name", ""), "uid": _dict(obj.get("metadata")).get("uid", "")}
            private[kind.lower()] = ref
        issued = int(now)
        return {
            "aud": audiences, "exp": issued + seconds, "iat": issued, "iss": self.issuer,
            "jti": self._state.new_uid(), "kubernetes.io": private, "nbf": issued,
            "sub": f"system:serviceaccount:{namespace}:{name}",
        }  # fmt: skip

    def _sign(self, claims: dict[str, Any]) -> str:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        key = self._signing_key()
        header = _b64(orjson.dumps({"alg": "ES256", "kid": self._kid}))
        payload = _b64(orjson.dumps(claims))
        signed = f"{header}.{payload}".encode()
        r, s = decode_dss_signature(key.sign(signed, ec.ECDSA(hashes.SHA256())))
        return f"{header}.{payload}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    # -- authenticating ----------------------------------------------------------------------------
    def _verified_claims(self, token: str) -> dict[str, Any] | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        public = self._signing_key().public_key()
        try:
            header = orjson.loads(_unb64(parts[0]))
            signature = _unb64(parts[2])
            if not isinstance(header, dict) or header.get("alg") != "ES256" or len(signature) != 64:
                return None
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            public.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
            claims = orjson.loads(_unb64(parts[1]))
        except (ValueError, InvalidSignature, orjson.JSONDecodeError):
            return None
        return claims if isinstance(claims, dict) else None

    async def authenticate(self, token: str) -> User | None:
        """The user a bound ServiceAccount token of this server stands for, ``None`` for any other token."""
        found = await self.review(token, self.audiences)
        return None if found is None else found[0]

    async def review(self, token: str, audiences: tuple[str, ...]) -> tuple[User, list[str]] | None:
        """The user of a bound ServiceAccount token of this server meant for one of ``audiences``, and the
        token's audiences among them (a TokenReview's ``status.audiences``: upstream's JWT authenticator
        answers the intersection with the audiences the request asked for); ``None`` for any other token."""
        claims = self._verified_claims(token)
        if claims is None or claims.get("iss") != self.issuer:
            return None
        now = self._state.clock.now()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not isinstance(exp, int) or now > exp + LEEWAY_SECONDS:
            return None
        if isinstance(nbf, int) and now < nbf - LEEWAY_SECONDS:
            return None
        token_audiences = claims.get("aud")
        if not isinstance(token_audiences, list):
            return None
        matched = [a for a in token_audiences if a in audiences]
        if not matched:
            return None
        private = _dict(claims.get("kubernetes.io"))
        namespace = str(private.get("namespace") or "")
        sa_ref = _dict(private.get("serviceaccount"))
        account = await self._get("serviceaccounts", namespace, str(sa_ref.get("name") or ""))
        if not self._same(account, sa_ref):
            return None
        extra: dict[str, tuple[str, ...]] = {}
        if isinstance(jti := claims.get("jti"), str) and jti:
            extra["authentication.kubernetes.io/credential-id"] = (f"JTI={jti}",)
        for kind, plural in _BINDABLE.items():
            ref = _dict(private.get(kind.lower()))
            if not ref:
                continue
            obj = await self._get(plural, "" if kind == "Node" else namespace, str(ref.get("name") or ""))
            if not self._same(obj, ref):
                return None
            if kind in ("Pod", "Node"):
                extra[f"authentication.kubernetes.io/{kind.lower()}-name"] = (str(ref.get("name")),)
                extra[f"authentication.kubernetes.io/{kind.lower()}-uid"] = (str(ref.get("uid")),)
        name = str(sa_ref.get("name"))
        user = User(f"system:serviceaccount:{namespace}:{name}", str(sa_ref.get("uid") or ""),
                    ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"), extra)
        return user, matched

    @staticmethod
    def _same(obj: dict[str, Any] | None, ref: dict[str, Any]) -> bool:
        """The object still exists as the token names it: same uid, not being deleted."""
        if obj is None:
            return False
        meta = _dict(obj.get("metadata"))
        return meta.get("uid") == ref.get("uid") and not meta.get("deletionTimestamp")


class TokenRequests:
    """The ASGI route of ``POST .../serviceaccounts/<name>/token`` (mounted by the app)."""

    def __init__(self, tokens: ServiceAccountTokens) -> None:
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            match = TOKEN_PATH.match(request.path.rstrip("/"))
            if request.method != "POST" or match is None:
                raise MethodNotAllowed("the server does not allow this method on the requested resource", details={})
            raw = await request.body()
            body = decode_protobuf_object(raw) if request.content_type == PROTOBUF_MEDIA_TYPE else (
                decode_json(raw) if raw.strip() else {})
            if not isinstance(body, dict):
                raise BadRequest("the request body must be an object")
            await send_json(send, 201, await self.tokens.create(match.group(1), match.group(2), body))
        except ApiError as error:
            await send_error(send, error)
        except Exception as exc:  # every failure is a Status, never a dropped connection
            await send_error(send, InternalError(f"Internal error occurred: {exc}"))
