"""A limited identity for the RBAC tests against ``kubeloop up``: the service account ``team/robot``, its own token.

``kubeloop up`` keeps the identities of an existing ``tokens.csv`` in its data directory and adds its
own (docs/cli.md), so a test writes the robot's line (:func:`write_robot_token`) before it starts the
server, then acts as the robot through a kubeconfig of its own (:func:`robot_kubeconfig`): with the
official client, or with ``kubectl auth can-i`` (:func:`kubectl_can_i`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROBOT = "system:serviceaccount:team:robot"
ROBOT_GROUPS = "system:serviceaccounts,system:serviceaccounts:team,system:authenticated"


def write_robot_token(data: Path, token: str) -> None:
    """The robot's line in ``data/tokens.csv`` (the server's static token file)."""
    (data / "tokens.csv").write_text(f'{token},{ROBOT},robot-uid,"{ROBOT_GROUPS}"\n')


def robot_kubeconfig(server: Any, path: Path, token: str) -> Path:
    """The server's admin kubeconfig with the robot's token as its user, written to ``path``."""
    doc = yaml.safe_load(server.kubeconfig.read_text())
    doc["users"][0]["user"] = {"token": token}
    path.write_text(yaml.safe_dump(doc))
    return path


def kubectl_can_i(kubeconfig: Path, home: Path) -> Callable[..., str]:
    """``can_i(verb, resource)``: what ``kubectl auth can-i VERB RESOURCE -n team`` prints ("yes"/"no") as
    the kubeconfig's user, with ``home`` as a fresh HOME and discovery cache."""
    env = {"HOME": str(home), "KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(home / "cache"),
           "PATH": "/usr/local/bin:/usr/bin:/bin"}  # fmt: skip

    def can_i(*args: str) -> str:
        done = subprocess.run(["kubectl", "auth", "can-i", *args, "-n", "team"], env=env, capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
        return done.stdout.strip()

    return can_i
