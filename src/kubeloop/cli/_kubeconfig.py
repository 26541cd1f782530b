"""Writing the kubeconfig files ``kubeloop up`` hands to clients.

``write_kubeconfig`` writes one cluster (server URL and the CA as ``certificate-authority-data``), one
user (a bearer token), and one context ``kubeloop`` with namespace ``default``, selected as the
current context. The file is replaced atomically (write to a temporary file, fsync, rename) with
mode 0600, so a client never reads half a file and no other user can read the token.

The text is YAML written by hand: every scalar is emitted as a JSON string, which is a valid YAML
double-quoted scalar, so no YAML library is needed on the start-up path.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

__all__ = ["CONTEXT", "server_url", "write_kubeconfig"]

CONTEXT = "kubeloop"


def server_url(address: str, port: int) -> str:
    """The https URL clients should use for a server bound to ``address:port``."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(address, address)
    if ":" in host:
        host = f"[{host}]"
    return f"https://{host}:{port}"


def write_kubeconfig(path: Path, *, server: str, ca_pem: bytes, user: str, token: str) -> None:
    q = json.dumps
    ca = base64.b64encode(ca_pem).decode()
    text = f"""apiVersion: v1
kind: Config
clusters:
- name: {q(CONTEXT)}
  cluster:
    server: {q(server)}
    certificate-authority-data: {q(ca)}
users:
- name: {q(user)}
  user:
    token: {q(token)}
contexts:
- name: {q(CONTEXT)}
  context:
    cluster: {q(CONTEXT)}
    user: {q(user)}
    namespace: "default"
current-context: {q(CONTEXT)}
preferences: {{}}
"""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
