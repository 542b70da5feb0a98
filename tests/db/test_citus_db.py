"""The store on a Citus cluster (issue 32): distribution, row-level security on the shards,
the HNSW settings on the workers, and single-shard routing proven by EXPLAIN.

Collected only by ``make test-citus`` (marker ``cluster``; tests/support/citus.py).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations

from bench.common import as_tenant
from harness.clock import FixedClock
from harness.errors import ConflictingState
from harness.memory import MemoryCandidate, MemoryStore, RecallConfig, RecallRequest
from harness.memory.domain.types import Scope
from harness.memory.store import sql
from harness.memory.store.sql.security import APP_ROLE
from tests.support.citus import create_citus_database, workers
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import make_store

pytestmark = pytest.mark.cluster


def _placements(url: str) -> dict[str, tuple[str, str | None, int]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT table_name::text, citus_table_type, distribution_column, "
                    "colocation_id FROM citus_tables"
                )
            ).all()
    finally:
        engine.dispose()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


@pytest.fixture
def migrated_citus_url(server_url: str) -> str:
    """A Citus database of this test, migrated, not distributed yet."""
    url = create_citus_database(server_url, f"harness_dist_{uuid.uuid4().hex[:10]}")
    MemoryStore.connect(url, embedder=HashEmbedder(), migrate=True, check_model=False).close()
    return url


def test_distribute_is_idempotent_colocated_and_derived_from_the_schema(
    migrated_citus_url: str,
) -> None:
    store = make_store(migrated_citus_url, HashEmbedder())
    try:
        first = store.distribute(shard_count=4)
        second = store.distribute()
    finally:
        store.close()
    held = _placements(migrated_citus_url)
    tenant_tables = first.state.tenant_tables
    assert {"memories", "runs", "mcp_memos", "lesson_events"} <= tenant_tables
    groups = {held[t][2] for t in tenant_tables}
    assert all(held[t][:2] == ("distributed", "tenant") for t in tenant_tables)
    assert len(groups) == 1  # co-located: one tenant's rows of every table on one node
    assert held["store_meta"][0] == "reference" and "alembic_version" not in held
    assert {s.table for s in first.steps} == tenant_tables | {"store_meta"}
    assert second.steps == () and second.state.distributed


def test_a_later_migration_runs_on_the_distributed_schema(migrated_citus_url: str) -> None:
    """A test-only migration after distribution: a column on a distributed table and a new
    tenant table; distribute again picks the new table up from the schema."""
    store = make_store(migrated_citus_url, HashEmbedder())
    try:
        store.distribute(shard_count=4)
        engine = sa.create_engine(migrated_citus_url)
        with engine.begin() as conn:
            ops = Operations(MigrationContext.configure(conn))
            ops.add_column("mcp_memos", sa.Column("test_note", sa.Text(), nullable=True))
            ops.create_table(
                "test_conversations",
                sa.Column("tenant", sa.String(200), nullable=False),
                sa.Column("id", sa.Text(), nullable=False),
                sa.Column("title", sa.Text()),
                sa.PrimaryKeyConstraint("tenant", "id"),
            )
        engine.dispose()
        again = store.distribute()
        assert [(s.action, s.table, s.colocate_with) for s in again.steps] == [
            ("distribute", "test_conversations", "memories")
        ]
        held = _placements(migrated_citus_url)
        assert held["test_conversations"][2] == held["memories"][2]
        engine = sa.create_engine(migrated_citus_url)
        with engine.begin() as conn:  # the new column exists on every shard
            conn.execute(sa.text("UPDATE mcp_memos SET test_note = 'x' WHERE tenant = 'nobody'"))
            conn.execute(sa.text("INSERT INTO test_conversations VALUES ('t', 'c1', 'hi')"))
            assert conn.execute(sa.text("SELECT count(*) FROM test_conversations")).scalar() == 1
        engine.dispose()
    finally:
        store.close()


def test_distribute_refuses_a_table_distributed_differently(migrated_citus_url: str) -> None:
    engine = sa.create_engine(migrated_citus_url)
    with engine.begin() as conn:
        conn.execute(sa.text("SELECT create_distributed_table('runs', 'id')"))
    engine.dispose()
    store = make_store(migrated_citus_url, HashEmbedder())
    try:
        with pytest.raises(ConflictingState, match="table 'runs' is distributed by 'id'"):
            store.distribute()
    finally:
        store.close()
    held = _placements(migrated_citus_url)
    assert "memories" not in held  # nothing half-done


def _seed(store: MemoryStore, tenant: str, n: int = 3) -> None:
    store.write_many(
        [
            MemoryCandidate(
                tenant=tenant, scope="user", scope_id="alice", kind="fact", content=f"tea {i}"
            )
            for i in range(n)
        ]
    )


def test_an_app_role_connection_on_a_worker_sees_no_foreign_rows(
    store: MemoryStore, db_url: str, tenant: str, other_tenant: str
) -> None:
    """On each worker directly, as the application role: without a tenant no row of any
    shard; with one, only that tenant's."""
    _seed(store, tenant)
    _seed(store, other_tenant)
    coordinator = sa.create_engine(db_url)
    with coordinator.connect() as conn:
        shards = conn.execute(
            sa.text(
                "SELECT nodeport, shard_name FROM citus_shards "
                "WHERE table_name = 'memories'::regclass"
            )
        ).all()
    coordinator.dispose()
    database = sa.engine.make_url(db_url).database
    assert database is not None
    seen_mine = 0
    for worker in workers(db_url):
        engine = sa.create_engine(worker.url(db_url, database, user=APP_ROLE))
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT current_user")).scalar() == APP_ROLE
            for port, shard in shards:
                if port != worker.port:
                    continue
                count = sa.text(f'SELECT count(*) FROM "{shard}"')
                assert conn.execute(count).scalar() == 0  # no tenant: nothing
                conn.execute(sql.set_tenant(tenant))
                seen_mine += conn.execute(count).scalar() or 0
                foreign = conn.execute(
                    sa.text(f'SELECT count(*) FROM "{shard}" WHERE tenant <> :t'), {"t": tenant}
                ).scalar()
                assert foreign == 0
                conn.rollback()
        engine.dispose()
    assert seen_mine == 3


def test_the_tenant_and_hnsw_settings_reach_the_shards(
    store: MemoryStore, tenant: str, other_tenant: str
) -> None:
    """A router query evaluates current_setting() on the worker: it sees the SET LOCAL values
    the coordinator's transaction set (set_config would leave the worker's defaults)."""
    _seed(store, tenant, 1)
    _seed(store, other_tenant, 1)
    with as_tenant(store, tenant) as conn:
        conn.execute(sql.hnsw_settings(123))
        row = conn.execute(
            sa.text(
                "SELECT current_setting('harness.tenant', true), "
                "current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan'), "
                "current_setting('enable_seqscan'), count(*) OVER () "
                "FROM memories WHERE tenant = :t"
            ),
            {"t": tenant},
        ).one()
    assert tuple(row) == (tenant, "123", "relaxed_order", "off", 1)
    with as_tenant(store, tenant) as conn:  # a foreign tenant's shard, read with my tenant
        assert (
            conn.execute(
                sa.text("SELECT count(*) FROM memories WHERE tenant = :t"), {"t": other_tenant}
            ).scalar()
            == 0
        )


def test_hnsw_recall_on_the_cluster_finds_the_tenants_memory(
    db_url: str, clock: FixedClock, tenant: str, other_tenant: str
) -> None:
    store = make_store(db_url, HashEmbedder(), clock, recall=RecallConfig(large_pool=2))
    try:
        _seed(store, tenant, 4)
        _seed(store, other_tenant, 4)
        result = store.recall(RecallRequest(tenant=tenant, user_id="alice", query="tea 2"))
        assert result.complete and not result.degraded and "tea 2" in result.text
        assert {item.memory.tenant for item in result.items} == {tenant}
    finally:
        store.close()


# --- routing proven by EXPLAIN ------------------------------------------------------------------

#: Statements that touch no distributed table (session settings, advisory locks, catalog).
_NOT_A_TABLE = re.compile(
    r"^\s*(SET LOCAL|SELECT set_config|SELECT pg_advisory|SELECT pg_try_advisory|SELECT "
    r"current_user|SELECT EXISTS \(SELECT 1 FROM pg_roles|SELECT extversion|SELECT version_num)",
    re.IGNORECASE,
)


@pytest.fixture
def captured() -> Iterator[list[tuple[str, Any]]]:
    """Every statement any engine sends while the test runs, with its parameters."""
    seen: list[tuple[str, Any]] = []

    def note(_conn: Any, _cursor: Any, statement: str, params: Any, _ctx: Any, many: bool) -> None:
        if isinstance(params, list | tuple) and params and isinstance(params[0], dict):
            params = params[0]  # executemany: one row's parameters plan like the others
        seen.append((statement, params))

    sa.event.listen(sa.Engine, "before_cursor_execute", note)
    yield seen
    sa.event.remove(sa.Engine, "before_cursor_execute", note)


def _task_counts(db_url: str, statements: list[tuple[str, Any]]) -> list[tuple[int, str]]:
    """(Citus task count, statement) of every captured statement on a distributed table."""
    engine = sa.create_engine(db_url)
    counts = []
    try:
        with engine.connect() as conn:
            for statement, params in statements:
                if _NOT_A_TABLE.match(statement) or statement.lstrip().startswith("EXPLAIN"):
                    continue
                plan = "\n".join(
                    r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, params or {})
                )
                conn.rollback()
                if "Citus" not in plan:
                    continue  # the coordinator's own tables (alembic_version)
                tasks = [int(n) for n in re.findall(r"Task Count: (\d+)", plan)]
                counts.append((max(tasks) if tasks else 0, " ".join(statement.split())[:160]))
    finally:
        engine.dispose()
    return counts


def _routed(db_url: str, captured: list[tuple[str, Any]], action: Callable[[], Any]) -> int:
    """Run ``action``; assert each of its statements on a distributed table is single-shard."""
    captured.clear()
    action()
    counts = _task_counts(db_url, list(captured))
    multi = [(n, s) for n, s in counts if n != 1]
    assert not multi, multi
    return len(counts)


def test_recall_write_history_approval_and_delete_statements_are_single_shard(
    db_url: str, clock: FixedClock, tenant: str, captured: list[tuple[str, Any]]
) -> None:
    exact = make_store(db_url, HashEmbedder(), clock)
    hnsw = make_store(db_url, HashEmbedder(), clock, recall=RecallConfig(large_pool=1))
    try:
        fact = {"tenant": tenant, "scope": "user", "scope_id": "alice", "kind": "fact"}
        keyed = {**fact, "key": "lang"}
        platform = {"tenant": tenant, "scope": "platform", "kind": "constraint"}
        request = RecallRequest(tenant=tenant, user_id="alice", workflow_id="w", query="tea")
        seen = 0
        seen += _routed(db_url, captured, lambda: exact.write({**fact, "content": "tea"}))
        seen += _routed(
            db_url,
            captured,
            lambda: exact.write_many(
                [{**keyed, "content": "Python"}, {**fact, "content": "green tea"}]
            ),
        )
        seen += _routed(db_url, captured, lambda: exact.write({**keyed, "content": "Rust"}))
        seen += _routed(db_url, captured, lambda: exact.recall(request))
        seen += _routed(db_url, captured, lambda: hnsw.recall(request))
        seen += _routed(
            db_url, captured, lambda: exact.history(tenant, Scope.USER, "alice", "lang")
        )
        pending = exact.write(
            {**platform, "content": "Cite sources", "source": {"origin": "verdict"}}
        )
        seen += _routed(db_url, captured, lambda: exact.pending(tenant))
        seen += _routed(
            db_url, captured, lambda: exact.approve(pending.id, approver="root", tenant=tenant)
        )
        other = exact.write({**platform, "content": "No tables", "source": {"origin": "verdict"}})
        seen += _routed(
            db_url,
            captured,
            lambda: exact.reject(other.id, approver="root", reason="no", tenant=tenant),
        )
        seen += _routed(db_url, captured, lambda: exact.audit(tenant))
        seen += _routed(db_url, captured, lambda: exact.forget(pending.id, tenant=tenant))
        seen += _routed(db_url, captured, lambda: exact.delete_scope(tenant, "user", "alice"))
        seen += _routed(db_url, captured, lambda: exact.delete_workflow(tenant, "w"))
        assert seen >= 20  # the statements really were explained
    finally:
        exact.close()
        hnsw.close()


#: Maintenance over every tenant: multi-shard by design (docs/scale-out.md).
MULTI_SHARD_BY_DESIGN = ("purge_expired", "status", "reconcile's sweep")


def test_maintenance_statements_are_multi_shard_by_design(
    private_store: MemoryStore, private_db_url: str, captured: list[tuple[str, Any]]
) -> None:
    from product_adapter import ProductAdapter

    captured.clear()
    private_store.purge_expired()
    private_store.status()
    ProductAdapter(private_store).reconcile()
    counts = _task_counts(private_db_url, list(captured))
    multi = [s for n, s in counts if n > 1]
    assert any("DISTINCT memories.tenant" in s or "GROUP BY" in s for s in multi), counts
    assert len(multi) >= 3, counts


def test_the_async_store_reads_the_same_cluster_and_finds_nothing_to_distribute(
    aloop: Any, astore: Any, db_url: str
) -> None:
    """One plan, two facades: the asyncio store's distribute and cluster_state."""
    state = aloop.run(astore.cluster_state())
    assert state is not None and state.distributed
    assert len([n for n in state.nodes if not n.is_coordinator]) == 2
    again = aloop.run(astore.distribute())
    assert again.steps == () and again.state.tenant_tables == state.tenant_tables
