"""Alembic: one linear head, reversible, no drift, safe under concurrent connects.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_migrations.py, tests/db/test_migrations_db.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from harness.memory.store.migrate import head_revision


def test_two_processes_connecting_at_once_both_succeed(fresh_db_url: str) -> None:
    code = textwrap.dedent(f"""
        from harness.memory import MemoryStore
        s = MemoryStore.connect({fresh_db_url!r}, embedder=None)
        print(s.status().revision)
        s.close()
    """)
    procs = [
        subprocess.Popen(
            [sys.executable, "-W", "ignore", "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert out.strip() == head_revision()
