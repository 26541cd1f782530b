"""What ``kubeloop up`` has done by the time it answers its first request.

The kubeconfig files are written on a worker thread while the server opens its store and bootstraps;
they must still be in place, whole, before the first HTTP answer (even a ``/readyz`` 500), for that is
where a client or the controller manager reads the server's address and credentials.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

from kubeloop.cli._kubeconfig import read_kubeconfig


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _first_answer(port: int, deadline: float) -> bytes:
    """The status line of the first ``GET /readyz`` the server answers (it listens before it serves, so
    a connection made early waits in the TLS handshake until the server serves)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as raw, context.wrap_socket(raw) as tls:
                tls.sendall(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                answer = tls.recv(64)
                if answer.startswith(b"HTTP/1.1 "):
                    return answer.split(b"\r\n", 1)[0]
        except OSError:
            pass
        assert time.monotonic() < deadline, "kubeloop up never answered"
        time.sleep(0.005)


def test_both_kubeconfig_files_are_whole_before_the_first_request_is_answered(tmp_path: Path) -> None:
    for start in ("first start", "restart"):
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubeloop.cli", "up", "--port", str(port), "--data-dir", str(tmp_path)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            status = _first_answer(port, time.monotonic() + 60)
            for name in ("kubeconfig", "controller-manager.kubeconfig"):
                written = read_kubeconfig(tmp_path / name)
                assert written is not None, f"{start}: {name} missing or partial when the server answered {status!r}"
                assert written.server == f"https://127.0.0.1:{port}", start
        finally:
            proc.terminate()
            assert proc.wait(30) == 0
