"""The ServiceAccount admission plugin: every pod runs as a ServiceAccount that exists, with its API credentials mounted.

Upstream: k/k ``plugin/pkg/admission/serviceaccount/admission.go`` (release 1.32), enabled by default in
kube-apiserver, between LimitRanger and Priority in ``AllOrderedPlugins``. It is both mutating and
validating, and acts on pods only (the pod itself; of the subresources only ``ephemeralcontainers``).

Mutating phase (``Admit``), on CREATE only:

- a mirror pod (annotation ``kubernetes.io/config.mirror``) is not changed: the validating rules below
  run at once instead;
- an empty ``spec.serviceAccountName`` becomes ``default`` (and so does its alias ``serviceAccount``);
- the ServiceAccount is read; a missing one is refused with 403 ``pods "<name>" is forbidden: error
  looking up service account <ns>/<sa>: serviceaccount "<sa>" not found``. Upstream reads it from an
  informer, then directly from the API, and for ``default`` tries 10 times ``100-199 ms`` apart (the
  ServiceAccount controller creates it shortly after the namespace); kubeloop reads the store, which
  is never behind, and waits the same way on the injected clock;
- unless ``spec.automountServiceAccountToken`` (or, when the pod leaves it unset, the
  ServiceAccount's) is false, the projected volume ``kube-api-access-<5 random chars>`` (a volume
  already named ``kube-api-access-*`` is reused) is added, with ``defaultMode: 420`` and three
  sources: a ServiceAccount token (``path: token``, ``expirationSeconds: 3607``,
  ``serviceaccount.WarnOnlyBoundTokenExpirationSeconds``), ``ca.crt`` of the ConfigMap
  ``kube-root-ca.crt``, and ``namespace`` from the downward API; every init container and container
  without a volumeMount at ``/var/run/secrets/kubernetes.io/serviceaccount`` gets a read-only one
  there (the volume is added only if some container mounts it);
- a pod without ``imagePullSecrets`` gets the ServiceAccount's.

Validating phase (``Validate``), on CREATE only (the pod spec cannot change afterwards, so the pod's
ServiceAccount is immutable: pod update validation refuses that):

- a mirror pod may not name a ServiceAccount, reference a Secret, or project a token;
- any other pod must name a ServiceAccount (``no service account specified for pod <ns>/<name>``)
  that exists;
- a ServiceAccount annotated ``kubernetes.io/enforce-mountable-secrets: "true"`` limits the Secrets the
  pod may use (volumes, ``env``/``envFrom`` of init containers and containers, ``imagePullSecrets``) to
  those it lists.

And on an UPDATE through ``pods/NAME/ephemeralcontainers`` (``limitEphemeralContainerSecretReferences``):
the pod must name a ServiceAccount that exists (403 as above), and under ``enforce-mountable-secrets`` its
ephemeral containers' ``env``/``envFrom`` may use only the Secrets it lists; upstream returns that refusal
as a plain error, which the API server answers as a 500 without a reason (``ErrorToAPIStatus``).

Refusals are upstream's ``admission.NewForbidden``: the pod is named by its name, else its
``generateName``, else ``Unknown``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from typing import Any

import orjson

from kubeloop.api import UNKNOWN_REASON, ApiError, Forbidden, ResourceInfo
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin, Operation, ValidatingPlugin
from kubeloop.server._state import ServerState

__all__ = [
    "DEFAULT_API_TOKEN_MOUNT_PATH",
    "DEFAULT_SERVICE_ACCOUNT",
    "MIRROR_POD_ANNOTATION",
    "ServiceAccountAdmission",
    "token_volume_source",
]

DEFAULT_SERVICE_ACCOUNT = "default"
DEFAULT_API_TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"
# serviceaccount.WarnOnlyBoundTokenExpirationSeconds: an hour and 7 s, so the kubelet's refresh at 80%
# of the lifetime can be told apart from tokens of other lifetimes.
TOKEN_EXPIRATION_SECONDS = 3607
PROJECTED_DEFAULT_MODE = 0o644  # corev1.ProjectedVolumeSourceDefaultMode, set explicitly (k/k #104464)
DEFAULT_SA_ATTEMPTS = 10


def token_volume_source() -> dict[str, Any]:
    """``TokenVolumeSource()``: the projected volume every automounting pod gets (a fresh dict)."""
    return {
        "defaultMode": PROJECTED_DEFAULT_MODE,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ],
    }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _forbidden(attributes: AdmissionAttributes, obj: dict[str, Any], message: str) -> Forbidden:
    """``admission.NewForbidden``: the name the request gives, else the body's name or generateName."""
    meta = _dict(obj.get("metadata"))
    name = attributes.name or meta.get("name") or meta.get("generateName") or "Unknown"
    return Forbidden(f'pods "{name}" is forbidden: {message}', details={"name": name, "kind": "pods"})


def _is_mirror(obj: dict[str, Any]) -> bool:
    return MIRROR_POD_ANNOTATION in _dict(_dict(obj.get("metadata")).get("annotations"))


def _containers(spec: dict[str, Any], *fields: str) -> Iterator[dict[str, Any]]:
    for field in fields:
        for container in _list(spec.get(field)):
            if isinstance(container, dict):
                yield container


_ALL_CONTAINERS = ("initContainers", "containers", "ephemeralContainers")
# Volume sources that name a Secret (podutil.VisitPodSecretNames), by source and reference field.
_SECRET_REF_SOURCES = ("cephfs", "cinder", "flexVolume", "rbd", "iscsi", "scaleIO", "storageos")


def _pod_secret_names(spec: dict[str, Any]) -> Iterator[str]:
    """The Secrets a pod spec references (``podutil.VisitPodSecretNames`` over all containers)."""
    for ref in _list(spec.get("imagePullSecrets")):
        yield str(_dict(ref).get("name") or "")
    for container in _containers(spec, *_ALL_CONTAINERS):
        for env_from in _list(container.get("envFrom")):
            if isinstance(ref := _dict(env_from).get("secretRef"), dict):
                yield str(ref.get("name") or "")
        for env in _list(container.get("env")):
            if isinstance(ref := _dict(_dict(env).get("valueFrom")).get("secretKeyRef"), dict):
                yield str(ref.get("name") or "")
    for volume in _list(spec.get("volumes")):
        volume = _dict(volume)
        if isinstance(secret := volume.get("secret"), dict):
            yield str(secret.get("secretName") or "")
        for source in _SECRET_REF_SOURCES:
            if isinstance(ref := _dict(volume.get(source)).get("secretRef"), dict):
                yield str(ref.get("name") or "")
        if isinstance(azure := volume.get("azureFile"), dict):
            yield str(azure.get("secretName") or "")
        if isinstance(ref := _dict(volume.get("csi")).get("nodePublishSecretRef"), dict):
            yield str(ref.get("name") or "")
        for projection in _list(_dict(volume.get("projected")).get("sources")):
            if isinstance(secret := _dict(projection).get("secret"), dict):
                yield str(secret.get("name") or "")


def _projects_token(spec: dict[str, Any]) -> bool:
    return any(isinstance(_dict(p).get("serviceAccountToken"), dict)
               for v in _list(spec.get("volumes")) for p in _list(_dict(_dict(v).get("projected")).get("sources")))


def _automount(service_account: dict[str, Any], spec: dict[str, Any]) -> bool:
    """``shouldAutomount``: the pod's preference, else the ServiceAccount's, else true."""
    for value in (spec.get("automountServiceAccountToken"), service_account.get("automountServiceAccountToken")):
        if isinstance(value, bool):
            return value
    return True


class ServiceAccountAdmission(MutatingPlugin, ValidatingPlugin):
    """Defaults, checks and mounts the pod's ServiceAccount (see the module docstring)."""

    def __init__(self, state: ServerState) -> None:
        self._state = state

    def handles(self, operation: Operation, resource: ResourceInfo) -> bool:
        # UPDATE for pods/ephemeralcontainers (the plan is per resource: a main-resource update returns at once).
        return operation in ("CREATE", "UPDATE") and resource.group == "" and resource.plural == "pods"

    # -- mutating ----------------------------------------------------------------------------------
    def mutate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        if obj is None or attributes.subresource or attributes.operation != "CREATE" \
                or not self.handles(attributes.operation, attributes.resource):
            return None
        if _is_mirror(obj):
            self._validate_mirror(attributes, obj)
            return None
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return None
        if not spec.get("serviceAccountName"):
            # And its deprecated alias, as the server serves every PodSpec (see server/_defaults.py).
            spec["serviceAccountName"] = spec["serviceAccount"] = DEFAULT_SERVICE_ACCOUNT
        return self._admit(attributes, obj, spec)

    async def _admit(self, attributes: AdmissionAttributes, obj: dict[str, Any], spec: dict[str, Any]) -> None:
        service_account = await self._service_account(attributes, obj, str(spec["serviceAccountName"]))
        if _automount(service_account, spec):
            self._mount_token(spec)
        if not spec.get("imagePullSecrets"):
            pulls = [{"name": _dict(ref).get("name", "")} for ref in _list(service_account.get("imagePullSecrets"))]
            if pulls:
                spec["imagePullSecrets"] = pulls

    async def _service_account(self, attributes: AdmissionAttributes, obj: dict[str, Any], name: str) -> dict[str, Any]:
        """``getServiceAccount``: the ServiceAccount, waiting a while for ``default`` (which the
        ServiceAccount controller creates just after the namespace), else a 403."""
        key = f"/registry/core/serviceaccounts/{attributes.namespace}/{name}"
        attempts = DEFAULT_SA_ATTEMPTS if name == DEFAULT_SERVICE_ACCOUNT else 1
        interval = (100 + self._state.rng.randrange(100)) / 1000
        for attempt in range(attempts):
            if attempt:
                await self._state.clock.sleep(interval)
            kv = await self._state.store.get(key)
            if kv is not None:
                found = orjson.loads(kv.value)
                return found if isinstance(found, dict) else {}
        raise _forbidden(attributes, obj, f"error looking up service account {attributes.namespace}/{name}: "
                                          f'serviceaccount "{name}" not found')  # fmt: skip

    def _mount_token(self, spec: dict[str, Any]) -> None:
        """``mountServiceAccountToken``: the projected volume and a read-only mount in each container."""
        volumes = _list(spec.get("volumes"))
        existing = next((str(v["name"]) for v in volumes
                         if isinstance(v, dict) and str(v.get("name") or "").startswith(TOKEN_VOLUME_PREFIX)), None)
        volume_name = existing or self._state.generate_name(TOKEN_VOLUME_PREFIX)
        needs_volume = False
        for container in _containers(spec, "initContainers", "containers"):
            mounts = container.get("volumeMounts")
            if not isinstance(mounts, list):
                mounts = container["volumeMounts"] = []
            if any(_dict(m).get("mountPath") == DEFAULT_API_TOKEN_MOUNT_PATH for m in mounts):
                continue
            mounts.append({"name": volume_name, "readOnly": True, "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH})
            needs_volume = True
        if existing is None and needs_volume:
            spec["volumes"] = [*volumes, {"name": volume_name, "projected": token_volume_source()}]

    # -- validating --------------------------------------------------------------------------------
    def validate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        if obj is None or not self.handles(attributes.operation, attributes.resource):
            return None
        if attributes.operation == "UPDATE" and attributes.subresource == "ephemeralcontainers":
            return self._validate_ephemeral(attributes, obj)
        if attributes.subresource or attributes.operation != "CREATE":
            return None
        if _is_mirror(obj):
            self._validate_mirror(attributes, obj)
            return None
        spec = _dict(obj.get("spec"))
        name = spec.get("serviceAccountName")
        if not name:
            meta_name = _dict(obj.get("metadata")).get("name") or attributes.name
            raise _forbidden(attributes, obj, f"no service account specified for pod {attributes.namespace}/{meta_name}")
        return self._validate(attributes, obj, spec, str(name))

    async def _validate(self, attributes: AdmissionAttributes, obj: dict[str, Any], spec: dict[str, Any], name: str) -> None:
        service_account = await self._service_account(attributes, obj, name)
        annotations = _dict(_dict(service_account.get("metadata")).get("annotations"))
        if _parse_bool(annotations.get(ENFORCE_MOUNTABLE_SECRETS)):
            refused = _unlisted_secret(service_account, spec)
            if refused:
                raise _forbidden(attributes, obj, refused)

    async def _validate_ephemeral(self, attributes: AdmissionAttributes, obj: dict[str, Any]) -> None:
        """``limitEphemeralContainerSecretReferences`` (see the module docstring)."""
        spec = _dict(obj.get("spec"))
        name = spec.get("serviceAccountName")
        if not name:
            meta_name = _dict(obj.get("metadata")).get("name") or attributes.name
            raise _forbidden(attributes, obj, f"no service account specified for pod {attributes.namespace}/{meta_name}")
        service_account = await self._service_account(attributes, obj, str(name))
        annotations = _dict(_dict(service_account.get("metadata")).get("annotations"))
        if not _parse_bool(annotations.get(ENFORCE_MOUNTABLE_SECRETS)):
            return
        sa = _dict(service_account.get("metadata")).get("name", "")
        mountable = {str(_dict(s).get("name")) for s in _list(service_account.get("secrets"))}
        for container in _containers(spec, "ephemeralContainers"):
            cname = container.get("name", "")
            for env in _list(container.get("env")):
                ref = _dict(_dict(_dict(env).get("valueFrom")).get("secretKeyRef"))
                if ref and ref.get("name", "") not in mountable:
                    raise ApiError(f'ephemeral container {cname} with envVar {_dict(env).get("name", "")} referencing '
                                   f'secret.secretName="{ref.get("name", "")}" is not allowed because service account '
                                   f"{sa} does not reference that secret", reason=UNKNOWN_REASON, code=500)
            for env_from in _list(container.get("envFrom")):
                ref = _dict(_dict(env_from).get("secretRef"))
                if ref and ref.get("name", "") not in mountable:
                    raise ApiError(f'ephemeral container {cname} with envFrom referencing secret.secretName='
                                   f'"{ref.get("name", "")}" is not allowed because service account {sa} does not '
                                   "reference that secret", reason=UNKNOWN_REASON, code=500)

    def _validate_mirror(self, attributes: AdmissionAttributes, obj: dict[str, Any]) -> None:
        spec = _dict(obj.get("spec"))
        if spec.get("serviceAccountName"):
            raise _forbidden(attributes, obj, "a mirror pod may not reference service accounts")
        if any(True for _ in _pod_secret_names(spec)):
            raise _forbidden(attributes, obj, "a mirror pod may not reference secrets")
        if _projects_token(spec):
            raise _forbidden(attributes, obj, "a mirror pod may not use ServiceAccountToken volume projections")


def _parse_bool(value: Any) -> bool:
    """Go's ``strconv.ParseBool`` for true (anything unparsable is false here, as upstream ignores the error)."""
    return value in ("1", "t", "T", "TRUE", "true", "True")


def _unlisted_secret(service_account: dict[str, Any], spec: dict[str, Any]) -> str | None:
    """``limitSecretReferences``: why the pod may not use a Secret the ServiceAccount does not list."""
    sa = _dict(service_account.get("metadata")).get("name", "")
    mountable = {str(_dict(s).get("name")) for s in _list(service_account.get("secrets"))}
    for volume in _list(spec.get("volumes")):
        if isinstance(secret := _dict(volume).get("secret"), dict):
            name = secret.get("secretName", "")
            if name not in mountable:
                return f'volume with secret.secretName="{name}" is not allowed because service account {sa} does not reference that secret'
    for field, what in (("initContainers", "init container"), ("containers", "container")):
        for container in _containers(spec, field):
            cname = container.get("name", "")
            for env in _list(container.get("env")):
                ref = _dict(_dict(_dict(env).get("valueFrom")).get("secretKeyRef"))
                if ref and ref.get("name", "") not in mountable:
                    return (f'{what} {cname} with envVar {_dict(env).get("name", "")} referencing secret.secretName='
                            f'"{ref.get("name", "")}" is not allowed because service account {sa} does not reference that secret')
            for env_from in _list(container.get("envFrom")):
                ref = _dict(_dict(env_from).get("secretRef"))
                if ref and ref.get("name", "") not in mountable:
                    return (f'{what} {cname} with envFrom referencing secret.secretName="{ref.get("name", "")}" '
                            f"is not allowed because service account {sa} does not reference that secret")
    pulls = {str(_dict(s).get("name")) for s in _list(service_account.get("imagePullSecrets"))}
    for index, ref in enumerate(_list(spec.get("imagePullSecrets"))):
        name = _dict(ref).get("name", "")
        if name not in pulls:
            return (f'imagePullSecrets[{index}].name="{name}" is not allowed because service account {sa} '
                    "does not reference that imagePullSecret")
    return None
