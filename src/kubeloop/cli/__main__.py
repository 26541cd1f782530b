"""``python -m kubeloop.cli``: the ``kubeloop`` command (how ``kubeloop up`` starts its controller manager)."""

from kubeloop.cli import main

main(prog_name="kubeloop")
