"""Instructions per request through the real app: ``python benchmarks/instructions.py`` (needs valgrind).

Wall-clock rates on a shared two-core machine move by +-20% between runs, which hides any change worth
less than that. This benchmark counts instead: it runs N in-process requests through the app exactly as
``kubeloop apiserver`` builds it (security chain, admission, the durable SQLite store, garbage-collector
tuning) under ``valgrind --tool=callgrind``, once with N and once with 2N requests, and prints
``(Ir(2N) - Ir(N)) / N``: the instructions one more request costs, start-up and warm-up cancelled out.
Repeated runs agree to about 0.3%.

What it does not count: the kernel (fsync, sockets), uvicorn, TLS and the time lost to cache misses or
thread hand-offs (callgrind runs threads one at a time). Use it to compare two trees (``--tree``), and
``benchmarks/apiserver.py`` for the rates themselves.

Both runs of a tree measure one frozen copy of its ``src/`` (:func:`frozen_src`), compiled to bytecode
beforehand: compiling kubeloop's modules costs about 1.7G instructions, so a run that finds one module's
cached bytecode stale (a merge into the measured checkout between the N and the 2N run, or another
process writing ``__pycache__``) would count tens of millions more than its twin: the likely cause of
``--user serviceaccount`` against ``/work/main`` reading -48,116 and then 123,781 per create on
2026-11-30, while merges landed there (docs/performance.md, "Non-admin requests").

Requests: 64 concurrent callers, each looping over ``POST`` of a ConfigMap (a 512-byte value), or ``GET``
of one ConfigMap, as the two first parts of ``benchmarks/apiserver.py`` do over HTTPS, or ``PUT`` of its own
ConfigMap (unconditional, a new value each time: every PUT is a real update, none a lost race), or ``PATCH`` of
its own ConfigMap (``--verb patch``: a merge patch setting a new value, as ``kubectl patch --type merge`` sends
it, with ``fieldValidation=Strict`` as kubectl asks). Named with ``--verb`` only, the JSON bodies client-go writes (a newline at the end):
``create-clientgo`` (the ConfigMap with ``creationTimestamp: null``, under ``kubectl create``'s query string)
and ``update-clientgo`` (the object as read back, managedFields and all, with a new value and its
resourceVersion, under ``kubectl replace``'s query string; each PUT sends the previous one's answer, as an
update loop does). Each is made by
the admin (``system:masters``: no RBAC evaluation) and, with ``--user serviceaccount`` (or ``both``), by a
service account that is not a master: ``system:serviceaccount:default:bench``, allowed by a Role of
``default`` through a RoleBinding (create, get and update ConfigMaps) next to a ``view``-like ClusterRole bound by a
ClusterRoleBinding, with the bootstrap policy the server starts with. Its requests pay the whole RBAC
authorization; the admin's do not.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import importlib.util
import inspect
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

CALLERS = 64
REQUESTS = 640
USERS = ("admin", "serviceaccount")
SERVICE_ACCOUNT = "system:serviceaccount:default:bench"
RBAC_V1 = "/apis/rbac.authorization.k8s.io/v1"


# kubeloop.server._metrics.STATUS_KEY, spelled out: an older tree measured beside this one has no such module.
# kubeloop's serving layer puts the response status there (the app's metrics read it); the calls here do too.
STATUS_KEY = "kubeloop.response_status"

VERBS = ("create", "get", "update", "patch")
# Measured only when asked (``--verb``): the JSON bodies client-go writes, with kubectl's query strings.
# client-go's JSON serializer ends every body with a newline (json.Encoder.Encode) and writes a zero
# metav1.Time as null (omitempty does not omit a struct): ``metadata.creationTimestamp: null`` in every create
# (kubectl 1.32's own ``create configmap`` sends protobuf, which kubeloop decodes to the same object);
# ``kubectl replace`` (JSON, newline included) and client-go's Update put back what they read (uid,
# resourceVersion, creationTimestamp, managedFields) with a new value; the update loop here sends each
# answer back.
CLIENT_VERBS = ("create-clientgo", "update-clientgo")
KUBECTL_CREATE_QUERY = b"fieldManager=kubectl-create&fieldValidation=Strict"
KUBECTL_REPLACE_QUERY = b"fieldManager=kubectl-replace&fieldValidation=Strict"


def configmap(name: str, serial: int | None = None) -> bytes:
    import orjson

    data = {"k": "v" * 512} if serial is None else {"k": "v" * 512, "serial": str(serial)}
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})


def clientgo_configmap(name: str) -> bytes:
    """client-go's JSON body for ``kubectl create configmap NAME --from-literal=k=<512 v>``'s object, key order
    and newline included."""
    import orjson

    return orjson.dumps({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name, "creationTimestamp": None},
                         "data": {"k": "v" * 512}}) + b"\n"


def rbac_objects() -> list[tuple[str, dict[str, Any]]]:
    """(collection, object): the service account's Role, ClusterRole and their bindings."""
    ref = {"apiGroup": "rbac.authorization.k8s.io"}
    subject = [{"kind": "ServiceAccount", "name": "bench", "namespace": "default"}]
    # A read-only ClusterRole shaped like upstream's ``view`` (a rule per API group), which grants
    # nothing on ConfigMap writes: a create is allowed only by the Role, found after these rules.
    view = [
        {"apiGroups": [""], "resources": ["pods", "pods/log", "pods/status", "services", "endpoints",
                                          "persistentvolumeclaims", "replicationcontrollers", "events"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["deployments", "replicasets", "statefulsets", "daemonsets"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "networkpolicies"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch"]},
    ]
    return [
        (f"{RBAC_V1}/clusterroles", {"kind": "ClusterRole", "metadata": {"name": "bench-view"}, "rules": view}),
        (f"{RBAC_V1}/clusterrolebindings", {"kind": "ClusterRoleBinding", "metadata": {"name": "bench-view"},
                                            "roleRef": ref | {"kind": "ClusterRole", "name": "bench-view"},
                                            "subjects": subject}),
        (f"{RBAC_V1}/namespaces/default/roles", {
            "kind": "Role", "metadata": {"name": "bench", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "verbs": ["create", "get", "list", "update", "patch"]}]}),
        (f"{RBAC_V1}/namespaces/default/rolebindings", {
            "kind": "RoleBinding", "metadata": {"name": "bench", "namespace": "default"},
            "roleRef": ref | {"kind": "Role", "name": "bench"}, "subjects": subject}),
    ]


async def _read(app: Any, path: str, token: bytes) -> dict[str, Any]:
    import orjson

    out: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        out.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"host", b"localhost"), (b"accept", b"application/json"), (b"authorization", token)]}
    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in out if m["type"] == "http.response.body")
    result: dict[str, Any] = orjson.loads(body)
    return result


async def drive(verb: str, n: int, directory: Path, user: str = "admin") -> None:
    """Build the app as ``kubeloop apiserver`` does and run ``n`` requests as ``user`` (after a warm-up)."""
    import orjson

    from kubeloop.cli import _cluster
    from kubeloop.server import User
    from kubeloop.store import SqliteStore

    admin = User("kubernetes-admin", groups=("system:masters", "system:authenticated"))
    account = User(SERVICE_ACCOUNT, groups=("system:serviceaccounts", "system:serviceaccounts:default",
                                            "system:authenticated"))
    store = await SqliteStore.open(directory / "db")
    readiness = _cluster._Readiness(controllers=False)
    readiness.set_serving()
    tokens = {"t": admin, "s": account}

    async def token_file() -> dict[str, User]:
        return tokens

    # Since start-up round 8 the app takes the token file as an awaitable (read while it bootstraps); older
    # trees, measured side by side, take the map itself.
    factory = "Callable" in str(inspect.signature(_cluster._build_app).parameters["tokens"].annotation)
    tokens_arg: Any = token_file if factory else tokens
    _core, app = await _cluster._build_app(store, tokens=tokens_arg,
                                           readiness=readiness, server_address="127.0.0.1:1")
    _cluster._tune_gc()
    collection = "/api/v1/namespaces/default/configmaps"
    token = b"Bearer t" if user == "admin" else b"Bearer s"

    async def call(method: str, path: str, body: bytes = b"", auth: bytes = token,
                   media: bytes = b"application/json", query: bytes = b"",
                   out: list[MutableMapping[str, Any]] | None = None) -> int:
        if out is None:
            out = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":  # as kubeloop's serving layer tells the app
                scope[STATUS_KEY] = message["status"]
            out.append(message)

        headers = [(b"host", b"localhost"), (b"accept", b"application/json"), (b"authorization", auth),
                   (b"content-type", media), (b"content-length", str(len(body)).encode())]
        scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": query,
                 "headers": headers, STATUS_KEY: 0}
        await app(scope, receive, send)
        return int(out[0]["status"])

    names = itertools.count()
    serials = itertools.count()
    for path, obj in rbac_objects():
        assert await call("POST", path, orjson.dumps(obj), auth=b"Bearer t") == 201
    assert await call("POST", collection, configmap("get-me")) == 201
    read_back: list[MutableMapping[str, Any]] = []
    for i in range(CALLERS):
        assert await call("POST", collection, configmap(f"u{i}")) == 201
        if verb == "update-clientgo":  # what kubectl replace read: the object as stored, managedFields included
            read_back.append(await _read(app, f"{collection}/u{i}", token))

    async def one(i: int) -> None:
        if verb == "create":
            status = await call("POST", collection, configmap(f"c{next(names)}"))
            assert status == 201, status
        elif verb == "update":
            status = await call("PUT", f"{collection}/u{i}", configmap(f"u{i}", next(serials)))
            assert status == 200, status
        elif verb == "create-clientgo":
            status = await call("POST", collection, clientgo_configmap(f"c{next(names)}"), query=KUBECTL_CREATE_QUERY)
            assert status == 201, status
        elif verb == "update-clientgo":
            # What an update loop sends (obj = Update(obj)): the last answer with a new value, its
            # resourceVersion a precondition (each caller writes its own object: no lost race).
            sent = dict(read_back[i], data={"k": "v" * 512, "serial": str(next(serials))})
            answer: list[MutableMapping[str, Any]] = []
            body = orjson.dumps(sent) + b"\n"
            status = await call("PUT", f"{collection}/u{i}", body, query=KUBECTL_REPLACE_QUERY, out=answer)
            assert status == 200, status
            read_back[i] = orjson.loads(b"".join(m.get("body", b"") for m in answer if m["type"] == "http.response.body"))
        elif verb == "patch":
            patch = orjson.dumps({"data": {"serial": str(next(serials))}})
            status = await call("PATCH", f"{collection}/u{i}", patch, media=b"application/merge-patch+json",
                                query=b"fieldValidation=Strict")
            assert status == 200, status
        else:
            status = await call("GET", f"{collection}/get-me")
            assert status == 200, status

    async def caller(i: int, count: int) -> None:
        for _ in range(count):
            await one(i)

    await asyncio.gather(*(caller(i, 2) for i in range(CALLERS)))  # warm-up: every cache and code path once
    await asyncio.gather(*(caller(i, n // CALLERS) for i in range(CALLERS)))
    await store.close()


@contextlib.contextmanager
def frozen_src(tree: Path | None) -> Any:
    """A temporary checkout holding a copy of ``tree``'s ``src/`` (the installed kubeloop's when ``None``),
    every module compiled to bytecode: what both runs of a comparison import, whatever happens to the
    tree meanwhile, and a copy of these scripts beside it (shared with benchmarks/watch_instructions.py)."""
    if tree is not None:
        src = tree / "src"
    else:
        spec = importlib.util.find_spec("kubeloop")
        if spec is None or spec.origin is None:
            raise SystemExit("kubeloop is not importable: pass --tree")
        src = Path(spec.origin).parent.parent
    with tempfile.TemporaryDirectory(prefix="kubeloop-ir-tree-") as tmp:
        copy = Path(tmp) / "src"
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__"))
        # The scripts too (a script is compiled at every run): callgrind_count runs the copy's.
        shutil.copytree(Path(__file__).parent, Path(tmp) / "benchmarks", ignore=shutil.ignore_patterns("__pycache__"))
        if not compileall.compile_dir(copy, quiet=1):
            raise SystemExit(f"{src} does not compile")
        yield Path(tmp)


def callgrind_count(script: str, arguments: list[str], tree: Path | None, **env_extra: str) -> int:
    """Ir of ``python script arguments`` under callgrind, with ``tree``'s src/ first on the path
    (shared with benchmarks/watch_instructions.py; pass a :func:`frozen_src` copy, as ``main`` does).
    The child writes no bytecode: what it imports is what the copy holds."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **env_extra)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "src")
        frozen_script = tree / "benchmarks" / Path(script).name
        if frozen_script.is_file():
            script = str(frozen_script)
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, script, *arguments]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    match = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or match is None:
        raise SystemExit(f"callgrind run failed:\n{done.stderr[-2000:]}")
    return int(match.group(1))


def instructions(verb: str, n: int, tree: Path | None, user: str) -> int:
    """Ir of one run of ``n`` requests by ``user`` under callgrind."""
    return callgrind_count(__file__, ["_drive", verb, str(n), user], tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, action="append",
                        help="a checkout to measure (its src/ first on the path); repeat to compare trees")
    parser.add_argument("--requests", type=int, default=REQUESTS, help=f"N (a multiple of {CALLERS})")
    parser.add_argument("--verb", choices=VERBS + CLIENT_VERBS, action="append",
                        help="measure only these (repeatable); the client-shaped ones only when named")
    parser.add_argument("--user", choices=(*USERS, "both"), default="admin",
                        help="who makes the requests: the admin (system:masters), a service account under RBAC, or both")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    n = max(CALLERS, args.requests // CALLERS * CALLERS)
    trees: list[Path | None] = list(args.tree) if args.tree else [None]
    users = USERS if args.user == "both" else (args.user,)
    verbs = [verb for verb in VERBS + CLIENT_VERBS if verb in (args.verb or VERBS)]
    titles = {"create": "Ir per create", "get": "Ir per GET", "update": "Ir per PUT", "patch": "Ir per PATCH",
              "create-clientgo": "client-go POST", "update-clientgo": "client-go PUT"}
    print(" | ".join([f"{'tree':<40}", f"{'user':<14}", *(f"{titles[verb]:>14}" for verb in verbs)]))
    for tree in trees:
        with frozen_src(tree) as frozen:
            for user in users:
                row = []
                for verb in verbs:
                    print(f"running: {verb} x {n} and x {2 * n} by {user} under callgrind ({tree or 'installed'}) ...",
                          file=sys.stderr)
                    row.append((instructions(verb, 2 * n, frozen, user) - instructions(verb, n, frozen, user)) // n)
                print(" | ".join([f"{tree or 'installed'!s:<40}", f"{user:<14}", *(f"{ir:>14,}" for ir in row)]))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_drive":
        import uvloop

        with tempfile.TemporaryDirectory(prefix="kubeloop-ir-") as tmp:
            uvloop.run(drive(sys.argv[2], int(sys.argv[3]), Path(tmp), sys.argv[4] if len(sys.argv) > 4 else "admin"))
    else:
        main()
