"""A/B start-up timing: ``kubeloop up`` to ``/readyz`` 200 from two source trees, alternating.

Usage: ``python benchmarks/startup_ab.py --base /path/to/other/src [--pairs 10]`` (the tree under test is
this repository's ``src``). For each pair it times, for both trees in alternating order, a first start
on a fresh data directory and a restart on it, then ``python -c "import kubernetes"``; every process
gets its tree through ``PYTHONPATH``. The timing is the start-up benchmark's own
(``apiserver.kubeloop_ready``: wait for the CA and kubeconfig, then poll ``/readyz`` over one
keep-alive connection). Besides wall time it reads, at the moment ``/readyz`` first answers 200, the
CPU time (user + system, from ``/proc``) of the ``kubeloop up`` process and of its controller-manager
child: on a machine shared with other work CPU time moves much less than wall time. Prints the medians
per tree; the ratio column is each start divided by the ``import kubernetes`` of the same pair.
Compile both trees' bytecode first (``python -m compileall -q SRC``), as the start-up benchmark does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import apiserver as bench

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def spawn(src: str, data_dir: Path) -> bench.Server:
    """``kubeloop up`` from the tree ``src`` on a free port (unpinned, like the start-up benchmark)."""
    port = bench.free_port()
    server = bench.Server.__new__(bench.Server)
    server.port, server.data_dir = port, data_dir
    server.proc = subprocess.Popen(
        [sys.executable, "-m", "kubeloop.cli", "up", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=src),
    )  # fmt: skip
    return server


async def start_once(src: str, data_dir: Path) -> tuple[float, float, float]:
    """(wall seconds to /readyz 200, parent CPU, controller-manager CPU) for one ``kubeloop up``."""
    started = time.monotonic()
    server = spawn(src, data_dir)
    try:
        await bench.kubeloop_ready(server)
        wall = time.monotonic() - started
        pid = server.proc.pid
        return wall, cpu_seconds(pid), sum(cpu_seconds(c) for c in children(pid))
    finally:
        server.stop()


def import_kubernetes() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import kubernetes"], check=True)
    return time.monotonic() - started


def main(trees: dict[str, str], pairs: int) -> None:
    runs: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="kubeloop-startup-ab-"))
    try:
        for i in range(pairs):
            order = list(trees) if i % 2 == 0 else list(reversed(trees))
            measured: list[tuple[str, str, tuple[float, float, float]]] = []
            for name in order:
                data_dir = tmp / f"{name}{i}"
                measured.append((name, "first", asyncio.run(start_once(trees[name], data_dir))))
                measured.append((name, "restart", asyncio.run(start_once(trees[name], data_dir))))
            baseline = import_kubernetes()
            for name, kind, (wall, parent, child) in measured:
                runs.setdefault((name, kind), []).append((wall, parent, child, wall / baseline))
            print(f"pair {i + 1}/{pairs} done (import kubernetes {baseline:.2f} s)", file=sys.stderr)
    finally:
        shutil.rmtree(tmp)
    print("tree | start | wall median (min) | ratio median | CPU up | CPU controller-manager | CPU total")
    for (name, kind), rows in runs.items():
        wall = statistics.median(r[0] for r in rows)
        parent = statistics.median(r[1] for r in rows)
        child = statistics.median(r[2] for r in rows)
        total = statistics.median(r[1] + r[2] for r in rows)
        ratio = statistics.median(r[3] for r in rows)
        print(f"{name} | {kind} | {wall:.3f} s ({min(r[0] for r in rows):.3f}) | {ratio:.2f} | "
              f"{parent:.2f} s | {child:.2f} s | {total:.2f} s")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the other tree's src directory (A)")
    parser.add_argument("--pairs", type=int, default=10)
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parent.parent / "src")
    main({"A": args.base, "B": here}, args.pairs)
