"""``kubeloop webhook``: deletion protection for real clusters, as a ValidatingAdmissionWebhook over TLS.

It serves :func:`kubeloop.server.protection_webhook_app` (the same decision function as kubeloop's
built-in admission plugin): ``POST`` an ``admission.k8s.io/v1`` AdmissionReview to ``/validate``
and the answer allows the request, or denies a DELETE of an object annotated
``kubeloop.dev/protect: "true"`` that carries no approval from ``kubeloop delete --confirm``
(status 403 with the message naming the two steps). ``GET /healthz`` answers 200.

TLS: ``--cert-dir`` holding ``tls.crt`` and ``tls.key`` (a mounted Secret of type kubernetes.io/tls)
is used as is; otherwise a CA and a serving certificate are made there once (``pki/``), and the CA
is what the webhook configuration's ``caBundle`` must carry (``--print-config`` prints one).
It prints ``kubeloop webhook is serving at https://ADDR:PORT/validate`` once it accepts requests,
and stops cleanly (exit 0) on SIGTERM or SIGINT.
"""

from __future__ import annotations

import base64
import json
import signal
import socket
from pathlib import Path
from typing import Any

import click

__all__ = ["webhook", "webhook_configuration"]

READY_PREFIX = "kubeloop webhook is serving at "


def webhook_configuration(*, url: str, ca_pem: bytes, name: str = "kubeloop-deletion-protection") -> dict[str, Any]:
    """A ValidatingWebhookConfiguration sending every DELETE to ``url`` (failurePolicy Fail)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": "protect.kubeloop.dev",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 5,
            "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
            "rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"],
                       "operations": ["DELETE"], "scope": "*"}],
        }],
    }  # fmt: skip


def _tls(cert_dir: Path, address: str) -> tuple[Path, Path, Path | None]:
    cert, key = cert_dir / "tls.crt", cert_dir / "tls.key"
    if cert.exists() and key.exists():
        ca = cert_dir / "ca.crt"
        return cert, key, ca if ca.exists() else None
    from kubeloop.server import ensure_tls

    material = ensure_tls(cert_dir, address=address)
    return material.cert, material.key, material.ca_cert


@click.command()
@click.option("--port", default=9443, show_default=True, type=click.IntRange(0, 65535),
              help="HTTPS port; 0 picks a free one.")
@click.option("--address", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--cert-dir", default="./.kubeloop-webhook", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="tls.crt and tls.key to serve with; made (with a CA in pki/) when missing.")
@click.option("--print-config", "print_url", default=None, metavar="URL",
              help="Print a ValidatingWebhookConfiguration (JSON) for the webhook reachable at URL, and exit.")
def webhook(port: int, address: str, cert_dir: Path, print_url: str | None) -> None:
    """Serve kubeloop's deletion protection to a real cluster (ValidatingAdmissionWebhook, AdmissionReview v1)."""
    from kubeloop.api import ApiError

    try:
        cert_dir.mkdir(parents=True, exist_ok=True)
        cert, key, ca = _tls(cert_dir, address)
    except (OSError, ApiError) as exc:
        raise click.ClickException(f"cannot prepare TLS material in {cert_dir}: {exc}") from None
    if print_url is not None:
        if ca is None:
            raise click.ClickException(f"no ca.crt in {cert_dir}: the caBundle is unknown")
        click.echo(json.dumps(webhook_configuration(url=print_url, ca_pem=ca.read_bytes()), indent=2))
        return
    from kubeloop.cli._cluster import StartupError, _bind

    try:
        sock = _bind(address, port)
    except StartupError as exc:
        raise click.ClickException(str(exc)) from None
    import asyncio  # here, not at the top: every ``kubeloop`` command imports this module (``_main``)

    try:
        asyncio.run(_serve(sock, cert, key, ca))
    finally:
        sock.close()


async def _serve(sock: socket.socket, cert: Path, key: Path, ca: Path | None) -> None:
    import asyncio

    from kubeloop.cli._cluster import _uvicorn_server
    from kubeloop.cli._kubeconfig import server_url
    from kubeloop.server import protection_webhook_app

    server = _uvicorn_server(protection_webhook_app, cert, key)  # our own signal handlers below: exit 0
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not serving.done():
        await asyncio.sleep(0.005)
    if serving.done():
        serving.result()
        raise click.ClickException("the webhook server stopped during start-up")
    host, port = sock.getsockname()[:2]
    click.echo(f"{READY_PREFIX}{server_url(host, port)}/validate")
    if ca is not None:
        click.echo(f"CA bundle: {ca}")
    await stop.wait()
    server.should_exit = True
    await serving
