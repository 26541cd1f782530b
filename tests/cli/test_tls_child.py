"""The TLS child of ``kubeloop up`` (``cli/_tls_child.py``): it makes a first start's material, and decides nothing.

Each scenario runs in a fresh interpreter (a fork is only safe, and only made, in a process with one
thread): the child makes exactly what ``ensure_tls`` would; a process with material already, or with a
second thread, forks nothing; a child that fails leaves the parent's own ``ensure_tls`` to make the
material, as a start without the child does. End to end (kubectl and the ``kubernetes`` client through a
first start's kubeconfig, and a server process that never loads ``cryptography``):
``tests/e2e/test_up_tls_material.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kubeloop._tls import ensure_tls, needs_making

_PRELUDE = """
import json, sys, threading
from pathlib import Path
from kubeloop._tls import ensure_tls, needs_making, server_ssl_context
from kubeloop.cli._tls_child import fork_tls_material

data_dir = Path(sys.argv[1])

class Closed:
    closed = False
    def close(self):
        Closed.closed = True

class Fails:
    def close(self):
        raise RuntimeError("the child fails before it makes anything")
"""


def _run(script: str, data_dir: Path) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", _PRELUDE + script, str(data_dir)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, object] = json.loads(result.stdout)
    return answer


def test_the_child_makes_the_material_and_the_parent_loads_no_cryptography(tmp_path: Path) -> None:
    seen = _run("""
child = fork_tls_material(data_dir, address="127.0.0.1", close_in_child=[Closed()])
code = child.wait()
made = not needs_making(data_dir, address="127.0.0.1")
material = ensure_tls(data_dir, address="127.0.0.1")  # reads what the child made
server_ssl_context(material)  # the key and the certificate belong together
print(json.dumps({"code": code, "again": child.wait(), "made": made, "closed_here": Closed.closed,
                  "cryptography": "cryptography" in sys.modules, "sans": list(material.sans)}))
""", tmp_path)
    assert seen == {
        "code": 0, "again": 0, "made": True, "closed_here": False, "cryptography": False,
        "sans": ["localhost", "127.0.0.1", "::1"],
    }  # fmt: skip


def test_nothing_is_forked_when_the_material_is_there_or_the_process_has_threads(tmp_path: Path) -> None:
    ensure_tls(tmp_path / "made")
    seen = _run("""
present = fork_tls_material(data_dir / "made", address="127.0.0.1", close_in_child=[])
other_address = fork_tls_material(data_dir / "made", address="10.1.2.3", close_in_child=[])
other_code = other_address.wait() if other_address is not None else None
stop = threading.Event()
thread = threading.Thread(target=stop.wait)
thread.start()
threaded = fork_tls_material(data_dir / "empty", address="127.0.0.1", close_in_child=[])
stop.set()
thread.join()
print(json.dumps({"present": present is None, "other_address": other_code, "threaded": threaded is None,
                  "empty_still_empty": needs_making(data_dir / "empty", address="127.0.0.1")}))
""", tmp_path)
    # A new bind address re-issues the serving certificate, so that start forks a child too.
    assert seen == {"present": True, "other_address": 0, "threaded": True, "empty_still_empty": True}
    assert "10.1.2.3" in (tmp_path / "made" / "pki" / "apiserver.sans").read_text().split()


def test_a_child_that_fails_leaves_the_material_to_the_parent(tmp_path: Path) -> None:
    seen = _run("""
child = fork_tls_material(data_dir, address="127.0.0.1", close_in_child=[Fails()])
code = child.wait()
missing = needs_making(data_dir, address="127.0.0.1")
material = ensure_tls(data_dir, address="127.0.0.1")  # what kubeloop up does after waiting: makes it all
server_ssl_context(material)
print(json.dumps({"code": code, "missing": missing, "made": not needs_making(data_dir, address="127.0.0.1")}))
""", tmp_path)
    assert seen == {"code": 1, "missing": True, "made": True}


def test_needs_making_follows_each_file_and_the_serving_names(tmp_path: Path) -> None:
    assert needs_making(tmp_path)
    ensure_tls(tmp_path, address="127.0.0.1")
    assert not needs_making(tmp_path, address="127.0.0.1")
    assert not needs_making(tmp_path, address="localhost")  # a name the certificate carries already
    assert needs_making(tmp_path, address="10.1.2.3")
    pki = tmp_path / "pki"
    for name in ("apiserver.sans", "apiserver.key", "ca.crt"):
        saved = (pki / name).read_bytes()
        (pki / name).unlink()
        assert needs_making(tmp_path, address="127.0.0.1"), name
        (pki / name).write_bytes(saved)
    assert not needs_making(tmp_path, address="127.0.0.1")
