"""A first start of ``kubeloop up`` makes its serving certificate while the rest of start-up goes on.

The TLS material and the kubeconfigs are written on worker threads, each file fsynced twice: the app is
built and bootstrapped meanwhile (it needs the token file, not the certificates), and the kubeconfigs,
which need only the CA, are written while the serving certificate is made (start-up round 8). The
subprocess below holds the serving certificate's making until both have happened: were either to wait
for the certificate again, the hold would never end and the check below would fail (the hold gives up
after a deadlock guard). kubectl then uses the kubeconfig of that start.

This is the path of a start that makes its TLS material itself: one embedded in a process with threads,
or (here, where the fork is turned off) one whose TLS child made nothing. With the child, the material
is made in another process before the server needs it (``tests/cli/test_tls_child.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_SCRIPT = r"""
import json, os, signal, sys, threading
from pathlib import Path

import kubeloop.cli._bootstrap as bootstrap_module
import kubeloop.cli._tls_child as tls_child
import kubeloop.server as server
from kubeloop.cli._cluster import ServeOptions, run

data_dir = Path(sys.argv[1])
bootstrapped = threading.Event()
seen = {}
real_bootstrap = bootstrap_module.bootstrap

async def bootstrap(app):
    await real_bootstrap(app)
    bootstrapped.set()

bootstrap_module.bootstrap = bootstrap
tls_child.fork_tls_material = lambda *args, **kwargs: None  # this process makes its material itself
real_ensure_tls = server.ensure_tls

def ensure_tls(directory, *, address):
    # Held until the app is bootstrapped and the kubeconfigs are written (30 s: a deadlock guard only).
    seen["bootstrapped"] = bootstrapped.wait(30)
    kubeconfigs = [directory / "controller-manager.kubeconfig", directory / "kubeconfig"]
    for _ in range(3000):
        if all(path.exists() for path in kubeconfigs):
            break
        threading.Event().wait(0.01)
    seen["kubeconfigs"] = [path.name for path in kubeconfigs if path.exists()]
    seen["serving_certificate_before"] = (directory / "pki" / "apiserver.crt").exists()
    return real_ensure_tls(directory, address=address)

server.ensure_tls = ensure_tls

def echo(line):
    if line.startswith("kubeloop is ready"):
        print(json.dumps(seen), flush=True)
        threading.Thread(target=lambda: (sys.stdin.read(), os.kill(os.getpid(), signal.SIGTERM)), daemon=True).start()

run(ServeOptions(data_dir, port=0, controllers=False), echo=echo)
"""


def test_the_app_and_the_kubeconfigs_do_not_wait_for_the_serving_certificate(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        _check(proc, tmp_path)


def _check(proc: subprocess.Popen[str], tmp_path: Path) -> None:
    try:
        assert proc.stdout is not None
        seen = json.loads(proc.stdout.readline())
        assert seen == {
            "bootstrapped": True,
            "kubeconfigs": ["controller-manager.kubeconfig", "kubeconfig"],
            "serving_certificate_before": False,
        }
        # The kubeconfig written before the serving certificate existed verifies that certificate.
        out = subprocess.run(
            ["kubectl", "--kubeconfig", str(tmp_path / "kubeconfig"), "get", "namespace", "kube-system", "-o", "name"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert out.stdout.strip() == "namespace/kube-system"
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        assert proc.wait(60) == 0
