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
