"""The ``Warning`` texts upstream returns for a pod, or a pod template, that is valid but unwise.

k/k ``pkg/api/pod/warnings.go`` (release 1.32): :func:`pod_warnings` is ``GetWarningsForPod`` (the pod
strategy's ``WarningsOnCreate``; upstream says nothing on a pod update), :func:`pod_template_warnings`
is ``GetWarningsForPodTemplate`` with the field path ``spec.template`` (the Deployment, ReplicaSet
and StatefulSet strategies, on create and on an update that moved ``metadata.generation``). Both are
``warningsForPodSpecAndMeta``, whose order the texts keep:

1. deprecated node labels (:mod:`kubeloop.api._node_label_warnings`) in ``nodeSelector``, the node
   affinity's required then preferred terms, and each topology spread constraint's ``topologyKey``
   (with a null ``labelSelector`` there, which matches no pod);
2. the annotations that stopped working (critical-pod, the alpha sysctls);
3. the volumes (:mod:`kubeloop.api._pod_volume_warnings`);
4. repeated ``hostAliases`` IPs, repeated or empty ``imagePullSecrets`` names;
5. a ``spec.overhead`` memory or ephemeral-storage quantity that is not a whole number of bytes;
6. the seccomp pod annotation without the field; then per container (init, regular, ephemeral): the
   seccomp container annotation without the field, on a template only the AppArmor container annotation
   without a field (for a pod, upstream warns of that while it syncs annotation and field, which
   :mod:`kubeloop.api._pod_create_mutations` does without a warning), fractional memory and
   ephemeral-storage limits then requests, and an ``env`` entry that hides an earlier one of its name;
7. ports across all containers: ``hostIP`` without ``hostPort``, and a ``containerPort``/``protocol``
   declared twice (duplicate, overlapping, or dangerously ambiguous as to its host IP);
8. a negative ``terminationGracePeriodSeconds``; pod (anti-)affinity terms with a null label selector.

Go ranges over a map in no fixed order; a map's keys here come in the body's order. The warnings run
after defaulting (a port's protocol is ``TCP``), on a body validation has accepted. A pod that uses
none of these features costs a few dictionary lookups per container. Pure functions; nothing is mutated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeloop.api._node_label_warnings import DEPRECATED_NODE_LABELS, node_selector_term_warnings
from kubeloop.api._pod_fields import PREFERRED_DURING_SCHEDULING as _PREFERRED
from kubeloop.api._pod_fields import REQUIRED_DURING_SCHEDULING as _REQUIRED
from kubeloop.api._pod_fields import containers_with_paths, go_text, int_of, mapping_of, objects_of
from kubeloop.api._pod_volume_warnings import volume_warnings
from kubeloop.api._storage_warnings import fractional_byte_text

__all__ = ["pod_template_warnings", "pod_warnings"]

# deprecatedAnnotations: the key, what the warning says of it.
_DEPRECATED_ANNOTATIONS = (
    ("scheduler.alpha.kubernetes.io/critical-pod", 'non-functional in v1.16+; use the "priorityClassName" field instead'),
    ("security.alpha.kubernetes.io/sysctls", 'non-functional in v1.11+; use the "sysctls" field instead'),
    ("security.alpha.kubernetes.io/unsafe-sysctls", 'non-functional in v1.11+; use the "sysctls" field instead'),
)
_SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"  # core.SeccompPodAnnotationKey
_SECCOMP_CONTAINER = "container.seccomp.security.alpha.kubernetes.io/"  # SeccompContainerAnnotationKeyPrefix
_APPARMOR_CONTAINER = "container.apparmor.security.beta.kubernetes.io/"  # DeprecatedAppArmorAnnotationKeyPrefix
_SECCOMP_TEXT = 'non-functional in v1.27+; use the "seccompProfile" field instead'
_APPARMOR_TEXT = 'deprecated since v1.30; use the "appArmorProfile" field instead'
_NULL_SELECTOR = "a null labelSelector results in matching no pod"
_BYTE_RESOURCES = ("memory", "ephemeral-storage")


def _q(text: str) -> str:
    """Go's ``%q`` of a string."""
    return json.dumps(text, ensure_ascii=False)


def pod_warnings(pod: Mapping[str, Any]) -> list[str]:
    """GetWarningsForPod of a pod being created."""
    return _spec_and_meta("", mapping_of(pod.get("spec")), mapping_of(pod.get("metadata")), template=False)


def pod_template_warnings(owner: Mapping[str, Any]) -> list[str]:
    """GetWarningsForPodTemplate of ``owner``'s ``spec.template``, paths under ``spec.template``."""
    template = mapping_of(mapping_of(owner.get("spec")).get("template"))
    return _spec_and_meta("spec.template.", mapping_of(template.get("spec")), mapping_of(template.get("metadata")),
                          template=True)


def _spec_and_meta(prefix: str, spec: Mapping[str, Any], meta: Mapping[str, Any], *, template: bool) -> list[str]:
    """warningsForPodSpecAndMeta (see the module docstring for the order)."""
    warnings: list[str] = []
    annotations = mapping_of(meta.get("annotations"))
    affinity = mapping_of(spec.get("affinity"))
    warnings.extend(_node_label_warnings(prefix, spec, affinity))
    for key, text in _DEPRECATED_ANNOTATIONS:
        if key in annotations:
            warnings.append(f"{prefix}metadata.annotations[{key}]: {text}")
    warnings.extend(volume_warnings(prefix, spec))
    warnings.extend(_repeated(prefix, spec, "hostAliases", "ip", "duplicate ip"))
    warnings.extend(_repeated(prefix, spec, "imagePullSecrets", "name", "duplicate name"))
    for i, secret in objects_of(spec.get("imagePullSecrets")):
        if not go_text(secret.get("name")):
            warnings.append(f'{prefix}spec.imagePullSecrets[{i}].name: invalid empty name ""')
    overhead = mapping_of(spec.get("overhead"))
    for resource in _BYTE_RESOURCES:
        if (value := fractional_byte_text(overhead.get(resource))) is not None:
            warnings.append(f"{prefix}spec.overhead[{resource}]: {_fractional(value)}")
    pod_context = mapping_of(spec.get("securityContext"))
    if annotations and pod_context.get("seccompProfile") is None and _SECCOMP_POD in annotations:
        warnings.append(f"{prefix}metadata.annotations[{_SECCOMP_POD}]: {_SECCOMP_TEXT}")
    pod_apparmor = pod_context.get("appArmorProfile") is not None
    for container, path in containers_with_paths(spec, f"{prefix}spec"):
        warnings.extend(_container_warnings(prefix, container, path, annotations,
                                            apparmor=template and not pod_apparmor))
    warnings.extend(_port_warnings(prefix, spec))
    grace = int_of(spec.get("terminationGracePeriodSeconds"))
    if grace is not None and grace < 0:
        warnings.append(f"{prefix}spec.terminationGracePeriodSeconds: must be >= 0; "
                        "negative values are invalid and will be treated as 1")
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = affinity.get(kind)
        if isinstance(terms, Mapping):
            path = f"{prefix}spec.affinity.{kind}"
            warnings.extend(f"{path}.{_REQUIRED}[{i}].labelSelector: {_NULL_SELECTOR}"
                            for i, term in objects_of(terms.get(_REQUIRED)) if term.get("labelSelector") is None)
            warnings.extend(f"{path}.{_PREFERRED}[{i}].podAffinityTerm.labelSelector: {_NULL_SELECTOR}"
                            for i, term in objects_of(terms.get(_PREFERRED))
                            if mapping_of(term.get("podAffinityTerm")).get("labelSelector") is None)
    return warnings


def _node_label_warnings(prefix: str, spec: Mapping[str, Any], affinity: Mapping[str, Any]) -> list[str]:
    warnings = [f"{prefix}spec.nodeSelector[{key}]: {DEPRECATED_NODE_LABELS[key]}"
                for key in mapping_of(spec.get("nodeSelector")) if key in DEPRECATED_NODE_LABELS]
    node_affinity = mapping_of(affinity.get("nodeAffinity"))
    if node_affinity:
        path = f"{prefix}spec.affinity.nodeAffinity"
        required = node_affinity.get(_REQUIRED)
        if isinstance(required, Mapping):
            for i, term in objects_of(required.get("nodeSelectorTerms")):
                warnings.extend(node_selector_term_warnings(term, f"{path}.{_REQUIRED}.nodeSelectorTerms[{i}]"))
        for i, term in objects_of(node_affinity.get(_PREFERRED)):
            warnings.extend(node_selector_term_warnings(mapping_of(term.get("preference")),
                                                        f"{path}.{_PREFERRED}[{i}].preference"))
    for i, constraint in objects_of(spec.get("topologySpreadConstraints")):
        path = f"{prefix}spec.topologySpreadConstraints[{i}]"
        key = go_text(constraint.get("topologyKey"))
        if key in DEPRECATED_NODE_LABELS:
            warnings.append(f"{path}.topologyKey: {key} is {DEPRECATED_NODE_LABELS[key]}")
        if constraint.get("labelSelector") is None:
            warnings.append(f"{path}.labelSelector: {_NULL_SELECTOR}")
    return warnings


def _repeated(prefix: str, spec: Mapping[str, Any], field: str, key: str, says: str) -> list[str]:
    """A ``key`` value already seen earlier in the list ``field`` (checked only when it has two entries or more)."""
    items = spec.get(field)
    if not isinstance(items, list) or len(items) < 2:
        return []
    seen: set[str] = set()
    warnings = []
    for i, item in objects_of(items):
        value = go_text(item.get(key))
        if value in seen:
            warnings.append(f"{prefix}spec.{field}[{i}].{key}: {says} {_q(value)}")
        else:
            seen.add(value)
    return warnings


def _fractional(text: str) -> str:
    return f'fractional byte value "{text}" is invalid, must be an integer'


def _container_warnings(prefix: str, container: Mapping[str, Any], path: str, annotations: Mapping[str, Any], *,
                        apparmor: bool) -> list[str]:
    """The per-container part of the first VisitContainersWithPath (see the module docstring, 6)."""
    warnings: list[str] = []
    if annotations:
        name = go_text(container.get("name"))
        context = mapping_of(container.get("securityContext"))
        if context.get("seccompProfile") is None and (key := _SECCOMP_CONTAINER + name) in annotations:
            warnings.append(f"{prefix}metadata.annotations[{key}]: {_SECCOMP_TEXT}")
        if apparmor and context.get("appArmorProfile") is None and (key := _APPARMOR_CONTAINER + name) in annotations:
            warnings.append(f"{prefix}metadata.annotations[{key}]: {_APPARMOR_TEXT}")
    resources = container.get("resources")
    if resources:
        resources = mapping_of(resources)
        limits, requests = mapping_of(resources.get("limits")), mapping_of(resources.get("requests"))
        for resource in _BYTE_RESOURCES:
            for kind, values in (("limits", limits), ("requests", requests)):
                if (text := fractional_byte_text(values.get(resource))) is not None:
                    warnings.append(f"{path}.resources.{kind}[{resource}]: {_fractional(text)}")
    env = container.get("env")
    if isinstance(env, list) and len(env) > 1:
        seen: set[str] = set()
        for i, item in objects_of(env):
            name = go_text(item.get("name"))
            if name not in seen:
                seen.add(name)
                continue
            ref, value = f"$({name})", go_text(item.get("value"))
            # A later entry may build on the earlier value ("$(X)suffix"); replacing it is what hides it.
            if item.get("valueFrom") is not None or value == ref or ref not in value:
                warnings.append(f"{path}.env[{i}]: hides previous definition of {_q(name)}, "
                                "which may be dropped when using apply")
    return warnings


def _port_warnings(prefix: str, spec: Mapping[str, Any]) -> list[str]:
    """The second VisitContainersWithPath: each port against those declared before it, in any container."""
    warnings: list[str] = []
    declared: dict[str, list[tuple[str, str, int]]] = {}  # "<containerPort>/<protocol>" -> (path, hostIP, hostPort)
    for container, container_path in containers_with_paths(spec, f"{prefix}spec"):
        for i, port in objects_of(container.get("ports")):
            path = f"{container_path}.ports[{i}]"
            host_ip, host_port = go_text(port.get("hostIP")), int_of(port.get("hostPort")) or 0
            container_port, protocol = int_of(port.get("containerPort")) or 0, go_text(port.get("protocol"))
            if host_ip and not host_port:
                # Go's %+v of the internal core.ContainerPort struct.
                warnings.append(f"{path}: hostIP set without hostPort: {{Name:{go_text(port.get('name'))} "
                                f"HostPort:{host_port} ContainerPort:{container_port} Protocol:{protocol} "
                                f"HostIP:{host_ip}}}")
            others = declared.setdefault(f"{container_port}/{protocol}", [])
            for other_path, other_ip, other_port in others:
                if host_ip == other_ip and host_port == other_port:
                    warnings.append(f"{path}: duplicate port definition with {other_path}")
                elif not host_port or not other_port:
                    warnings.append(f"{path}: overlapping port definition with {other_path}")
                elif host_port == other_port and (not host_ip) != (not other_ip):
                    warnings.append(f"{path}: dangerously ambiguous port definition with {other_path}")
            others.append((path, host_ip, host_port))
    return warnings
