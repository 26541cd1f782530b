"""From a kubeconfig (or the in-cluster service account) to what an httpx client needs.

Parsing and context selection use lightkube's maintained loader (``lightkube.config.kubeconfig``,
imported lazily so ``import kubeloop.client`` stays cheap); this module adds what it lacks:

* ``KUBECONFIG`` lists (``os.pathsep``-separated): files are merged the way kubectl merges them
  (client-go ``tools/clientcmd/loader.go``): for clusters, users and contexts the first file that
  defines a name wins, ``current-context`` is the first one set, and missing files are skipped.
  Relative paths are resolved against the file that contains them, before merging.
* The TLS context: CA from ``certificate-authority`` (file) or ``certificate-authority-data``
  (inline, base64), client certificate and key from files or inline data, or
  ``insecure-skip-tls-verify``. Inline keys never stay on disk.
* Credentials for httpx: ``token``, ``tokenFile``, ``exec`` plugins (``_auth``), basic auth. An
  ``exec`` plugin for a user without a client certificate in the kubeconfig is run once at load:
  if it answers with ``clientCertificateData``/``clientKeyData``, they go into the TLS context.

Lookup order without an explicit path (controller-runtime ``config.GetConfig``): ``$KUBECONFIG``,
then the in-cluster service account, then ``~/.kube/config``. Every failure is a ``ConfigError``.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from kubeloop.api import Clock
from kubeloop.client._auth import BearerToken, ExecCredential, TokenFile
from kubeloop.client._errors import ConfigError

__all__ = ["ClusterConnection", "in_cluster_connection", "load_kubeconfig"]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_KUBECONFIG = "~/.kube/config"

# Keys whose values are file paths, per section (resolved against the defining file).
_PATH_KEYS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}


@dataclass(frozen=True, slots=True)
class ClusterConnection:
    """Everything needed to talk to one API server as one user."""

    server: str
    namespace: str
    verify: ssl.SSLContext | bool
    auth: httpx.Auth | None
    context: str = ""


def _read_file(path: Path) -> dict[str, Any]:
    import yaml  # here, not at the top: ``import kubeloop.client`` stays cheap for those who read no file

    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"kubeconfig {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"kubeconfig {path} is not a mapping")
    return data


def _resolve_paths(conf: dict[str, Any], base: Path) -> None:
    for section, entry_key in (("clusters", "cluster"), ("users", "user")):
        for entry in conf.get(section) or []:
            body = entry.get(entry_key) if isinstance(entry, dict) else None
            if not isinstance(body, dict):
                continue
            for key in _PATH_KEYS[entry_key]:
                value = body.get(key)
                if isinstance(value, str) and value and not os.path.isabs(os.path.expanduser(value)):
                    body[key] = str(base / value)
            exec_conf = body.get("exec")
            if isinstance(exec_conf, dict):
                exec_conf.setdefault("_baseDir", str(base))


def merge_kubeconfigs(paths: Sequence[Path]) -> dict[str, Any]:
    """Merge kubeconfig files kubectl's way (first definition of each name wins); skip missing files."""
    merged: dict[str, Any] = {"clusters": [], "contexts": [], "users": []}
    seen: dict[str, set[str]] = {"clusters": set(), "contexts": set(), "users": set()}
    found = False
    for path in paths:
        path = path.expanduser()
        if not path.is_file():
            continue
        found = True
        conf = _read_file(path)
        _resolve_paths(conf, path.parent.resolve())
        if not merged.get("current-context") and conf.get("current-context"):
            merged["current-context"] = conf["current-context"]
        for section in ("clusters", "contexts", "users"):
            for entry in conf.get(section) or []:
                name = entry.get("name") if isinstance(entry, dict) else None
                if isinstance(name, str) and name not in seen[section]:
                    seen[section].add(name)
                    merged[section].append(entry)
    if not found:
        raise ConfigError(f"no kubeconfig found at {os.pathsep.join(str(p) for p in paths)}")
    return merged


def _b64(data: str, what: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{what} is not valid base64") from None


def _ssl_context(cluster: Any, user: Any) -> ssl.SSLContext:
    try:
        if cluster.certificate_auth_data:
            ctx = ssl.create_default_context(cadata=_b64(cluster.certificate_auth_data, "certificate-authority-data").decode())
        elif cluster.certificate_auth:
            ctx = ssl.create_default_context(cafile=os.path.expanduser(cluster.certificate_auth))
        else:
            import certifi

            ctx = ssl.create_default_context(cafile=certifi.where())
        if cluster.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if _has_client_cert(user):
            _load_client_cert(ctx, user)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"cannot set up TLS for {cluster.server}: {exc}") from None
    return ctx


def _has_client_cert(user: Any) -> bool:
    return bool(user is not None and (user.client_cert or user.client_cert_data))


def _load_pem_pair(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="kubeloop-tls-") as tmp:
        cert_path, key_path = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        for path, data in ((cert_path, cert), (key_path, key)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(data)
        ctx.load_cert_chain(cert_path, key_path)


def _load_client_cert(ctx: ssl.SSLContext, user: Any) -> None:
    if not user.client_cert_data and not user.client_key_data:
        ctx.load_cert_chain(os.path.expanduser(user.client_cert), os.path.expanduser(user.client_key or user.client_cert))
        return
    # ssl only loads certificates from files: inline data goes through private temp files.
    _load_pem_pair(
        ctx, _pem(user.client_cert_data, user.client_cert, "client-certificate"),
        _pem(user.client_key_data, user.client_key, "client-key"),
    )  # fmt: skip


def _pem(data: str | None, path: str | None, what: str) -> bytes:
    """A PEM block from ``<what>-data`` (inline, base64) or else the ``<what>`` file."""
    if data:
        return _b64(data, f"{what}-data")
    if not path:
        raise ConfigError(f"{what}-data or {what} must be specified to use the clientCert authentication method")
    return Path(os.path.expanduser(path)).read_bytes()


def _auth(user: Any, *, clock: Clock | None, base_dir: Path | None) -> httpx.Auth | None:
    if user is None:
        return None
    if user.token_file:
        return TokenFile(os.path.expanduser(user.token_file), clock=clock)
    if user.token:
        return BearerToken(user.token)
    if user.exec:
        return ExecCredential(
            api_version=user.exec.apiVersion,
            command=user.exec.command,
            args=user.exec.args or (),
            env={e.name: e.value for e in user.exec.env or ()},
            base_dir=base_dir,
            clock=clock,
        )
    if user.username and user.password:
        return httpx.BasicAuth(user.username, user.password)
    if user.auth_provider:
        raise ConfigError("kubeconfig auth-provider is not supported; use an exec credential plugin")
    return None


def connection_from_dict(conf: dict[str, Any], *, context: str | None = None, clock: Clock | None = None) -> ClusterConnection:
    """Select ``context`` (default: ``current-context``) from a kubeconfig mapping."""
    from lightkube.config.kubeconfig import KubeConfig

    try:
        single = KubeConfig.from_dict(conf).get(context_name=context)
    except KeyError as exc:
        raise ConfigError(f"kubeconfig refers to an undefined cluster or user: {exc}") from None
    except Exception as exc:  # lightkube ConfigError and msgspec validation errors
        raise ConfigError(f"kubeconfig: {exc}") from None
    assert single is not None
    cluster, user = single.cluster, single.user
    scheme = cluster.server.split("://", 1)[0].lower()
    verify: ssl.SSLContext | bool = _ssl_context(cluster, user) if scheme == "https" else False
    auth = _auth(user, clock=clock, base_dir=_exec_base_dir(conf, single.context.user))
    if isinstance(auth, ExecCredential) and isinstance(verify, ssl.SSLContext) and not _has_client_cert(user):
        auth.prime()  # the plugin may hand out a client certificate, which must be in the TLS context
        if auth.client_certificate is not None:
            try:
                _load_pem_pair(verify, *auth.client_certificate)
            except (OSError, ssl.SSLError, ValueError) as exc:
                raise ConfigError(f"exec plugin client certificate cannot be used: {exc}") from None
    return ClusterConnection(
        server=cluster.server.rstrip("/"),
        namespace=single.namespace,
        verify=verify,
        auth=auth,
        context=single.context_name,
    )


def _exec_base_dir(conf: dict[str, Any], user_name: str | None) -> Path | None:
    for entry in conf.get("users") or []:
        if isinstance(entry, dict) and entry.get("name") == user_name:
            exec_conf = (entry.get("user") or {}).get("exec") or {}
            base = exec_conf.get("_baseDir")
            return Path(base) if base else None
    return None


def in_cluster_connection(
    *, service_account_dir: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR, clock: Clock | None = None
) -> ClusterConnection:
    """The pod's own service account: ``KUBERNETES_SERVICE_HOST``/``PORT``, ``token``, ``ca.crt``, ``namespace``."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT")
    sa = Path(service_account_dir)
    if not host or not port:
        raise ConfigError("not running in a cluster: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set")
    if not (sa / "token").is_file():
        raise ConfigError(f"not running in a cluster: {sa / 'token'} does not exist")
    if ":" in host:
        host = f"[{host}]"
    try:
        namespace = (sa / "namespace").read_text().strip() or "default"
    except OSError:
        namespace = "default"
    try:
        ctx = ssl.create_default_context(cafile=str(sa / "ca.crt"))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the service account CA: {exc}") from None
    return ClusterConnection(
        server=f"https://{host}:{port}", namespace=namespace, verify=ctx,
        auth=TokenFile(sa / "token", clock=clock), context="in-cluster",
    )


def load_kubeconfig(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    context: str | None = None,
    clock: Clock | None = None,
) -> ClusterConnection:
    """Load a kubeconfig file (or a list of files, or ``$KUBECONFIG``, or in-cluster, or ``~/.kube/config``)."""
    if path is None:
        env = os.environ.get("KUBECONFIG")
        if env:
            paths = [Path(p) for p in env.split(os.pathsep) if p]
        else:
            try:
                return in_cluster_connection(clock=clock)
            except ConfigError:
                paths = [Path(DEFAULT_KUBECONFIG)]
    elif isinstance(path, (str, os.PathLike)):
        paths = [Path(path)]
    else:
        paths = [Path(p) for p in path]
    return connection_from_dict(merge_kubeconfigs(paths), context=context, clock=clock)
