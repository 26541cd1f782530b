"""Server CPU per durable create, per thread: ``python benchmarks/server_threads.py [--tree DIR ...]``.

Drives the create load of ``benchmarks/apiserver.py`` (64 keep-alive HTTPS clients, one new ConfigMap
per request, the server pinned to CPU 0 and this load generator to CPU 1) against the API server of
each ``--tree`` (a checkout: its ``src`` is the server's ``PYTHONPATH``; default this one) and reads
the server's threads from ``/proc`` before and after ``--seconds`` of load. Per create it prints, for
the event-loop thread (the process's main thread) and the SQLite thread (the busiest other one): CPU
in µs (user + system), voluntary and involuntary context switches, minor page faults. Trees alternate
round by round (ABBA...) so that a burst of load from outside hits each; the last lines are the
medians over ``--rounds``. These are wall-clock figures: on a busy machine compare medians of many
rounds, and prefer callgrind counts (``benchmarks/instructions.py``) for work on the request path.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import tempfile
from pathlib import Path

import apiserver as bench

# Per thread: user and system CPU in clock ticks, voluntary and involuntary switches, minor faults.
_Sample = dict[str, tuple[int, int, int, int, int]]
_TICK = os.sysconf("SC_CLK_TCK")
_FIELDS = ("cpu", "vol", "invol", "faults")


def _threads(pid: int) -> _Sample:
    sample: _Sample = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        switches = {k: int(v) for k, v in (line.split(":") for line in status.splitlines() if "ctxt_switches" in line)}
        sample[tid] = (int(stat[11]), int(stat[12]), switches["voluntary_ctxt_switches"],
                       switches["nonvoluntary_ctxt_switches"], int(stat[7]))
    return sample


def _per_create(before: _Sample, after: _Sample, tid: str, creates: int) -> dict[str, float]:
    b, a = before.get(tid, (0, 0, 0, 0, 0)), after[tid]
    d = [x - y for x, y in zip(a, b, strict=True)]
    return {
        "cpu": (d[0] + d[1]) / _TICK * 1e6 / creates,
        "vol": d[2] / creates,
        "invol": d[3] / creates,
        "faults": d[4] / creates,
    }


async def _round(tree: Path, data_dir: Path, seconds: float, clients: int) -> dict[str, dict[str, float]]:
    os.environ["PYTHONPATH"] = str(tree / "src")
    server = bench.Server.kubeloop(data_dir)
    try:
        ctx = await bench.kubeloop_ready(server)
        token = server.token()
        names = itertools.count()

        async def create(conn: bench.Conn, _: int) -> None:
            status, _body = await conn.request(
                "POST", "/api/v1/namespaces/default/configmaps", bench.configmap(f"c{next(names)}")
            )
            assert status == 201, status

        await bench.closed_loop(server.port, ctx, token, clients, 0.5, create)  # warm-up
        before, first = _threads(server.proc.pid), next(names)
        rate = await bench.closed_loop(server.port, ctx, token, clients, seconds, create)
        after, creates = _threads(server.proc.pid), next(names) - first - 1
    finally:
        server.stop()
    main = str(server.proc.pid)
    others = [t for t in after if t != main]
    sqlite = max(others, key=lambda t: sum(after[t][:2]) - sum(before.get(t, (0, 0))[:2]))
    return {
        "all": {"rate": rate},
        "loop": _per_create(before, after, main, creates),
        "sqlite": _per_create(before, after, sqlite, creates),
    }


def _line(label: str, row: dict[str, dict[str, float]]) -> str:
    parts = [f"{label:<28} {row['all']['rate']:7,.0f} creates/s"]
    for thread in ("loop", "sqlite"):
        t = row[thread]
        parts.append(f"{thread} {t['cpu']:6.1f} µs  vol {t['vol']:.3f} invol {t['invol']:.3f} faults {t['faults']:.2f}")
    total = row["loop"]["cpu"] + row["sqlite"]["cpu"]
    return " | ".join(parts) + f" | both {total:6.1f} µs"


async def main(trees: list[Path], rounds: int, seconds: float, clients: int) -> None:
    if bench.PIN:
        os.sched_setaffinity(0, {1})
    work = Path(tempfile.mkdtemp(prefix="kubeloop-threads-"))
    results: dict[Path, list[dict[str, dict[str, float]]]] = {tree: [] for tree in trees}
    try:
        for r in range(rounds):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                row = await _round(tree, work / f"{r}-{trees.index(tree)}", seconds, clients)
                results[tree].append(row)
                print(_line(f"round {r + 1} {tree.name}", row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for tree, rows in results.items():
        median = {
            group: {k: statistics.median(row[group][k] for row in rows) for k in rows[0][group]}
            for group in rows[0]
        }
        print(_line(f"median of {len(rows)} {tree}", median))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", type=Path, help="a checkout to serve from (repeat to compare)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=64)
    args = parser.parse_args()
    chosen = [t.resolve() for t in args.tree] if args.tree else [Path(__file__).resolve().parent.parent]
    import uvloop

    uvloop.run(main(chosen, args.rounds, args.seconds, args.clients))  # the load generator apiserver.py runs
