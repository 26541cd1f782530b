"""Authentication: bearer tokens, as an ASGI middleware that wraps any ASGI app.

Contract (kube-apiserver ``filters/authentication.go`` and ``authentication/request/bearertoken``):

- A request with ``Authorization: Bearer <token>`` (header name and scheme case-insensitive) whose
  token is known runs as that token's user; the user always gets group ``system:authenticated``.
- A known header with an unknown or empty token is answered ``401`` with the upstream ``Status``
  (message and reason ``Unauthorized``), on every path.
- A request without bearer credentials runs as ``system:anonymous`` (group
  ``system:unauthenticated``) on the public health and version paths (``/healthz``, ``/livez``,
  ``/readyz``, ``/version`` and their sub-paths; upstream's ``system:public-info-viewer``, with
  anonymous auth limited to those endpoints as kube-apiserver's ``AuthenticationConfiguration``
  ``anonymous.conditions`` allows), and gets ``401`` everywhere else.
- The user lands in ``scope["kubeloop.user"]`` (a :class:`User`); the ``Authorization`` header is
  left in place (upstream strips it; nothing downstream of us forwards requests).

Tokens come from a static token file in kube-apiserver's ``--token-auth-file`` format
(``token,user,uid,"group1,group2"``, one user per line); :func:`ensure_token_file` creates it with
the admin and controller-manager identities on first start.
"""

from __future__ import annotations

import csv
import io
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeloop._files import write_atomically
from kubeloop.api import InternalError, Unauthorized
from kubeloop.server._http import ASGIApp, Receive, Scope, Send, send_error

__all__ = [
    "ADMIN_USER",
    "ANONYMOUS",
    "CONTROLLER_MANAGER_USER",
    "USER_SCOPE_KEY",
    "AuthenticationMiddleware",
    "User",
    "authenticate",
    "canonical_bearer_headers",
    "ensure_token_file",
    "load_token_file",
    "user_info",
]

USER_SCOPE_KEY = "kubeloop.user"
ADMIN_USER = "kubernetes-admin"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"

PUBLIC_PATHS = ("/healthz", "/livez", "/readyz", "/version")


@dataclass(frozen=True, slots=True)
class User:
    """An authenticated identity (apiserver ``user.Info``)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def is_master(self) -> bool:
        return MASTERS in self.groups


ANONYMOUS = User(name="system:anonymous", groups=("system:unauthenticated",))


def user_info(user: User) -> dict[str, Any]:
    """``authentication.k8s.io/v1`` ``UserInfo`` of ``user`` (its empty fields omitted, as upstream encodes
    them): what a TokenReview, a SelfSubjectReview and an AdmissionReview carry."""
    info: dict[str, Any] = {"username": user.name}
    if user.uid:
        info["uid"] = user.uid
    if user.groups:
        info["groups"] = list(user.groups)
    if user.extra:
        info["extra"] = {k: list(v) for k, v in user.extra.items()}
    return info


def _is_public(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in PUBLIC_PATHS)


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The bearer token of a request, ``""`` for a malformed bearer header, ``None`` when absent."""
    for name, value in headers:
        if name.lower() != b"authorization":
            continue
        parts = value.decode("latin-1").strip().split(" ", 2)
        if len(parts) < 2 or parts[0].lower() != "bearer":
            return None
        return parts[1].strip()
    return None


def authenticate(tokens: Mapping[str, User], headers: Iterable[tuple[bytes, bytes]], path: str) -> User | None:
    """The user a request runs as (``tokens`` maps token -> user), ``None`` when it gets 401."""
    token = bearer_token(headers)
    if token is None:
        return ANONYMOUS if _is_public(path) else None
    return tokens.get(token) if token else None


def canonical_bearer_headers(tokens: Mapping[str, User]) -> dict[str, User]:
    """``Authorization`` values -> user, for the one spelling clients send (``Bearer <token>``).

    A request whose only ``Authorization`` header is one of these keys runs as its user, exactly as
    :func:`authenticate` decides (each key is checked to parse back to its token, and no key holds a
    ``,``, so headers joined from repeats never match); any other value takes :func:`authenticate`.
    """
    out: dict[str, User] = {}
    for token, user in tokens.items():
        value = f"Bearer {token}"
        try:
            raw = value.encode("latin-1")
        except UnicodeEncodeError:
            continue
        if "," not in value and bearer_token([(b"authorization", raw)]) == token and token:
            out[value] = user
    return out


class AuthenticationMiddleware:
    """Wraps ``app``; only authenticated requests (or anonymous ones on public paths) reach it."""

    def __init__(self, app: ASGIApp, *, tokens: Mapping[str, User]) -> None:
        self.app = app
        self.tokens = dict(tokens)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        user = authenticate(self.tokens, scope.get("headers", ()), scope.get("path", ""))
        if user is None:
            await send_error(send, Unauthorized("Unauthorized"))
            return
        scope[USER_SCOPE_KEY] = user
        await self.app(scope, receive, send)


def _with_authenticated(user: User) -> User:
    if AUTHENTICATED in user.groups:
        return user
    return User(user.name, user.uid, (*user.groups, AUTHENTICATED), user.extra)


def load_token_file(path: Path) -> dict[str, User]:
    """Parse a ``--token-auth-file`` (``token,user,uid[,"g1,g2"]`` per line) into token -> user."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise InternalError(f"Internal error occurred: cannot read token file {path}: {exc}") from exc
    users: dict[str, User] = {}
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 3:
            raise InternalError(f"Internal error occurred: {path}:{lineno}: want token,user,uid[,groups]")
        token, name, uid = (c.strip() for c in row[:3])
        groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
        users[token] = _with_authenticated(User(name=name, uid=uid, groups=groups))
    return users


def ensure_token_file(
    path: Path,
    *,
    identities: Iterable[tuple[str, tuple[str, ...]]] = (
        (ADMIN_USER, (MASTERS,)),
        (CONTROLLER_MANAGER_USER, ()),
    ),
    new_token: Callable[[], str] = lambda: secrets.token_urlsafe(32),
) -> dict[str, str]:
    """Make sure ``path`` holds a token for each ``(user, groups)``; returns user name -> token.

    Existing tokens are kept (so kubeconfigs written earlier stay valid); missing identities are added,
    the file replaced atomically and durably (mode 0600): after a crash it holds the old lines or all
    the new ones.
    """
    have: dict[str, str] = {}
    before = b""
    if path.exists():
        have = {user.name: token for token, user in load_token_file(path).items()}
        before = path.read_bytes()
        if before and not before.endswith(b"\n"):
            before += b"\n"
    missing = [(name, groups) for name, groups in identities if name not in have]
    if not missing:
        return have
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for name, groups in missing:
        token = new_token()
        writer.writerow([token, name, name, ",".join(groups)])
        have[name] = token
    try:
        # The whole file again, replaced atomically: an append killed half-way would leave a last line
        # that is a truncated token or group list (an admin without system:masters), or none at all.
        write_atomically(path, before + out.getvalue().encode(), mode=0o600)
    except OSError as exc:
        raise InternalError(f"Internal error occurred: cannot write token file {path}: {exc}") from exc
    return have
