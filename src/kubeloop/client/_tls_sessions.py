"""TLS session resumption for the client's connections: the last ticket a server name gave, offered again.

Contract: :func:`tls_sessions` returns the :class:`TlsSessions` of one ``ssl.SSLContext`` (made on first
use; every transport sharing the context shares it). Once made, every client-side handshake of that context
that is not given a session explicitly offers the session last remembered for its server name
(:meth:`TlsSessions.remember`, with the ``ssl.SSLObject`` of a connection whose handshake is done and which
has received a response, so TLS 1.3's tickets, sent after the handshake, have arrived). Only sessions that
carry a ticket are kept, one per server name, replaced by the newer: by that of any connection whose
handshake was a full one (the kept session could not be resumed, or there was none), and otherwise at most
once every :data:`REFRESH_SECONDS` of the injected clock. Reading a connection's session costs about 0.2 ms
(CPython copies it through its DER encoding, certificate chain included): reading it for each of a
controller manager's forty starting connections, all of which resume the same kept session, was about 8 ms
of its first sync (start-up round 10).

Why and what it costs nothing in trust: a controller manager opens some forty connections to one API server
as it starts (one per watch, HTTP/1.1), each a full handshake that verifies the server's chain and
signature (about 0.2 ms of the client's CPU each on OpenSSL 3.0 beside the key exchange, measured). A
resumed TLS 1.3 handshake (RFC 8446 section 2.2, ``psk_dhe_ke``: a new key exchange still runs) proves the
server holds the key of a session that an earlier, fully verified handshake to the same server name
established; a server that cannot decrypt the ticket (another server, one restarted, an expired ticket)
simply answers with a full handshake, verified as always. Go's ``crypto/tls`` client does the same when
given a ``ClientSessionCache`` (keyed by server name too).

The context's ``wrap_bio`` is wrapped on the instance: asyncio's and uvloop's TLS transports both make
their ``SSLObject`` through it and take no session argument of their own.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from typing import Any

__all__ = ["REFRESH_SECONDS", "TlsSessions", "tls_sessions"]

_ATTRIBUTE = "_kubeloop_tls_sessions"
# How long a kept session that connections keep resuming is offered before a newer one replaces it.
REFRESH_SECONDS = 60.0


class TlsSessions:
    """The resumable session of each server name of one context (see the module's contract)."""

    def __init__(self, context: ssl.SSLContext, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._sessions: dict[str, ssl.SSLSession] = {}
        self._kept_at: dict[str, float] = {}
        self._clock = clock
        wrap = context.wrap_bio
        sessions = self._sessions

        def wrap_bio(incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO, server_side: bool = False,
                     server_hostname: str | None = None, session: ssl.SSLSession | None = None) -> ssl.SSLObject:
            if session is None and not server_side and server_hostname is not None:
                session = sessions.get(server_hostname)
            return wrap(incoming, outgoing, server_side, server_hostname, session)

        setattr(context, "wrap_bio", wrap_bio)  # noqa: B010 (mypy: a method cannot be assigned)

    def remember(self, ssl_object: Any) -> None:
        """Keep the session of a finished client handshake (an ``ssl.SSLObject``), if it can be resumed."""
        if not isinstance(ssl_object, ssl.SSLObject) or ssl_object.server_side:
            return
        name = ssl_object.server_hostname
        if name is None:
            return
        now = self._clock()
        if ssl_object.session_reused and name in self._sessions and now - self._kept_at[name] < REFRESH_SECONDS:
            return  # it resumed the kept session, which is fresh enough: not worth reading this one's
        session = ssl_object.session
        if session is not None and session.has_ticket:
            self._sessions[name] = session
            self._kept_at[name] = now

    def session_for(self, server_hostname: str) -> ssl.SSLSession | None:
        """The session the next handshake to ``server_hostname`` will offer, if any."""
        return self._sessions.get(server_hostname)


def tls_sessions(context: ssl.SSLContext, *, clock: Callable[[], float] = time.monotonic) -> TlsSessions:
    """The :class:`TlsSessions` of ``context``, made (with ``clock``; its handshakes hooked) on first use."""
    found = getattr(context, _ATTRIBUTE, None)
    if isinstance(found, TlsSessions):
        return found
    made = TlsSessions(context, clock=clock)
    setattr(context, _ATTRIBUTE, made)
    return made
