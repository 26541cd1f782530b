"""Credentials as httpx ``Auth`` flows: bearer token, token file, exec credential plugin.

* :class:`BearerToken`: a fixed token (kubeconfig ``token``, ``--token``).
* :class:`TokenFile`: re-reads the file at most once a minute and again after a 401, because
  projected service-account tokens are rotated on disk (client-go ``transport/token_source.go``
  caches the file for one minute).
* :class:`ExecCredential`: runs the kubeconfig ``exec`` plugin (``client.authentication.k8s.io``
  ``v1`` or ``v1beta1``), caches the token until ``status.expirationTimestamp``, and runs the
  plugin again after a 401 (client-go ``plugin/pkg/client/auth/exec/exec.go``). A plugin may
  answer with a client certificate (``status.clientCertificateData`` and ``clientKeyData``, PEM)
  instead of, or besides, a token: :meth:`ExecCredential.prime` runs it once when the kubeconfig is
  loaded so the certificate can go into the TLS context (it is not rotated while the client lives;
  client-go rebuilds its transport instead). A plugin that fails or prints something other than an
  ``ExecCredential`` with a token or a certificate and key raises ``ConfigError``.

Time is read from an injected :class:`~kubeloop.api.Clock`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncGenerator, Generator, Sequence
from pathlib import Path

import httpx

from kubeloop.api import Clock, SystemClock, parse_time
from kubeloop.client._errors import ConfigError

__all__ = ["BearerToken", "ExecCredential", "TokenFile"]

_EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
_TOKEN_FILE_CACHE_SECONDS = 60.0


class BearerToken(httpx.Auth):
    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token.strip()}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._header
        yield request


class TokenFile(httpx.Auth):
    def __init__(self, path: str | os.PathLike[str], *, clock: Clock | None = None) -> None:
        self._path = Path(path)
        self._clock = clock or SystemClock()
        self._token: str | None = None
        self._read_at = 0.0

    def _current(self, *, force: bool = False) -> str:
        now = self._clock.monotonic()
        if force or self._token is None or now - self._read_at >= _TOKEN_FILE_CACHE_SECONDS:
            try:
                self._token = self._path.read_text().strip()
            except OSError as exc:
                raise ConfigError(f"cannot read token file {self._path}: {exc}") from None
            self._read_at = now
        return self._token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._current()}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {self._current(force=True)}"
            yield request


class ExecCredential(httpx.Auth):
    """Token from an exec credential plugin (``users[].user.exec`` in a kubeconfig)."""

    def __init__(
        self,
        *,
        api_version: str,
        command: str,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        base_dir: Path | None = None,
        clock: Clock | None = None,
    ) -> None:
        if api_version not in _EXEC_API_VERSIONS:
            raise ConfigError(f"exec plugin: unsupported apiVersion {api_version!r} (supported: {', '.join(_EXEC_API_VERSIONS)})")
        self._api_version = api_version
        # client-go resolves a relative command containing a path separator against the kubeconfig's dir.
        if base_dir is not None and os.sep in command and not os.path.isabs(command):
            command = str(base_dir / command)
        self._argv = [command, *args]
        self._env = dict(env or {})
        self._clock = clock or SystemClock()
        self._token: str | None = None
        self._expires_at: float | None = None
        self._lock: asyncio.Lock | None = None
        self.client_certificate: tuple[bytes, bytes] | None = None  # (PEM certificate, PEM key)

    def _valid(self) -> bool:
        has_credential = self._token is not None or self.client_certificate is not None
        return has_credential and (self._expires_at is None or self._clock.now() < self._expires_at)

    def _parse(self, returncode: int | None, output: bytes, stderr: bytes) -> None:
        """Take the credential from a finished plugin run (``_refresh``, ``prime``)."""
        if returncode != 0:
            raise ConfigError(
                f"exec plugin {self._argv[0]} exited with {returncode}: {stderr.decode(errors='replace').strip()}"
            )
        try:
            cred = json.loads(output)
            status = cred["status"]
            token = status.get("token")
            cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
            if not token and not (cert and key):
                raise KeyError("token")
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ConfigError(
                f"exec plugin {self._argv[0]} did not print an ExecCredential with status.token "
                "or status.clientCertificateData and clientKeyData"
            ) from None
        if cred.get("apiVersion") != self._api_version or cred.get("kind") != "ExecCredential":
            raise ConfigError(
                f"exec plugin {self._argv[0]} returned {cred.get('apiVersion')}/{cred.get('kind')}, "
                f"expected {self._api_version}/ExecCredential"
            )
        expiry = status.get("expirationTimestamp")
        try:
            self._expires_at = parse_time(expiry) if expiry else None
        except ValueError:
            raise ConfigError(f"exec plugin {self._argv[0]}: bad expirationTimestamp {expiry!r}") from None
        self._token = str(token) if token else None
        if cert and key:
            self.client_certificate = (str(cert).encode(), str(key).encode())

    def _exec_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self._env)
        env["KUBERNETES_EXEC_INFO"] = json.dumps(
            {"apiVersion": self._api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
        )
        return env

    async def _refresh(self) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv,
                env=self._exec_env(),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await proc.communicate()
        except OSError as exc:
            raise ConfigError(f"exec plugin {self._argv[0]}: {exc}") from None
        self._parse(proc.returncode, out, err)

    def prime(self) -> None:
        """Run the plugin now, synchronously (at kubeconfig load), to learn a client certificate."""
        try:
            done = subprocess.run(
                self._argv, env=self._exec_env(), stdin=subprocess.DEVNULL, capture_output=True,
                timeout=60, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"exec plugin {self._argv[0]}: {exc}") from None
        self._parse(done.returncode, done.stdout, done.stderr)

    async def _token_now(self, *, force: bool = False) -> str | None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if force or not self._valid():
                self._token = None
                await self._refresh()
            return self._token

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        sent = await self._token_now()
        if sent is not None:
            request.headers["Authorization"] = f"Bearer {sent}"
        response = yield request
        if response.status_code == 401 and sent is not None:
            # Only re-run the plugin if nobody refreshed the token meanwhile.
            token = await self._token_now(force=self._token == sent)
            if token is not None:
                request.headers["Authorization"] = f"Bearer {token}"
            yield request

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        raise ConfigError("exec credential plugins are only supported by the async client")
        yield request  # pragma: no cover - makes this a generator
