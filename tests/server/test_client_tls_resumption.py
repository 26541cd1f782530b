"""The client resumes the TLS session of its first connection on the next ones, against kubeloop's real server.

A controller manager opens some forty connections as it starts (one per watch); each verified the server's
chain and signature again until start-up round 9 (about 5 M instructions of the client's per handshake,
callgrind). Now a new connection offers the ticket the last connection to that server name received
(``kubeloop.client._tls_sessions``), and the server, served by uvicorn with kubeloop's own TLS material,
resumes it. Trust is unchanged: a server that cannot resume the ticket (another one, or the same one
restarted) gets a full handshake, verified as before, so a server the CA did not sign is still refused.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import httpx
import pytest

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.client import Client
from kubeloop.client._tls_sessions import REFRESH_SECONDS, tls_sessions
from kubeloop.client._transport import HTTP11Transport
from kubeloop.server import App, ensure_tls

from ._uvicorn import serve

_CM = KindRegistry().by_kind("", "ConfigMap")
assert _CM is not None
CM: ResourceInfo = _CM


def _resumed(transport: HTTP11Transport) -> list[bool]:
    """Whether each pooled connection's handshake resumed a session, oldest first."""
    return [conn.ssl_object().session_reused for conns in transport._idle.values() for conn in conns]


async def test_the_clients_later_connections_resume_the_first_ones_session(real_app: App, tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path)
    async with serve(real_app, tls=tls) as url, Client.from_url(url, ca_file=str(tls.ca_cert)) as client:
        transport = client.transport
        assert isinstance(transport, HTTP11Transport)
        await client.create(CM, {"metadata": {"name": "seen"}, "data": {"a": "1"}}, namespace="default")
        assert _resumed(transport) == [False]  # the first handshake is a full one
        # Four requests at once: the kept-alive connection and three new ones, which resume its session.
        answers = await asyncio.gather(*(client.get(CM, "seen", namespace="default") for _ in range(4)))
        assert [a["data"] for a in answers] == [{"a": "1"}] * 4
        assert sorted(_resumed(transport)) == [False, True, True, True]


async def test_a_server_that_cannot_resume_gets_a_full_handshake_verified_as_before(
    real_app: App, tmp_path: Path
) -> None:
    trusted = ensure_tls(tmp_path / "trusted")
    other_ca = ensure_tls(tmp_path / "other")  # its own CA, which the client does not trust
    context = ssl.create_default_context(cafile=str(trusted.ca_cert))
    transport = HTTP11Transport(ssl_context=context)
    try:
        async with serve(real_app, tls=trusted) as url:
            first = await transport.handle_async_request(httpx.Request("GET", f"{url}/readyz"))
            await first.aread()
            assert first.status_code == 200
        session = tls_sessions(context).session_for("127.0.0.1")
        assert session is not None and session.has_ticket  # offered to every later handshake to 127.0.0.1
        # The same certificate, a new server (new ticket keys): a full handshake, and the request served.
        async with serve(real_app, tls=trusted) as url:
            again = await transport.handle_async_request(httpx.Request("GET", f"{url}/readyz"))
            await again.aread()
            assert again.status_code == 200
            assert _resumed(transport) == [False]
        # A server whose certificate the client's CA did not sign is refused, session or not.
        async with serve(real_app, tls=other_ca) as url:
            with pytest.raises(httpx.ConnectError, match="TLS failure"):
                await transport.handle_async_request(httpx.Request("GET", f"{url}/readyz"))
    finally:
        await transport.aclose()


async def test_a_kept_session_is_replaced_by_a_full_handshakes_at_once_and_by_a_resumed_ones_once_it_is_old(
    real_app: App, tmp_path: Path
) -> None:
    # Reading a connection's session costs about 0.2 ms (start-up round 10): connections that resume a kept
    # session younger than REFRESH_SECONDS (on the injected clock) leave it in place.
    tls = ensure_tls(tmp_path)
    now = [1000.0]
    context = ssl.create_default_context(cafile=str(tls.ca_cert))
    sessions = tls_sessions(context, clock=lambda: now[0])
    transport = HTTP11Transport(ssl_context=context)

    async def requests(count: int) -> None:
        async def one() -> None:
            answer = await transport.handle_async_request(httpx.Request("GET", f"{url}/readyz"))
            await answer.aread()
            assert answer.status_code == 200

        await asyncio.gather(*(one() for _ in range(count)))

    try:
        async with serve(real_app, tls=tls) as url:
            await requests(1)
            first = sessions.session_for("127.0.0.1")
            assert first is not None and _resumed(transport) == [False]
            now[0] += REFRESH_SECONDS - 1
            await requests(3)  # the idle connection and two new ones, which resume the kept session
            assert sorted(_resumed(transport)) == [False, True, True]
            assert sessions.session_for("127.0.0.1") is first  # young enough: kept, not read again
            now[0] += 1
            await requests(4)  # one more new connection, resumed, once the kept session is REFRESH_SECONDS old
            assert sorted(_resumed(transport)) == [False, True, True, True]
            second = sessions.session_for("127.0.0.1")
            assert second is not None and second is not first and second.has_ticket
        async with serve(real_app, tls=tls) as url:  # a new server: new ticket keys, a full handshake
            await requests(1)
            assert _resumed(transport) == [False]
            third = sessions.session_for("127.0.0.1")
            assert third is not None and third is not second  # replaced at once, whatever its age
    finally:
        await transport.aclose()
