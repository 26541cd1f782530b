"""Instructions per delivered watch event through the real app: ``python benchmarks/watch_instructions.py``.

Under ``valgrind --tool=callgrind`` it runs the app in-process (the durable SQLite store), opens W watchers
on one resource from one resourceVersion, makes P merge patches of one object (each awaited), waits until
every watcher has received all P events, and prints ``(Ir(W watchers) - Ir(no watcher)) / (W * P)``: what
one more delivered event costs the server, the writes themselves cancelled out. Needs valgrind.

Watch kinds (``--kind``, repeatable):

- ``table``: ConfigMaps as ``kubectl get -w`` asks for them (``Accept: application/json;as=Table;...``);
- ``table-mixed``: the same, half the watchers with ``includeObject=Object``;
- ``cr``: a custom resource stored at ``v1`` and watched at ``v2`` (conversion strategy None);
- ``plain``: ConfigMaps in JSON, for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

KINDS = ("table", "table-mixed", "cr", "plain")
TABLE = b"application/json;as=Table;v=v1;g=meta.k8s.io"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
             "versions": [{"name": v, "served": True, "storage": v == "v1",
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}
                          for v in ("v1", "v2")]},
}  # fmt: skip


async def drive(kind: str, watchers: int, patches: int, directory: Path) -> None:
    import orjson

    from kubeloop.server import create_app
    from kubeloop.store import SqliteStore

    store = await SqliteStore.open(directory / "db")
    app = create_app(store=store, rng=random.Random(1))
    await app.startup()

    async def call(method: str, path: str, body: bytes = b"", media: bytes = b"application/json") -> dict[str, Any]:
        out: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            out.append(message)

        scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
                 "headers": [(b"host", b"localhost"), (b"content-type", media)]}
        await app(scope, receive, send)
        assert int(out[0]["status"]) < 300, out
        return dict(orjson.loads(b"".join(m.get("body", b"") for m in out[1:])))

    if kind == "cr":
        await call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", orjson.dumps(CRD))
        while app.kinds.get("example.com", "v2", "gizmos") is None:
            await asyncio.sleep(0.01)
        write = "/apis/example.com/v1/namespaces/default/gizmos"
        watched = "/apis/example.com/v2/namespaces/default/gizmos"
        obj: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"},
                               "spec": {"size": 0}}
    else:
        write = watched = "/api/v1/namespaces/default/configmaps"
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "g", "labels": {"app": "bench"}},
               "data": {"k": "v" * 512}}
    rv = (await call("POST", write, orjson.dumps(obj)))["metadata"]["resourceVersion"]

    done = asyncio.Event()
    stop = asyncio.Event()
    remaining = [watchers]

    async def watcher(i: int) -> None:
        query = f"watch=1&resourceVersion={rv}"
        headers = [(b"host", b"localhost")]
        if kind.startswith("table"):
            headers.append((b"accept", TABLE))
            if kind == "table-mixed" and i % 2:
                query += "&includeObject=Object"
        lines = 0
        started = False

        async def receive() -> dict[str, Any]:
            nonlocal started
            if not started:
                started = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await stop.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal lines
            lines += message.get("body", b"").count(b"\n")
            if lines == patches:
                remaining[0] -= 1
                if not remaining[0]:
                    done.set()

        scope = {"type": "http", "method": "GET", "path": watched, "raw_path": watched.encode(),
                 "query_string": query.encode(), "headers": headers}
        await app(scope, receive, send)

    tasks = [asyncio.ensure_future(watcher(i)) for i in range(watchers)]
    await asyncio.sleep(0.05)
    merge = b"application/merge-patch+json"
    for n in range(patches):
        body = {"spec": {"size": n + 1}} if kind == "cr" else {"data": {"serial": str(n)}}
        await call("PATCH", f"{write}/g", orjson.dumps(body), media=merge)
    if watchers:
        await done.wait()
    stop.set()
    await asyncio.gather(*tasks)
    await app.shutdown()
    await store.close()


def instructions(kind: str, watchers: int, patches: int, tree: Path | None) -> int:
    from instructions import callgrind_count  # benchmarks/instructions.py, beside this script

    return callgrind_count(__file__, ["_drive", kind, str(watchers), str(patches)], tree, PYTHONHASHSEED="0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, action="append", help="a checkout to measure; repeat to compare")
    parser.add_argument("--kind", choices=KINDS, action="append", help="watch kinds to measure (repeatable)")
    parser.add_argument("--watchers", type=int, default=20)
    parser.add_argument("--patches", type=int, default=100)
    args = parser.parse_args()
    trees: list[Path | None] = list(args.tree) if args.tree else [None]
    kinds = args.kind or list(KINDS)
    print(" | ".join([f"{'tree':<30}", *(f"{k + ' Ir/event':>20}" for k in kinds)]))
    from instructions import frozen_src  # benchmarks/instructions.py, beside this script

    for tree in trees:
        row = []
        with frozen_src(tree) as frozen:  # both runs import one compiled copy of the tree
            for kind in kinds:
                print(f"running: {kind}, {args.watchers} watchers and none, {args.patches} patches ({tree or 'installed'})",
                      file=sys.stderr)
                spent = (instructions(kind, args.watchers, args.patches, frozen)
                         - instructions(kind, 0, args.patches, frozen))
                row.append(spent // (args.watchers * args.patches))
        print(" | ".join([f"{tree or 'installed'!s:<30}", *(f"{ir:>20,}" for ir in row)]))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_drive":
        with tempfile.TemporaryDirectory(prefix="kubeloop-watch-ir-") as tmp:
            asyncio.run(drive(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(tmp)))
    else:
        main()
