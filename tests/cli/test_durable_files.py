"""kubeloop up's files (CA and serving pair, tokens, kubeconfigs, the ServiceAccount signing key) are written
atomically and durably: a temporary file in the same directory, fsync, rename, fsync of the directory.

A process killed at the worst moment (after the data is written, before the rename) leaves the old
file, or none and a ``.<name>.*.tmp`` beside it, never a truncated file; the next start reuses what is
whole and makes what is missing. The crash is real: a child process SIGKILLs itself in its first
fsync of the file under test.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kubeloop import _files
from kubeloop.cli._kubeconfig import read_kubeconfig, write_kubeconfig
from kubeloop.server import ensure_tls, ensure_token_file, load_token_file, server_ssl_context
from kubeloop.server._service_account_tokens import load_signing_key

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def make_all(data: Path, *, url: str = "https://127.0.0.1:6443") -> None:
    """What kubeloop up writes on a first start, in its order."""
    tls = ensure_tls(data)
    tokens = ensure_token_file(data / "tokens.csv")
    write_kubeconfig(data / "kubeconfig", server=url, ca_pem=tls.ca_pem, user="kubernetes-admin",
                     token=tokens["kubernetes-admin"])
    load_signing_key(data / "pki" / "sa.key")


def test_every_file_is_flushed_before_its_rename_and_its_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(_files.os, "fsync", recording_fsync)
    data = tmp_path / "data"
    make_all(data)
    monkeypatch.undo()
    pki = data / "pki"
    files = [pki / "ca.key", pki / "ca.crt", pki / "apiserver.key", pki / "apiserver.crt", pki / "apiserver.sans",
             data / "tokens.csv", data / "kubeconfig", pki / "sa.key"]
    for path in files:
        temp = next(i for i, name in enumerate(synced) if Path(name).parent == path.parent
                    and Path(name).name.startswith(f".{path.name}.") and name.endswith(".tmp"))
        assert str(path.parent) in synced[temp + 1:], f"{path.name}: directory not flushed after the rename"
    assert str(tmp_path) in synced and str(data) in synced  # the new directories' entries too
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in files}
    assert modes == {"ca.key": 0o600, "ca.crt": 0o644, "apiserver.key": 0o600, "apiserver.crt": 0o644,
                     "apiserver.sans": 0o644, "tokens.csv": 0o600, "kubeconfig": 0o600, "sa.key": 0o600}
    assert not [p for p in (*data.iterdir(), *pki.iterdir()) if p.name.endswith(".tmp")]


CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    target = sys.argv[1]
    real_fsync = os.fsync
    def fsync(fd):
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        if name.startswith("." + target + "."):
            os.kill(os.getpid(), signal.SIGKILL)  # written, not yet renamed: the worst moment
        real_fsync(fd)
    os.fsync = fsync
    exec(sys.argv[2])
""")


def crash_while_writing(target: str, code: str, data: Path) -> None:
    """Run ``code`` in a child process that is killed in its first fsync of a temporary ``target``."""
    result = subprocess.run([sys.executable, "-c", CHILD, target, code + "\nraise SystemExit(3)"],
                            env={**os.environ, "DATA": str(data)}, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert [p.name for p in data.rglob(f".{target}.*.tmp")], "the child died before its temporary file"


def test_a_first_start_killed_writing_the_ca_key_leaves_no_key_and_the_next_start_makes_one(tmp_path: Path) -> None:
    crash_while_writing("ca.key", "from kubeloop.server import ensure_tls; ensure_tls(Path(os.environ['DATA']))", tmp_path)
    assert not (tmp_path / "pki" / "ca.key").exists() and not (tmp_path / "pki" / "ca.crt").exists()
    material = ensure_tls(tmp_path)
    server_ssl_context(material)  # whole: the key and its certificate load together
    assert material.ca_cert.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")


def test_a_serving_pair_killed_half_way_is_issued_again_not_mismatched(tmp_path: Path) -> None:
    ensure_tls(tmp_path, address="0.0.0.0")  # a wildcard bind: the certificate also names the host
    # A later start on 127.0.0.1 needs no new certificate; one on 10.1.2.3 does, and dies between its key
    # and its certificate.
    crash_while_writing("apiserver.crt",
                        "from kubeloop.server import ensure_tls; ensure_tls(Path(os.environ['DATA']), address='10.1.2.3')",
                        tmp_path)
    again = ensure_tls(tmp_path, address="127.0.0.1")  # names a subset of the old SANs: still re-issued
    server_ssl_context(again)


def test_a_kubeconfig_rewrite_killed_half_way_leaves_the_old_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, server="https://127.0.0.1:6443", ca_pem=CA, user="kubernetes-admin", token="old")
    crash_while_writing("kubeconfig", textwrap.dedent("""
        from kubeloop.cli._kubeconfig import write_kubeconfig
        write_kubeconfig(Path(os.environ['DATA']) / 'kubeconfig', server='https://127.0.0.1:7443',
                         ca_pem=b'x', user='kubernetes-admin', token='new')
    """), tmp_path)
    own = read_kubeconfig(path)
    assert own is not None and (own.server, own.token) == ("https://127.0.0.1:6443", "old")


def test_a_token_file_update_killed_half_way_keeps_every_old_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    admin = ensure_token_file(path, identities=[("kubernetes-admin", ("system:masters",))])
    before = path.read_bytes()
    crash_while_writing("tokens.csv", "from kubeloop.server import ensure_token_file; "
                                      "ensure_token_file(Path(os.environ['DATA']) / 'tokens.csv')", tmp_path)
    assert path.read_bytes() == before
    both = ensure_token_file(path)
    assert both["kubernetes-admin"] == admin["kubernetes-admin"] and "system:kube-controller-manager" in both
    users = {user.name: user for user in load_token_file(path).values()}
    assert "system:masters" in users["kubernetes-admin"].groups


def test_a_signing_key_killed_half_way_is_made_again_then_kept(tmp_path: Path) -> None:
    crash_while_writing("sa.key", "from kubeloop.server._service_account_tokens import load_signing_key; "
                                  "load_signing_key(Path(os.environ['DATA']) / 'pki' / 'sa.key')", tmp_path)
    path = tmp_path / "pki" / "sa.key"
    assert not path.exists()
    made = load_signing_key(path)
    assert load_signing_key(path).private_numbers() == made.private_numbers()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
