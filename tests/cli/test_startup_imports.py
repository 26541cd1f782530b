"""What ``kubeloop up``'s controller manager imports before it is ready stays lean.

The controller manager (``cli/_controller_manager.py``) imports the client, the runtime and the
controllers while the API server starts; nothing among them may pull in PyYAML (only a kubeconfig that
is not kubeloop's own needs it, when it is read) or httpcore (the client has its own HTTP transport).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kubeloop.client import ConfigError, load_kubeconfig


def test_the_client_runtime_and_controllers_import_neither_yaml_nor_httpcore() -> None:
    code = (
        "import sys; from kubeloop.cli._controller_manager import skip_unused_imports; skip_unused_imports();"
        "import kubeloop.client, kubeloop.runtime, kubeloop.controllers;"
        "loaded = [m for m in ('yaml', 'httpcore', 'h11', 'anyio') if m in sys.modules];"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_kubeconfig_that_is_not_yaml_is_still_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("clusters: [unclosed\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_kubeconfig(path)


def test_importing_the_command_loads_no_server_client_tls_or_http_library() -> None:
    # ``kubeloop up`` forks its controller manager right after this import (and the few modules both
    # processes share): whatever it pulls in is paid by both processes, one after the other, before
    # either can start. Each command imports what it needs when it runs.
    heavy = (
        "uvicorn", "httpx", "httptools", "cryptography", "kubernetes", "yaml", "prometheus_client", "sqlite3",
        "kubeloop.server", "kubeloop.store", "kubeloop.client", "kubeloop.runtime", "kubeloop.controllers",
        "kubeloop.api",
        # Nor asyncio (and ssl with it): kubeloop up forks its TLS child before its shared imports (start-up
        # round 10), and every import before that fork delays the child.
        "asyncio", "ssl",
    )  # fmt: skip
    code = f"import sys, kubeloop.cli; loaded = [m for m in {heavy!r} if m in sys.modules]; assert not loaded, loaded"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_api_server_imports_neither_yaml_nor_cel() -> None:
    # The server process of ``kubeloop up``: /openapi/v2 is built on its first request (and PyYAML only for
    # its protobuf's vendor extensions), CEL (with its CLI and prompt_toolkit) only for CRDs with validation rules; both are
    # imported when first needed, never by start-up.
    code = ("import sys, kubeloop.server, kubeloop.cli._cluster, kubeloop.cli._bootstrap;"
            "loaded = [m for m in ('yaml', 'cel', 'prompt_toolkit', 'kubeloop.server._openapi_v2') if m in sys.modules];"
            "assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


# What neither process of ``kubeloop up`` needs before the first request that uses it (start-up round 7):
# the protobuf body decoder (a protobuf request body), and the strategies of pods, the pod-template owners
# and volumes with the validation they run (the first write of such a kind; start-up writes none).
NOT_AT_START_UP = (
    "kubeloop.api._protobuf", "kubeloop.api._protobuf_schema", "kubeloop.api._protobuf_wire",
    "kubeloop.server._pod_strategy", "kubeloop.server._workload_strategy", "kubeloop.server._volume_strategy",
    "kubeloop.api._pod_spec_validation", "kubeloop.api._pod_container_validation", "kubeloop.api._daemonset_validation",
    "kubeloop.api._job_validation", "kubeloop.api._statefulset_validation", "kubeloop.api._pvc_validation",
)  # fmt: skip


def test_the_api_server_start_up_imports_no_pod_validation_and_no_protobuf_decoder() -> None:
    code = ("import sys, kubeloop.cli, kubeloop.server, kubeloop.cli._cluster, kubeloop.cli._bootstrap, kubeloop.cli._serving;"
            f"loaded = [m for m in {NOT_AT_START_UP!r} if m in sys.modules]; assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_controller_manager_imports_no_protobuf_decoder_and_no_server_strategy() -> None:
    code = ("import sys; from kubeloop.cli._controller_manager import skip_unused_imports; skip_unused_imports();"
            "import kubeloop.client, kubeloop.runtime, kubeloop.controllers;"
            f"loaded = [m for m in {NOT_AT_START_UP!r} if m in sys.modules]; assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_kubeloop_up_imports_no_asyncio_before_its_tls_child_forks() -> None:
    # The TLS child (start-up round 10) is forked once the data directory is locked and the socket bound,
    # by kubeloop.cli._cluster: what that needs must not delay the fork with asyncio's 20 ms of imports.
    code = ("import sys, kubeloop.cli, kubeloop.cli._cluster, kubeloop.cli._tls_child, kubeloop._tls;"
            "loaded = [m for m in ('asyncio', 'ssl', 'concurrent.futures', 'cryptography') if m in sys.modules];"
            "assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_what_kubeloop_up_imports_before_the_fork_loads_no_zoneinfo_jsonpatch_or_protobuf_decoder() -> None:
    # Both processes wait for what is imported before the fork (``cli._child.SHARED_IMPORTS``): a time zone
    # is loaded when a CronJob needs one, jsonpatch by the first JSON patch, the decoder by a protobuf body.
    code = ("import sys, importlib, kubeloop.cli; from kubeloop.cli._child import SHARED_IMPORTS;"
            "[importlib.import_module(name) for name in SHARED_IMPORTS];"
            "loaded = [m for m in ('zoneinfo', 'jsonpatch', 'jsonpointer', 'kubeloop.api._protobuf') if m in sys.modules];"
            "assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("process", [  # each process's imports, and uvloop, on which each runs its event loop
    "import uvloop, kubeloop.server, kubeloop.cli._cluster, kubeloop.cli._bootstrap, kubeloop.cli._serving",
    "from kubeloop.cli._controller_manager import skip_unused_imports; skip_unused_imports();"
    "import uvloop, kubeloop.client, kubeloop.runtime, kubeloop.controllers",
], ids=["api-server", "controller-manager"])  # fmt: skip
def test_each_shared_import_is_one_both_processes_make(process: str) -> None:
    # kubeloop up imports SHARED_IMPORTS before it forks, so that the two processes do not each import them
    # after: a module only one of them needs belongs to that one alone.
    code = (f"import sys; {process}; from kubeloop.cli._child import SHARED_IMPORTS;"
            "missing = [m for m in SHARED_IMPORTS if m not in sys.modules]; assert not missing, missing")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_building_the_controller_managers_controllers_loads_no_zone_database() -> None:
    # The CronJob controller finds its local zone (Go's time.Local) on first use, and the queues' and
    # controllers' metric series are made on first use or collection (start-up round 8): building the
    # manager and its controllers, on both starts' critical path, does neither.
    code = """
import asyncio, sys
from kubeloop.cli._controller_manager import _builtin_controllers, skip_unused_imports
skip_unused_imports()
from kubeloop.client import Client

async def build():
    manager, controllers = _builtin_controllers(Client.from_url("https://127.0.0.1:1", token="t"), 5.0)
    assert len(controllers) > 20 and manager.metrics.pending.pending

asyncio.run(build())
assert "zoneinfo" not in sys.modules
"""
    subprocess.run([sys.executable, "-c", code], check=True)
