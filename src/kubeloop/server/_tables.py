"""``meta.k8s.io/v1`` Table rendering for ``kubectl get``: upstream's columns for every built-in kind.

Columns and cell rules follow k/k ``pkg/printers/internalversion/printers.go`` (Kubernetes 1.32):
the same names, types and ``priority`` (``priority: 1`` columns show only with ``-o wide``), and the
same derived cells (a Pod's STATUS from its container states, READY as ``ready/total``, AGE as a
human duration from ``k8s.io/apimachinery/pkg/util/duration.HumanDuration``). Kinds without a
printer get upstream's default table (``Name``, ``Created At``); custom resources get ``Name``, their
CRD's ``additionalPrinterColumns`` and ``Age`` (k/k customresource ``tableconvertor``).

Row objects follow ``includeObject``: ``Metadata`` (default) gives a ``PartialObjectMetadata``,
``Object`` the whole object, ``None`` nothing (apiserver ``handlers/response.go``).

A watch asking for Tables gets each event's object as a Table of one row, the column definitions on
its first event only (:class:`TableEvents`); watchers whose renderings cannot differ share them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import orjson

from kubeloop.api import BadRequest, ResourceInfo, parse_time
from kubeloop.api._selectors import go_label_selector_string
from kubeloop.server._hpa_table import hpa_cells
from kubeloop.server._networking_tables import ingress_cells, ingress_class_cells, network_policy_cells

__all__ = ["TableEvents", "human_duration", "jsonpath_values", "table_for", "wants_table"]

Obj = dict[str, Any]
Column = tuple[str, str, str, int]  # name, type, format, priority
Cells = Callable[[Obj, float], list[Any]]

TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> bool:
    """True when the Accept header asks for a Table (``as=Table``) in its first acceptable entry."""
    for part in accept.split(","):
        params = {p.strip().partition("=")[0]: p.strip().partition("=")[2] for p in part.split(";")[1:]}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return True
        media = part.split(";")[0].strip()
        if media in ("application/json", "*/*", "application/*") and "as" not in params:
            return False
    return False


def human_duration(seconds: float) -> str:
    """``HumanDuration``: 5s, 2m30s, 15m, 3h20m, 10h, 2d5h, 30d, 1y20d, 9y."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return _units(minutes, "m", s % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return _units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _units(hours // 24, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return _units(hours // 24 // 365, "y", (hours // 24) % 365, "d")
    return f"{hours // 24 // 365}y"


def _units(whole: int, unit: str, rest: int, rest_unit: str) -> str:
    """``2m30s``, or ``2m`` when the smaller unit is zero."""
    return f"{whole}{unit}{rest}{rest_unit}" if rest else f"{whole}{unit}"


def _age(obj: Obj, now: float, path: tuple[str, ...] = ("metadata", "creationTimestamp")) -> str:
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, str):
        return "<unknown>"
    try:
        return human_duration(now - parse_time(value))
    except ValueError:
        return "<unknown>"


def _get(obj: Any, *path: str | int, default: Any = None) -> Any:
    for key in path:
        if isinstance(key, int):
            obj = obj[key] if isinstance(obj, list) and -len(obj) <= key < len(obj) else None
        else:
            obj = obj.get(key) if isinstance(obj, dict) else None
        if obj is None:
            return default
    return obj


def _name(obj: Obj) -> str:
    return str(_get(obj, "metadata", "name", default=""))


def _join(values: Iterable[str], empty: str = "<none>") -> str:
    text = ",".join(v for v in values if v)
    return text or empty


def _containers(obj: Obj, *template: str) -> list[Obj]:
    containers = _get(obj, *template, "spec", "containers", default=[])
    return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


def _selector_text(selector: Any) -> str:
    """metav1.FormatLabelSelector: every requirement, sorted by key (``internalSelector.Add`` sorts them), a set's
    values sorted too; ``<none>`` when empty."""
    if not isinstance(selector, dict):
        return "<none>"
    parts = [(str(k), f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), sorted(expr.get("values") or [])
        if op == "In":
            parts.append((key, f"{key} in ({','.join(values)})"))
        elif op == "NotIn":
            parts.append((key, f"{key} notin ({','.join(values)})"))
        elif op == "Exists":
            parts.append((key, key))
        elif op == "DoesNotExist":
            parts.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(parts, key=lambda part: part[0])) or "<none>"


# ------------------------------------------------------------------------- pods


def _pod_cells(pod: Obj, now: float) -> list[Any]:
    statuses = _get(pod, "status", "containerStatuses", default=[]) or []
    total = len(_containers(pod))
    reason = _get(pod, "status", "reason") or _get(pod, "status", "phase", default="") or ""
    # printPod: a pod whose PodScheduled condition says SchedulingGated shows that.
    if any(isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
           for c in _get(pod, "status", "conditions", default=[]) or []):
        reason = "SchedulingGated"
    ready = restarts = 0
    last_restart: float | None = None
    init_statuses = _get(pod, "status", "initContainerStatuses", default=[]) or []
    initializing = False
    for i, st in enumerate(init_statuses):
        restarts += int(st.get("restartCount", 0))
        term = _get(st, "state", "terminated")
        waiting = _get(st, "state", "waiting")
        if term is not None and term.get("exitCode", 0) == 0:
            continue
        initializing = True
        if term is not None:
            reason = "Init:" + (term.get("reason") or f"ExitCode:{term.get('exitCode', 0)}")
        elif waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(_get(pod, 'spec', 'initContainers', default=[]) or [])}"
        break
    if not initializing:
        has_running = False
        for st in reversed(statuses):
            restarts += int(st.get("restartCount", 0))
            finished = _get(st, "lastState", "terminated", "finishedAt")
            if isinstance(finished, str):
                t = parse_time(finished)
                last_restart = t if last_restart is None else max(last_restart, t)
            waiting = _get(st, "state", "waiting")
            term = _get(st, "state", "terminated")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None:
                if term.get("reason"):
                    reason = term["reason"]
                elif term.get("signal"):
                    reason = f"Signal:{term['signal']}"
                else:
                    reason = f"ExitCode:{term.get('exitCode', 0)}"
            elif _get(st, "state", "running") is not None and st.get("ready"):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in _get(pod, "status", "conditions", default=[]) or []
            ) else "NotReady"
    if _get(pod, "metadata", "deletionTimestamp") is not None:
        reason = "Unknown" if _get(pod, "status", "reason") == "NodeLost" else "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration(now - last_restart)} ago)"
    ip = _get(pod, "status", "podIP") or "<none>"
    return [
        _name(pod), f"{ready}/{total}", reason, restarts_text, _age(pod, now),
        ip, _get(pod, "spec", "nodeName") or "<none>", _get(pod, "status", "nominatedNodeName") or "<none>",
        _readiness_gates(pod),
    ]


def _readiness_gates(pod: Obj) -> str:
    gates = _get(pod, "spec", "readinessGates", default=[]) or []
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status") for c in _get(pod, "status", "conditions", default=[]) or []}
    ready = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    return f"{ready}/{len(gates)}"


# ------------------------------------------------------------------------- others


def _node_cells(node: Obj, now: float) -> list[Any]:
    conditions = {c.get("type"): c.get("status") for c in _get(node, "status", "conditions", default=[]) or []}
    status = ["Ready" if conditions.get("Ready") == "True" else "NotReady" if "Ready" in conditions else "Unknown"]
    if _get(node, "spec", "unschedulable"):
        status.append("SchedulingDisabled")
    labels = _get(node, "metadata", "labels", default={}) or {}
    roles = sorted(
        {k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k}
        | {v for k, v in labels.items() if k == "kubernetes.io/role" and v}
    )
    addresses = {a.get("type"): a.get("address") for a in _get(node, "status", "addresses", default=[]) or []}
    info = _get(node, "status", "nodeInfo", default={}) or {}
    return [
        _name(node), ",".join(status), _join(roles), _age(node, now), info.get("kubeletVersion", ""),
        addresses.get("InternalIP") or "<none>", addresses.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _workload_wide(obj: Obj) -> list[str]:
    containers = _containers(obj, "spec", "template")
    return [_join(c.get("name", "") for c in containers), _join(c.get("image", "") for c in containers)]


def _deployment_cells(d: Obj, now: float) -> list[Any]:
    desired = _get(d, "spec", "replicas", default=1)
    st = d.get("status") or {}
    return [
        _name(d), f"{st.get('readyReplicas', 0)}/{desired}", st.get("updatedReplicas", 0),
        st.get("availableReplicas", 0), _age(d, now), *_workload_wide(d), _selector_text(_get(d, "spec", "selector")),
    ]


def _replicaset_cells(rs: Obj, now: float) -> list[Any]:
    st = rs.get("status") or {}
    return [
        _name(rs), _get(rs, "spec", "replicas", default=1), st.get("replicas", 0), st.get("readyReplicas", 0),
        _age(rs, now), *_workload_wide(rs), _selector_text(_get(rs, "spec", "selector")),
    ]


def _replication_controller_cells(rc: Obj, now: float) -> list[Any]:
    """printReplicationController: desired, current and ready replicas, age, then (wide) containers, images
    and the selector map as labels.FormatLabels writes it."""
    st = rc.get("status") or {}
    return [
        _name(rc), _get(rc, "spec", "replicas", default=1), st.get("replicas", 0), st.get("readyReplicas", 0),
        _age(rc, now), *_workload_wide(rc), _node_selector_text(_get(rc, "spec", "selector")),
    ]


def _pod_template_cells(pt: Obj, now: float) -> list[Any]:
    """printPodTemplate: the template's containers and images (layoutContainerCells: joined by commas, empty
    when none) and its labels (labels.FormatLabels)."""
    containers = _containers(pt, "template")
    return [_name(pt), ",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers), _node_selector_text(_get(pt, "template", "metadata", "labels"))]


def _node_selector_text(selector: Any) -> str:
    """labels.FormatLabels: ``k=v`` pairs sorted by key, comma-separated; ``<none>`` when empty."""
    if not isinstance(selector, dict) or not selector:
        return "<none>"
    return ",".join(f"{k}={selector[k]}" for k in sorted(selector))


def _daemonset_cells(ds: Obj, now: float) -> list[Any]:
    """printDaemonSet: the status counts, the template's nodeSelector, then (wide) containers, images, selector."""
    st = ds.get("status") or {}
    return [
        _name(ds), st.get("desiredNumberScheduled", 0), st.get("currentNumberScheduled", 0), st.get("numberReady", 0),
        st.get("updatedNumberScheduled", 0), st.get("numberAvailable", 0),
        _node_selector_text(_get(ds, "spec", "template", "spec", "nodeSelector")), _age(ds, now),
        *_workload_wide(ds), _selector_text(_get(ds, "spec", "selector")),
    ]


def _statefulset_cells(s: Obj, now: float) -> list[Any]:
    desired = _get(s, "spec", "replicas", default=1)
    return [_name(s), f"{_get(s, 'status', 'readyReplicas', default=0)}/{desired}", _age(s, now), *_workload_wide(s)]


def _job_condition(job: Obj, kind: str) -> bool:
    return any(isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
               for c in _get(job, "status", "conditions", default=()) or ())


# printJob (1.32): a Job that met its success criteria but is not Complete yet still reads Running.
_JOB_STATUS_ORDER = ("Complete", "Failed", "Terminating", "Suspended", "FailureTarget")


def _job_cells(job: Obj, now: float) -> list[Any]:
    """printJob (1.32): STATUS from the conditions (Terminating when deleted, Running otherwise),
    COMPLETIONS ``succeeded/completions`` (``n/1 of p`` for a work queue), DURATION start to completion
    (or to now while running)."""
    succeeded = _get(job, "status", "succeeded", default=0)
    completions = _get(job, "spec", "completions")
    parallelism = _get(job, "spec", "parallelism", default=0)
    if completions is not None:
        done = f"{succeeded}/{completions}"
    else:
        done = f"{succeeded}/1 of {parallelism}" if isinstance(parallelism, int) and parallelism > 1 else f"{succeeded}/1"
    took = ""
    start, finish = _get(job, "status", "startTime"), _get(job, "status", "completionTime")
    if isinstance(start, str):
        try:
            end = parse_time(finish) if isinstance(finish, str) else now
            took = human_duration(end - parse_time(start))
        except ValueError:
            took = ""
    status = "Running"
    for kind in _JOB_STATUS_ORDER:
        if (kind == "Terminating" and _get(job, "metadata", "deletionTimestamp") is not None) or (
                kind != "Terminating" and _job_condition(job, kind)):
            status = kind
            break
    return [_name(job), status, done, took, _age(job, now), *_workload_wide(job),
            _selector_text(_get(job, "spec", "selector"))]


def _cronjob_cells(cj: Obj, now: float) -> list[Any]:
    """printCronJob (1.32): the schedule, the time zone (``<none>`` unset), suspend as printBoolPtr
    (``<unset>`` when nil), how many Jobs are active, the last schedule's age (``<none>``), then the job
    template's containers, images and selector (wide)."""
    suspend = _get(cj, "spec", "suspend")
    active = _get(cj, "status", "active", default=[])
    last = _get(cj, "status", "lastScheduleTime")
    containers = _containers(cj, "spec", "jobTemplate", "spec", "template")
    return [_name(cj), _get(cj, "spec", "schedule", default=""), _get(cj, "spec", "timeZone", default="<none>"),
            "<unset>" if suspend is None else "True" if suspend is True else "False",
            len(active) if isinstance(active, list) else 0,
            _age(cj, now, ("status", "lastScheduleTime")) if last is not None else "<none>", _age(cj, now),
            _join(c.get("name", "") for c in containers), _join(c.get("image", "") for c in containers),
            _selector_text(_get(cj, "spec", "jobTemplate", "spec", "selector"))]


def _access_modes(modes: Any) -> str:
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
    return ",".join(short.get(m, m) for m in modes or [])


def _pvc_cells(pvc: Obj, now: float) -> list[Any]:
    phase = _get(pvc, "status", "phase", default="")
    if _get(pvc, "metadata", "deletionTimestamp") is not None:
        phase = "Terminating"
    bound = phase == "Bound"
    return [
        _name(pvc), phase, _get(pvc, "spec", "volumeName", default=""),
        _get(pvc, "status", "capacity", "storage", default="") if bound else "",
        _access_modes(_get(pvc, "status", "accessModes")) if bound else "",
        _get(pvc, "spec", "storageClassName", default=""),
        _get(pvc, "spec", "volumeAttributesClassName") or "<unset>", _age(pvc, now),
        _get(pvc, "spec", "volumeMode", default=""),
    ]


def _pv_cells(pv: Obj, now: float) -> list[Any]:
    claim = _get(pv, "spec", "claimRef")
    claim_text = f"{claim.get('namespace', '')}/{claim.get('name', '')}" if isinstance(claim, dict) else ""
    phase = _get(pv, "status", "phase", default="")
    if _get(pv, "metadata", "deletionTimestamp") is not None:
        phase = "Terminating"
    return [
        _name(pv), _get(pv, "spec", "capacity", "storage", default=""), _access_modes(_get(pv, "spec", "accessModes")),
        _get(pv, "spec", "persistentVolumeReclaimPolicy", default=""), phase, claim_text,
        _get(pv, "spec", "storageClassName", default=""),
        _get(pv, "spec", "volumeAttributesClassName") or "<unset>", _get(pv, "status", "reason", default=""),
        _age(pv, now), _get(pv, "spec", "volumeMode", default=""),
    ]


def _controller_revision_cells(cr: Obj, now: float) -> list[Any]:
    controller = "<none>"
    for ref in _get(cr, "metadata", "ownerReferences", default=None) or []:
        if isinstance(ref, dict) and ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = str(ref.get("kind", "")) + (f".{group}" if group else "")
            controller = f"{kind.lower()}/{ref.get('name', '')}"
            break
    return [_name(cr), controller, cr.get("revision", 0), _age(cr, now)]


def _event_cells(ev: Obj, now: float) -> list[Any]:
    last = ev.get("lastTimestamp") or ev.get("eventTime") or _get(ev, "series", "lastObservedTime")
    first = ev.get("firstTimestamp") or ev.get("eventTime")
    involved = ev.get("involvedObject") or {}
    obj = f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"
    source = ev.get("reportingComponent") or _get(ev, "source", "component", default="")
    host = _get(ev, "source", "host")
    if host:
        source = f"{source}, {host}"
    return [
        _age({"t": last}, now, ("t",)), ev.get("type", ""), ev.get("reason", ""), obj,
        involved.get("fieldPath", ""), source, str(ev.get("message", "")).strip(),
        _age({"t": first}, now, ("t",)), ev.get("count", 1), _name(ev),
    ]


def _service_cells(svc: Obj, now: float) -> list[Any]:
    spec = svc.get("spec") or {}
    ports = ",".join(
        f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/{p.get('protocol', 'TCP')}"
        for p in spec.get("ports") or []
    )
    external = ",".join(spec.get("externalIPs") or []) or ("<pending>" if spec.get("type") == "LoadBalancer" else "<none>")
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
    return [_name(svc), spec.get("type", "ClusterIP"), spec.get("clusterIP") or "<none>", external,
            ports or "<none>", _age(svc, now), selector]


def _more(items: list[str], count: int, empty: str) -> str:
    """printers.go: the first three, then `` + N more...``."""
    text = ",".join(items[:3])
    if count > 3:
        return f"{text} + {count - 3} more..."
    return text or empty


def _endpoints_cells(ep: Obj, now: float) -> list[Any]:
    """printEndpoints / formatEndpoints: ``ip:port`` per address and port of each subset."""
    subsets = ep.get("subsets") or []
    items: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [str(a.get("ip", "")) for a in subset.get("addresses") or [] if isinstance(a, dict)]
        ports = [p for p in subset.get("ports") or [] if isinstance(p, dict)]
        if not ports:  # headless services may have no ports
            count += len(addresses)
            items.extend(addresses)
            continue
        for port in ports:
            count += len(addresses)
            items.extend(f"[{ip}]:{port.get('port')}" if ":" in ip else f"{ip}:{port.get('port')}" for ip in addresses)
    return [_name(ep), _more(items, count, "") if subsets else "<none>", _age(ep, now)]


def _endpointslice_cells(es: Obj, now: float) -> list[Any]:
    """printEndpointSlice: formatDiscoveryPorts and formatDiscoveryEndpoints (``<unset>`` when empty)."""
    ports = [p for p in es.get("ports") or [] if isinstance(p, dict)]
    shown = [str(p["port"]) if p.get("port") is not None else str(p["name"]) if p.get("name") is not None else "*"
             for p in ports]
    addresses = [str(a) for e in es.get("endpoints") or [] if isinstance(e, dict) for a in e.get("addresses") or []]
    return [_name(es), es.get("addressType", ""), _more(shown, len(shown), "<unset>"),
            _more(addresses, len(addresses), "<unset>"), _age(es, now)]


def _binding_cells(b: Obj, now: float) -> list[Any]:
    ref = b.get("roleRef") or {}
    subjects = b.get("subjects") or []

    def names(kind: str) -> str:
        return ", ".join(
            (f"{s.get('namespace', '')}/{s.get('name', '')}" if kind == "ServiceAccount" else s.get("name", ""))
            for s in subjects if s.get("kind") == kind
        )

    return [_name(b), f"{ref.get('kind', '')}/{ref.get('name', '')}", _age(b, now),
            names("User"), names("Group"), names("ServiceAccount")]


def _pdb_cells(pdb: Obj, now: float) -> list[Any]:
    spec = pdb.get("spec") or {}
    return [_name(pdb), str(spec.get("minAvailable", "N/A")), str(spec.get("maxUnavailable", "N/A")),
            _get(pdb, "status", "disruptionsAllowed", default=0), _age(pdb, now)]


def _storageclass_cells(sc: Obj, now: float) -> list[Any]:
    name = _name(sc)
    annotations = _get(sc, "metadata", "annotations", default={}) or {}
    if annotations.get("storageclass.kubernetes.io/is-default-class") == "true":
        name += " (default)"
    return [name, sc.get("provisioner", ""), sc.get("reclaimPolicy", "Delete"),
            sc.get("volumeBindingMode", "Immediate"), bool(sc.get("allowVolumeExpansion", False)), _age(sc, now)]


def _limit_range_cells(lr: Obj, now: float) -> list[Any]:
    # printLimitRange: the creation time itself (a "date" column), not an age.
    return [_name(lr), _get(lr, "metadata", "creationTimestamp")]


def _resource_quota_cells(rq: Obj, now: float) -> list[Any]:
    """printResourceQuota: ``name: used/hard`` for each of ``status.hard`` in name order, ``limits.*`` in
    the Limit column and everything else in the Request column."""
    hard = _get(rq, "status", "hard", default={}) or {}
    used = _get(rq, "status", "used", default={}) or {}
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        parts = name.split(".")
        column = limits if len(parts) > 1 and parts[0] == "limits" else requests
        column.append(f"{name}: {used.get(name, '0')}/{hard[name]}")
    return [_name(rq), _age(rq, now), ", ".join(requests), ", ".join(limits)]


def _policy_cells(policy: Obj, now: float) -> list[Any]:
    """printValidatingAdmissionPolicy: the number of validations and ``apiVersion/kind`` of the paramKind."""
    spec = policy.get("spec") or {}
    param_kind = spec.get("paramKind")
    shown = f"{param_kind.get('apiVersion', '')}/{param_kind.get('kind', '')}" if isinstance(param_kind, dict) else "<unset>"
    return [_name(policy), len(spec.get("validations") or []), shown, _age(policy, now)]


def _policy_binding_cells(binding: Obj, now: float) -> list[Any]:
    """printValidatingAdmissionPolicyBinding: the policy and the param reference (``namespace/name``, ``*/name``
    when the request's namespace is meant, or the selector)."""
    spec = binding.get("spec") or {}
    ref = spec.get("paramRef")
    shown = "<unset>"
    if isinstance(ref, dict):
        if ref.get("name"):
            shown = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif isinstance(ref.get("selector"), dict):
            shown = go_label_selector_string(ref["selector"])
    return [_name(binding), spec.get("policyName", ""), shown, _age(binding, now)]


def _s(name: str, priority: int = 0, fmt: str = "") -> Column:
    return (name, "string", fmt, priority)


def _i(name: str, priority: int = 0) -> Column:
    return (name, "integer", "", priority)


_NAME = _s("Name", fmt="name")
_AGE = _s("Age")
_WORKLOAD_WIDE = [_s("Containers", 1), _s("Images", 1)]

PRINTERS: dict[tuple[str, str], tuple[list[Column], Cells]] = {
    ("", "Pod"): ([_NAME, _s("Ready"), _s("Status"), _s("Restarts"), _AGE, _s("IP", 1), _s("Node", 1),
                   _s("Nominated Node", 1), _s("Readiness Gates", 1)], _pod_cells),
    ("", "ConfigMap"): ([_NAME, _i("Data"), _AGE],
                        lambda o, now: [_name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o, now)]),
    ("", "Secret"): ([_NAME, _s("Type"), _i("Data"), _AGE],
                     lambda o, now: [_name(o), o.get("type", "Opaque"), len(o.get("data") or {}), _age(o, now)]),
    ("", "ServiceAccount"): ([_NAME, _i("Secrets"), _AGE],
                             lambda o, now: [_name(o), len(o.get("secrets") or []), _age(o, now)]),
    ("", "Namespace"): ([_NAME, _s("Status"), _AGE],
                        lambda o, now: [_name(o), _get(o, "status", "phase", default="Active"), _age(o, now)]),
    ("", "Node"): ([_NAME, _s("Status"), _s("Roles"), _AGE, _s("Version"), _s("Internal-IP", 1), _s("External-IP", 1),
                    _s("OS-Image", 1), _s("Kernel-Version", 1), _s("Container-Runtime", 1)], _node_cells),
    ("", "Event"): ([_s("Last Seen"), _s("Type"), _s("Reason"), _s("Object"), _s("Subobject", 1), _s("Source", 1),
                     _s("Message"), _s("First Seen", 1), _i("Count", 1), _s("Name", 1, "name")], _event_cells),
    # k/k printers.go (1.29+): VolumeAttributesClass is a default column, before Age.
    ("", "PersistentVolumeClaim"): ([_NAME, _s("Status"), _s("Volume"), _s("Capacity"), _s("Access Modes"),
                                     _s("StorageClass"), _s("VolumeAttributesClass"), _AGE, _s("VolumeMode", 1)],
                                    _pvc_cells),
    ("", "PersistentVolume"): ([_NAME, _s("Capacity"), _s("Access Modes"), _s("Reclaim Policy"), _s("Status"),
                                _s("Claim"), _s("StorageClass"), _s("VolumeAttributesClass"), _s("Reason"), _AGE,
                                _s("VolumeMode", 1)], _pv_cells),
    ("", "Service"): ([_NAME, _s("Type"), _s("Cluster-IP"), _s("External-IP"), _s("Port(s)"), _AGE,
                       _s("Selector", 1)], _service_cells),
    # k/k pkg/printers/internalversion/printers.go (limitRangeColumnDefinitions, resourceQuotaColumnDefinitions).
    ("", "LimitRange"): ([_NAME, ("Created At", "date", "", 0)], _limit_range_cells),
    ("", "ResourceQuota"): ([_NAME, _AGE, _s("Request"), _s("Limit")], _resource_quota_cells),
    ("", "Endpoints"): ([_NAME, _s("Endpoints"), _AGE], _endpoints_cells),
    # k/k printers.go replicationControllerColumnDefinitions and podTemplateColumnDefinitions.
    ("", "ReplicationController"): ([_NAME, _i("Desired"), _i("Current"), _i("Ready"), _AGE, *_WORKLOAD_WIDE,
                                     _s("Selector", 1)], _replication_controller_cells),
    ("", "PodTemplate"): ([_NAME, _s("Containers"), _s("Images"), _s("Pod Labels")], _pod_template_cells),
    ("discovery.k8s.io", "EndpointSlice"): ([_NAME, _s("AddressType"), _s("Ports"), _s("Endpoints"), _AGE],
                                            _endpointslice_cells),
    ("apps", "Deployment"): ([_NAME, _s("Ready"), _i("Up-to-date"), _i("Available"), _AGE, *_WORKLOAD_WIDE,
                              _s("Selector", 1)], _deployment_cells),
    ("apps", "ReplicaSet"): ([_NAME, _i("Desired"), _i("Current"), _i("Ready"), _AGE, *_WORKLOAD_WIDE,
                              _s("Selector", 1)], _replicaset_cells),
    ("apps", "DaemonSet"): ([_NAME, _i("Desired"), _i("Current"), _i("Ready"), _i("Up-to-date"), _i("Available"),
                             _s("Node Selector"), _AGE, *_WORKLOAD_WIDE, _s("Selector", 1)], _daemonset_cells),
    ("apps", "ControllerRevision"): ([_NAME, _s("Controller"), _s("Revision"), _AGE], _controller_revision_cells),
    ("apps", "StatefulSet"): ([_NAME, _s("Ready"), _AGE, *_WORKLOAD_WIDE], _statefulset_cells),
    ("batch", "Job"): ([_NAME, _s("Status"), _s("Completions"), _s("Duration"), _AGE, *_WORKLOAD_WIDE,
                        _s("Selector", 1)], _job_cells),
    ("batch", "CronJob"): ([_NAME, _s("Schedule"), _s("Timezone"), ("Suspend", "boolean", "", 0), _i("Active"),
                            _s("Last Schedule"), _AGE, *_WORKLOAD_WIDE, _s("Selector", 1)], _cronjob_cells),
    ("autoscaling", "HorizontalPodAutoscaler"): ([_NAME, _s("Reference"), _s("Targets"), _s("MinPods"), _s("MaxPods"),
                                                  _s("Replicas"), _AGE],
                                                 lambda o, now: hpa_cells(o, _name(o), _age(o, now))),
    ("coordination.k8s.io", "Lease"): ([_NAME, _s("Holder"), _AGE], lambda o, now: [
        _name(o), _get(o, "spec", "holderIdentity", default=""), _age(o, now)]),
    # k/k printers.go ingressColumnDefinitions, ingressClassColumnDefinitions, networkPolicyColumnDefinitions.
    ("networking.k8s.io", "Ingress"): ([_NAME, _s("Class"), _s("Hosts"), _s("Address"), _s("Ports"), _AGE],
                                       ingress_cells(_name, _age)),
    ("networking.k8s.io", "IngressClass"): ([_NAME, _s("Controller"), _s("Parameters"), _AGE],
                                            ingress_class_cells(_name, _age)),
    ("networking.k8s.io", "NetworkPolicy"): ([_NAME, _s("Pod-Selector"), _AGE],
                                             network_policy_cells(_name, _age, _selector_text)),
    ("policy", "PodDisruptionBudget"): ([_NAME, _s("Min Available"), _s("Max Unavailable"),
                                         _i("Allowed Disruptions"), _AGE], _pdb_cells),
    ("storage.k8s.io", "StorageClass"): ([_NAME, _s("Provisioner"), _s("ReclaimPolicy"), _s("VolumeBindingMode"),
                                          ("AllowVolumeExpansion", "boolean", "", 0), _AGE], _storageclass_cells),
    # k/k printers.go: PreemptionPolicy after Age since 1.32 (kubernetes#126529), empty when unset.
    ("scheduling.k8s.io", "PriorityClass"): ([_NAME, _i("Value"), ("Global-Default", "boolean", "", 0), _AGE,
                                              _s("PreemptionPolicy")], lambda o, now: [
        _name(o), o.get("value") or 0, bool(o.get("globalDefault")), _age(o, now), o.get("preemptionPolicy") or ""]),
    # k/k printers.go validatingAdmissionPolicy / validatingAdmissionPolicyBinding column definitions.
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): (
        [_NAME, _i("Validations"), _s("ParamKind"), _AGE], _policy_cells),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): (
        [_NAME, _s("PolicyName"), _s("ParamRef"), _AGE], _policy_binding_cells),
    # k/k printers.go: Name, Webhooks (how many), Age.
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): ([_NAME, _i("Webhooks"), _AGE], lambda o, now: [
        _name(o), len(o.get("webhooks") or ()), _age(o, now)]),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): ([_NAME, _i("Webhooks"), _AGE], lambda o, now: [
        _name(o), len(o.get("webhooks") or ()), _age(o, now)]),
    ("rbac.authorization.k8s.io", "RoleBinding"): ([_NAME, _s("Role"), _AGE, _s("Users", 1), _s("Groups", 1),
                                                    _s("ServiceAccounts", 1)], _binding_cells),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ([_NAME, _s("Role"), _AGE, _s("Users", 1), _s("Groups", 1),
                                                           _s("ServiceAccounts", 1)], _binding_cells),
}

_CREATION_TIMESTAMP = "CreationTimestamp is a timestamp representing the server time when this object was created."
_DESCRIPTIONS = {
    "Name": "Name must be unique within a namespace. Cannot be updated.",
    "Age": _CREATION_TIMESTAMP,
    "Created At": _CREATION_TIMESTAMP,
    "Request": "Request represents a minimum amount of cpu/memory that a container may consume.",
    "Limit": "Limits control the maximum amount of cpu/memory that a container may use independent of contention "
             "on the node.",
}


# ------------------------------------------------------------------------- JSONPath for printer columns

_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\*)\]|\[\?\(@\.([\w.-]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]")


def jsonpath_values(obj: Any, path: str) -> list[Any]:
    """The values a CRD ``jsonPath`` such as ``.spec.replicas``, ``.status.conditions[0].type`` or
    ``.status.conditions[?(@.type=="Ready")].status`` selects (the subset printer columns use)."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    if not path.startswith("."):
        path = "." + path
    current = [obj]
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            return []
        pos = m.end()
        nxt: list[Any] = []
        for value in current:
            if m.group(1) is not None:
                if isinstance(value, dict) and m.group(1) in value:
                    nxt.append(value[m.group(1)])
            elif m.group(2) is not None:
                if isinstance(value, list):
                    if m.group(2) == "*":
                        nxt.extend(value)
                    elif int(m.group(2)) < len(value):
                        nxt.append(value[int(m.group(2))])
            elif isinstance(value, list):
                key, want = m.group(3), m.group(4)
                nxt.extend(v for v in value if isinstance(v, dict) and str(_get(v, *key.split("."))) == want)
        current = nxt
    return current


def _custom_columns(columns: list[Obj]) -> tuple[list[Column], Cells]:
    # customresource_handler.go serveDefaultColumnsIfEmpty: only a CRD version without columns
    # gets the default Age column (a date cell, .metadata.creationTimestamp).
    if not columns:
        columns = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    defs: list[Column] = [_NAME]
    for col in columns:
        kind = col.get("type", "string")
        defs.append((str(col.get("name", "")), kind, str(col.get("format", "")), int(col.get("priority", 0))))

    def cells(obj: Obj, now: float) -> list[Any]:
        row: list[Any] = [_name(obj)]
        for col in columns:
            values = jsonpath_values(obj, str(col.get("jsonPath", "")))
            if not values:
                row.append(None)
                continue
            value = values[0]
            if col.get("type") == "date" and isinstance(value, str):
                try:
                    value = human_duration(now - parse_time(value))
                except ValueError:
                    pass
            elif isinstance(value, (dict, list)):
                value = json.dumps(value, separators=(",", ":"))
            row.append(value)
        return row

    return defs, cells


def _default_columns() -> tuple[list[Column], Cells]:
    return ([_NAME, ("Created At", "date", "", 0)],
            lambda o, now: [_name(o), _get(o, "metadata", "creationTimestamp", default="")])


def _partial_metadata(obj: Obj) -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table_for(
    info: ResourceInfo,
    objects: list[Obj],
    *,
    now: float,
    include_object: str | None = None,
    printer_columns: list[Obj] | None = None,
    resource_version: str = "",
    continue_token: str = "",
    remaining: int | None = None,
    with_column_definitions: bool = True,
) -> Obj:
    """A ``Table`` of ``objects`` with the kind's columns; ``printer_columns`` are a CRD version's
    ``additionalPrinterColumns``. ``with_column_definitions=False`` is for watch events after the first."""
    mode = include_object or "Metadata"
    if mode not in ("Metadata", "Object", "None"):
        raise BadRequest(f'unrecognized includeObject value: "{mode}"')
    if info.custom and printer_columns:
        columns, cells = _custom_columns(printer_columns)
    elif info.custom:
        columns, cells = _custom_columns([])
    else:
        columns, cells = PRINTERS.get((info.group, info.kind)) or _default_columns()
    rows = []
    for obj in objects:
        row_object: Obj | None = None
        if mode == "Metadata":
            row_object = _partial_metadata(obj)
        elif mode == "Object":
            row_object = obj
        rows.append({"cells": cells(obj, now)[: len(columns)], "object": row_object})
    metadata: Obj = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    if remaining is not None:
        metadata["remainingItemCount"] = remaining
    table: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}
    if with_column_definitions:
        table["columnDefinitions"] = [
            {"name": name, "type": typ, "format": fmt, "description": _DESCRIPTIONS.get(name, name), "priority": prio}
            for name, typ, fmt, prio in columns
        ]
    else:
        table["columnDefinitions"] = None
    table["rows"] = rows
    return table


class TableEvents:
    """A watch's events as Tables of one row (the server's ``watch`` transform for ``as=Table``).

    ``key`` names everything a rendering depends on but the object, ``first`` and the time: the kind
    and version (a custom resource's columns are its version's), ``includeObject`` and the printer
    columns. Two watchers with equal keys render an event alike, so they may share the rendering.
    """

    __slots__ = ("_columns", "_include", "_info", "key")

    def __init__(self, info: ResourceInfo, *, include_object: str | None,
                 printer_columns: list[Obj] | None) -> None:
        self._info = info
        self._include = include_object
        self._columns = printer_columns
        columns = orjson.dumps(printer_columns) if printer_columns is not None else None
        self.key: Hashable = (info.group, info.version, info.kind, info.custom, include_object, columns)

    def __call__(self, obj: Obj, first: bool, now: float) -> Obj:
        return table_for(self._info, [obj], now=now, include_object=self._include,
                         printer_columns=self._columns,
                         resource_version=str((obj.get("metadata") or {}).get("resourceVersion") or ""),
                         with_column_definitions=first)
