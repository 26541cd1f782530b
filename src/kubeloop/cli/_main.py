"""``kubeloop``: the command-line entry point; subcommands are added by their own modules."""

from __future__ import annotations

import click

from kubeloop import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kubeloop")
def main() -> None:
    """kubeloop: an embedded Kubernetes-compatible control plane, a controller runtime and safety tools."""
