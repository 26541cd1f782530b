"""A restart of ``kubeloop up`` parses the built-in schemas once it serves, before any write needs them.

A first start's bootstrap writes, so the built-in kinds' schemas (``kubeloop.api.definitions``, about 8 ms
of CPU) are parsed before it serves; a restart writes nothing before serving, and its first write used to
be the controller manager's, inside the first sync that ``/readyz`` waits for. Since start-up round 9 the
server parses them as soon as it serves, while it waits for the controller manager (still importing). The
subprocess below reports, right after ``kubeloop is ready``, whether they were parsed at serving and just
after (the parse is the loop's next callback); kubectl then creates and reads objects on the restarted
server, whose writes use those schemas (the typed decode, an unknown field dropped and warned about).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = r"""
import asyncio, json, os, signal, sys, threading
from pathlib import Path

import kubeloop.api._schemas as schemas
from kubeloop.cli._cluster import ServeOptions, run

seen = {}

def report():
    seen["parsed_after_serving"] = schemas._definitions is not None
    print(json.dumps(seen), flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), os.kill(os.getpid(), signal.SIGTERM)), daemon=True).start()

def echo(line):
    if line.startswith("kubeloop is ready"):
        seen["parsed_at_serving"] = schemas._definitions is not None
        asyncio.get_running_loop().call_soon(report)

run(ServeOptions(Path(sys.argv[1]), port=0, controllers=False), echo=echo)
"""


def _start(data_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(data_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def _report(proc: subprocess.Popen[str]) -> dict[str, bool]:
    assert proc.stdout is not None
    report: dict[str, bool] = json.loads(proc.stdout.readline())
    return report


def _stop(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    try:
        assert proc.wait(timeout=60) == 0
    finally:
        proc.stdout.close()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
def test_a_restart_parses_the_schemas_once_serving_and_its_writes_use_them(tmp_path: Path) -> None:
    first = _start(tmp_path)
    try:
        assert _report(first) == {"parsed_at_serving": True, "parsed_after_serving": True}  # the bootstrap's
    finally:
        _stop(first)
    restart = _start(tmp_path)
    try:
        assert _report(restart) == {"parsed_at_serving": False, "parsed_after_serving": True}
        kubectl = ["kubectl", "--kubeconfig", str(tmp_path / "kubeconfig")]
        env = dict(os.environ, HOME=str(tmp_path))
        manifest = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "after-restart", "namespace": "default"},
                               "data": {"a": "1"}, "extra": "dropped"})
        created = subprocess.run([*kubectl, "create", "--validate=warn", "-f", "-"], input=manifest,
                                 capture_output=True, text=True, env=env, timeout=120, check=False)
        assert created.returncode == 0, created.stderr
        assert 'unknown field "extra"' in created.stderr  # fieldValidation=Warn: the typed decode found it
        got = subprocess.run([*kubectl, "get", "configmap", "after-restart", "-n", "default", "-o", "json"],
                             capture_output=True, text=True, env=env, timeout=120, check=True)
        obj = json.loads(got.stdout)
        assert obj["data"] == {"a": "1"} and "extra" not in obj
    finally:
        _stop(restart)
