"""Writing the kubeconfig files ``kubeloop up`` hands to clients.

``write_kubeconfig`` writes one cluster (server URL and the CA as ``certificate-authority-data``), one
user (a bearer token), and one context ``kubeloop`` with namespace ``default``, selected as the
current context; a file that already holds that very text (mode 0600) is left as it is. Otherwise the
file is replaced atomically and durably (:func:`kubeloop._files.write_atomically`:
a temporary file in the same directory, fsync, rename, fsync of the directory) with mode 0600, so a
client never reads half a file, a crash or power cut leaves the old file or the new one, and no other
user can read the token.

The text is YAML written by hand: every scalar is emitted as a JSON string, which is a valid YAML
double-quoted scalar, so no YAML library is needed on the start-up path. :func:`read_kubeconfig`
reads back only a file this module wrote (it must re-render to the very same text), which lets the
controller manager forked by ``kubeloop up`` connect without loading a general kubeconfig parser.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from pathlib import Path

from kubeloop._files import write_atomically

__all__ = ["CONTEXT", "OwnKubeconfig", "read_kubeconfig", "server_url", "write_kubeconfig"]

CONTEXT = "kubeloop"


def server_url(address: str, port: int) -> str:
    """The https URL clients should use for a server bound to ``address:port``."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(address, address)
    if ":" in host:
        host = f"[{host}]"
    return f"https://{host}:{port}"


@dataclass(frozen=True, slots=True)
class OwnKubeconfig:
    server: str
    ca_pem: bytes
    user: str
    token: str


def write_kubeconfig(path: Path, *, server: str, ca_pem: bytes, user: str, token: str) -> None:
    """Write the file, unless it already holds exactly this text with mode 0600 (a restart on the same
    address: no rename and no fsyncs on the start-up path)."""
    data = _render(server=server, ca_pem=ca_pem, user=user, token=token).encode()
    try:
        if path.stat().st_mode & 0o777 == 0o600 and path.read_bytes() == data:
            return
    except OSError:  # absent or unreadable: written below, which reports what is wrong
        pass
    write_atomically(path, data, mode=0o600)


_FIELDS = {
    "server": re.compile(r'^    server: ("[^\n]*")$', re.M),
    "ca": re.compile(r'^    certificate-authority-data: ("[^\n]*")$', re.M),
    "user": re.compile(r'^- name: ("[^\n]*")\n  user:$', re.M),
    "token": re.compile(r'^    token: ("[^\n]*")$', re.M),
}


def read_kubeconfig(path: Path) -> OwnKubeconfig | None:
    """What :func:`write_kubeconfig` put in ``path``; ``None`` for any other file (or none)."""
    try:
        text = path.read_text()
        values = {name: json.loads(m.group(1)) for name, pattern in _FIELDS.items() if (m := pattern.search(text))}
        if len(values) != len(_FIELDS) or not all(isinstance(v, str) for v in values.values()):
            return None
        own = OwnKubeconfig(values["server"], base64.b64decode(values["ca"], validate=True), values["user"], values["token"])
    except (OSError, ValueError, binascii.Error):
        return None
    same = _render(server=own.server, ca_pem=own.ca_pem, user=own.user, token=own.token) == text
    return own if same else None


def _render(*, server: str, ca_pem: bytes, user: str, token: str) -> str:
    q = json.dumps
    ca = base64.b64encode(ca_pem).decode()
    return f"""apiVersion: v1
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
