"""``kubeloop``: the command-line entry point; each subcommand lives in its own module.

Importing this module imports only click and the subcommand modules' option declarations; every
command imports what it needs when it runs, so ``kubeloop --help`` and start-up stay fast.
"""

from __future__ import annotations

import click

from kubeloop import __version__
from kubeloop import _build as build
from kubeloop.cli._controller_manager import controller_manager
from kubeloop.cli._delete import delete
from kubeloop.cli._up import apiserver, up
from kubeloop.cli._webhook import webhook


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kubeloop", message=f"%(prog)s, version %(version)s ({build.describe()})")
def main() -> None:
    """kubeloop: an embedded Kubernetes-compatible control plane, a controller runtime and safety tools."""


main.add_command(up)
main.add_command(apiserver)
main.add_command(controller_manager)
main.add_command(delete)
main.add_command(webhook)
