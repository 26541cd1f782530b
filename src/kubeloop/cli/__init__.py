"""The ``kubeloop`` command."""

from kubeloop.cli._main import main

__all__ = ["main"]
