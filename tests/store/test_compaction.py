"""Compaction keeps exactly the rows a read at or after the compacted revision needs, whatever the
order of writes, across many compactions and a restart (each compaction only looks at the rows
written since the previous one; the rule it must match is stated over the whole table)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from kubeloop.store import KeyExists, KeyNotFound, Render, SqliteStore


def value(text: str) -> Render:
    return lambda rev: f"{text}@{rev}".encode()


def rows(path: Path) -> set[tuple[int, str, int]]:
    db = sqlite3.connect(path)
    try:
        return set(db.execute("SELECT rev, key, type FROM revisions"))
    finally:
        db.close()


def kept_by_the_rule(before: set[tuple[int, str, int]], compacted: int) -> set[tuple[int, str, int]]:
    """The whole-table rule: drop deletions and rows superseded by a later row of their key, at or
    below ``compacted``; keep the rest."""
    return {
        (rev, key, kind) for rev, key, kind in before
        if rev > compacted or (kind == 0 and not any(k == key and rev < r <= compacted for r, k, _ in before))
    }  # fmt: skip


async def test_compaction_removes_exactly_the_superseded_and_deleted_rows(tmp_path: Path) -> None:
    path = tmp_path / "db"
    rng = random.Random(3)
    keys = [f"/r/{i}" for i in range(12)]
    s = await SqliteStore.open(path)
    try:
        for round_ in range(8):
            for step in range(40):
                key = rng.choice(keys)
                try:
                    if rng.random() < 0.4:
                        await s.create(key, value(f"{round_}.{step}"))
                    elif rng.random() < 0.7:
                        await s.update(key, value(f"{round_}.{step}"), expected_revision=None)
                    else:
                        await s.delete(key, expected_revision=None)
                except (KeyExists, KeyNotFound):
                    pass  # the random choice met a key in the other state
            before = rows(path)
            target = s.revision - rng.randint(0, 15)
            await s.compact(target)
            assert rows(path) == kept_by_the_rule(before, s.compacted_revision)
            live = {kv.key: kv.value for kv in (await s.range("/r/")).items}
            if round_ == 4:  # a restart in between: the next compaction starts from the stored point
                await s.close()
                s = await SqliteStore.open(path)
                assert {kv.key: kv.value for kv in (await s.range("/r/")).items} == live
    finally:
        await s.close()
