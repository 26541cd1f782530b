"""``kubeloop up`` and ``kubeloop apiserver``: the embedded control plane from one command.

The options and defaults are the command-line contract of DESIGN.md (tests outside the repository
rely on them): ``--data-dir ./.kubeloop``, ``--address 127.0.0.1``, ``--port 6443`` (``0`` picks a free
port), ``--no-controllers``. Start-up failures exit 1 with ``Error: <one-line reason>``; a clean
shutdown on SIGTERM or SIGINT exits 0. Heavy imports happen only once a command runs.
"""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["apiserver", "up"]


def _options(func: click.decorators.FC) -> click.decorators.FC:
    func = click.option(
        "--port", default=6443, show_default=True, type=click.IntRange(0, 65535),
        help="HTTPS port; 0 picks a free one.",
    )(func)  # fmt: skip
    func = click.option(
        "--address", default="127.0.0.1", show_default=True, help="Address to listen on."
    )(func)
    func = click.option(
        "--data-dir", default="./.kubeloop", show_default=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="Where the database, certificates, credentials and kubeconfig live.",
    )(func)  # fmt: skip
    return func


def _echo(line: str) -> None:
    click.echo(line)


def _run(data_dir: Path, address: str, port: int, *, controllers: bool) -> None:
    from kubeloop.cli._cluster import ServeOptions, StartupError, run

    try:
        run(ServeOptions(data_dir=data_dir, address=address, port=port, controllers=controllers), echo=_echo)
    except StartupError as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:
        pass


@click.command()
@_options
@click.option("--no-controllers", is_flag=True, help="Run only the API server, without the controller manager.")
def up(data_dir: Path, address: str, port: int, no_controllers: bool) -> None:
    """Run the embedded cluster: the API server and the controller manager.

    On first start this creates, under DATA_DIR, the SQLite database, a CA and serving
    certificate, an admin credential and DATA_DIR/kubeconfig. Restarting on the same directory
    keeps every object. Stop with Ctrl-C or SIGTERM.
    """
    _run(data_dir, address, port, controllers=not no_controllers)


@click.command()
@_options
def apiserver(data_dir: Path, address: str, port: int) -> None:
    """Run only the API server (HTTPS, RBAC, SQLite store), without controllers."""
    _run(data_dir, address, port, controllers=False)
