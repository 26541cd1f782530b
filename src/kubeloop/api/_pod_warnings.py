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
import re
from collections.abc import Mapping
from typing import Any

from kubeloop.api._node_label_warnings import DEPRECATED_NODE_LABELS, node_selector_term_warnings
from kubeloop.api._pod_fields import PREFERRED_DURING_SCHEDULING as _PREFERRED
from kubeloop.api._pod_fields import REQUIRED_DURING_SCHEDULING as _REQUIRED
from kubeloop.api._pod_fields import go_text, int_of, mapping_of, objects_of
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
# The spec fields the checks before the containers (and the pod affinity ones) read.
_SPEC_FIELDS = frozenset({"nodeSelector", "affinity", "topologySpreadConstraints", "volumes", "hostAliases",
                          "imagePullSecrets", "overhead"})
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")  # VisitContainersWithPath's order
_EMPTY: Mapping[str, Any] = {}
# How manifests spell a whole number of bytes (what fractional_byte_text would parse to say so).
_whole_bytes = re.compile(r"[0-9]+(?:[KMGTPE]i|[kMGTPE])?").fullmatch


def _q(text: str) -> str:
    """Go's ``%q`` of a string."""
    return json.dumps(text, ensure_ascii=False)


def pod_warnings(pod: Mapping[str, Any]) -> list[str]:
    """GetWarningsForPod of a pod being created."""
    return _spec_and_meta("", _mapping(pod.get("spec")), _mapping(pod.get("metadata")), template=False)


def _mapping(value: Any) -> Mapping[str, Any]:
    # mapping_of without its call for the usual JSON object.
    return value if type(value) is dict else mapping_of(value)


def pod_template_warnings(owner: Mapping[str, Any]) -> list[str]:
    """GetWarningsForPodTemplate of ``owner``'s ``spec.template``, paths under ``spec.template``."""
    template = mapping_of(mapping_of(owner.get("spec")).get("template"))
    return _spec_and_meta("spec.template.", mapping_of(template.get("spec")), mapping_of(template.get("metadata")),
                          template=True)


def _spec_and_meta(prefix: str, spec: Mapping[str, Any], meta: Mapping[str, Any], *, template: bool) -> list[str]:
    """warningsForPodSpecAndMeta (see the module docstring for the order).

    The spec-level checks run only when the spec has one of their fields (:data:`_SPEC_FIELDS`), the
    annotation checks only when there are annotations, and a container is looked at once: a plain
    pod costs a set test, a few lookups per container, and one per port.
    """
    warnings: list[str] = []
    annotations = meta.get("annotations")
    if type(annotations) is not dict:
        annotations = _EMPTY if annotations is None else mapping_of(annotations)
    special = not _SPEC_FIELDS.isdisjoint(spec)
    affinity = mapping_of(spec.get("affinity")) if special else _EMPTY
    if special:
        warnings.extend(_node_label_warnings(prefix, spec, affinity))
    if annotations:
        warnings.extend(f"{prefix}metadata.annotations[{key}]: {text}"
                        for key, text in _DEPRECATED_ANNOTATIONS if key in annotations)
    if special:
        warnings.extend(_spec_warnings(prefix, spec))
    pod_apparmor = False
    if annotations:
        pod_context = mapping_of(spec.get("securityContext"))
        if pod_context.get("seccompProfile") is None and _SECCOMP_POD in annotations:
            warnings.append(f"{prefix}metadata.annotations[{_SECCOMP_POD}]: {_SECCOMP_TEXT}")
        pod_apparmor = pod_context.get("appArmorProfile") is not None
    apparmor = template and not pod_apparmor
    with_ports: list[tuple[str, list[Any]]] = []  # (container path, its ports), for the second pass
    port_count = 0
    for key in _CONTAINER_LISTS:
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if not isinstance(container, Mapping):
                continue
            if annotations or _may_warn(container):
                warnings.extend(_container_warnings(prefix, container, f"{prefix}spec.{key}[{i}]", annotations,
                                                    apparmor=apparmor))
            if (ports := container.get("ports")) and isinstance(ports, list):
                with_ports.append((f"{prefix}spec.{key}[{i}]", ports))
                port_count += len(ports)
    # One port alone can only lack its hostPort.
    if port_count > 1 or (port_count == 1 and mapping_of(with_ports[0][1][0]).get("hostIP")):
        warnings.extend(_port_warnings(with_ports))
    grace = spec.get("terminationGracePeriodSeconds")
    if type(grace) is int and grace < 0:
        warnings.append(f"{prefix}spec.terminationGracePeriodSeconds: must be >= 0; "
                        "negative values are invalid and will be treated as 1")
    if affinity:
        warnings.extend(_pod_affinity_warnings(prefix, affinity))
    return warnings


def _spec_warnings(prefix: str, spec: Mapping[str, Any]) -> list[str]:
    """Volumes, hostAliases, imagePullSecrets and overhead (the module docstring's 3 to 5)."""
    warnings = volume_warnings(prefix, spec)
    warnings.extend(_repeated(prefix, spec, "hostAliases", "ip", "duplicate ip"))
    warnings.extend(_repeated(prefix, spec, "imagePullSecrets", "name", "duplicate name"))
    for i, secret in objects_of(spec.get("imagePullSecrets")):
        if not go_text(secret.get("name")):
            warnings.append(f'{prefix}spec.imagePullSecrets[{i}].name: invalid empty name ""')
    overhead = mapping_of(spec.get("overhead"))
    for resource in _BYTE_RESOURCES:
        if (value := fractional_byte_text(overhead.get(resource))) is not None:
            warnings.append(f"{prefix}spec.overhead[{resource}]: {_fractional(value)}")
    return warnings


def _pod_affinity_warnings(prefix: str, affinity: Mapping[str, Any]) -> list[str]:
    """warningsForPodAffinityTerms / warningsForWeightedPodAffinityTerms: a null selector matches no pod."""
    warnings: list[str] = []
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


def _may_warn(container: Mapping[str, Any]) -> bool:
    """Whether :func:`_container_warnings` could find anything (annotations aside): a byte quantity not
    spelled as a whole number, or two ``env`` entries of one name. Cheap, and never wrong by saying no."""
    resources = container.get("resources")
    if resources:
        if type(resources) is not dict:
            return True
        for values in (resources.get("limits"), resources.get("requests")):
            if values:
                if type(values) is not dict:
                    return True
                memory, storage = values.get("memory"), values.get("ephemeral-storage")
                if (memory is not None and not (type(memory) is str and _whole_bytes(memory))) or (
                        storage is not None and not (type(storage) is str and _whole_bytes(storage))):
                    return True
    env = container.get("env")
    if type(env) is list and len(env) > 1:
        names = set()
        for item in env:
            name = item.get("name") if type(item) is dict else None
            if name in names:
                return True
            names.add(name)
    return False


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
    if resources and isinstance(resources, Mapping):
        limits, requests = mapping_of(resources.get("limits")), mapping_of(resources.get("requests"))
        for resource in _BYTE_RESOURCES:
            if (limit := limits.get(resource)) is not None and (text := fractional_byte_text(limit)) is not None:
                warnings.append(f"{path}.resources.limits[{resource}]: {_fractional(text)}")
            if (request := requests.get(resource)) is not None and (text := fractional_byte_text(request)) is not None:
                warnings.append(f"{path}.resources.requests[{resource}]: {_fractional(text)}")
    env = container.get("env")
    if isinstance(env, list) and len(env) > 1:
        seen: set[str] = set()
        for i, item in enumerate(env):
            if not isinstance(item, Mapping):
                continue
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


def _port_warnings(with_ports: list[tuple[str, list[Any]]]) -> list[str]:
    """The second VisitContainersWithPath: each port against those declared before it, in any container."""
    warnings: list[str] = []
    declared: dict[tuple[Any, Any], list[tuple[str, int, str, int]]] = {}  # (port, protocol) -> (path, index, hostIP, hostPort)
    for container_path, ports in with_ports:
        for i, port in enumerate(ports):
            if not isinstance(port, Mapping):
                continue
            host_ip, host_port = go_text(port.get("hostIP")), int_of(port.get("hostPort")) or 0
            if host_ip and not host_port:
                # Go's %+v of the internal core.ContainerPort struct.
                warnings.append(f"{container_path}.ports[{i}]: hostIP set without hostPort: "
                                f"{{Name:{go_text(port.get('name'))} HostPort:{host_port} "
                                f"ContainerPort:{int_of(port.get('containerPort')) or 0} "
                                f"Protocol:{go_text(port.get('protocol'))} HostIP:{host_ip}}}")
            key = (int_of(port.get("containerPort")) or 0, go_text(port.get("protocol")))
            others = declared.get(key)
            if others is None:
                declared[key] = [(container_path, i, host_ip, host_port)]
                continue
            for other_container, other_i, other_ip, other_port in others:
                if host_ip == other_ip and host_port == other_port:
                    says = "duplicate"
                elif not host_port or not other_port:
                    says = "overlapping"
                elif host_port == other_port and (not host_ip) != (not other_ip):
                    says = "dangerously ambiguous"
                else:
                    continue
                warnings.append(f"{container_path}.ports[{i}]: {says} port definition with "
                                f"{other_container}.ports[{other_i}]")
            others.append((container_path, i, host_ip, host_port))
    return warnings
