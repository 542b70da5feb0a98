"""Row-level security: the store's statements run as a role that is not the tables' owner and
cannot bypass RLS, and a statement that forgets its tenant filter sees no foreign rows."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from bench.common import all_tenants, as_tenant
from harness.errors import StoreError
from harness.memory import Answer, MemoryCandidate, MemoryStore
from harness.memory.domain.caller import Caller
from harness.memory.store.sql import APP_ROLE, RLS_TABLES, insert_memo
from product_adapter import ProductAdapter
from tests.support.stores import T0

# Also run on the Citus cluster (make test-citus): the same tests, sharded by tenant.
pytestmark = pytest.mark.citus


def seed(store: MemoryStore, tenant: str) -> None:
    store.write(
        MemoryCandidate(tenant=tenant, scope="user", scope_id="alice", kind="fact", content="tea")
    )
    pending = store.write(
        MemoryCandidate(
            tenant=tenant,
            scope="platform",
            kind="constraint",
            content="Cite sources",
            source={"origin": "verdict"},
        )
    )
    store.approve(pending.id, approver="admin", tenant=tenant)
    store.runs.start(
        run_id=f"run-{tenant}",
        tenant=tenant,
        user_id="alice",
        workflow_id="wf",
        session_id=None,
        at=T0,
    )
    adapter = ProductAdapter(store)
    adapter._queue(  # a queued cleanup row, as a failed hook leaves it
        {
            "id": f"task-{tenant}",
            "tenant": tenant,
            "target": "session",
            "target_id": "s",
            "created_at": T0.isoformat(),
        }
    )
    store.idempotent(tenant, "req-1", "0" * 64, lambda write_many: Answer(201, {"ok": True}))
    store.learn(  # a lesson taught by a rejection: its teaching event
        {
            "tenant": tenant,
            "user_id": "alice",
            "run_id": f"run-{tenant}",
            "task": "Summarise the incident report for the ops channel",
            "verdicts": [
                {"accepted": False, "id": "v1", "feedback": "Ops summaries are three lines."}
            ],
        }
    )
    store.learn(  # a later run of the user: the lesson's scale (lesson_scores)
        {
            "tenant": tenant,
            "user_id": "alice",
            "run_id": f"run2-{tenant}",
            "task": "Plan the team offsite",
            "verdicts": [{"accepted": True, "id": "v2"}],
        }
    )
    store.put_conversation(  # the conversation archive (its conversation, turns, settings)
        tenant=tenant,
        user_id="alice",
        conversation_id="c1",
        turns=[{"seq": 0, "ts": T0.isoformat(), "role": "user", "text": "tea please"}],
    )
    store.set_conversation_retention(tenant=tenant, days=30)
    with as_tenant(store, tenant) as conn:  # an MCP RecallSet memo
        conn.execute(insert_memo(Caller(tenant, "alice"), "", "0" * 64, "{}", 0.0, 1))


@pytest.fixture
def two_tenants(store: MemoryStore, tenant: str) -> tuple[str, str]:
    other = tenant + "-other"
    seed(store, tenant)
    seed(store, other)
    return tenant, other


def test_statements_run_as_a_role_that_cannot_bypass_rls(store: MemoryStore) -> None:
    with as_tenant(store) as conn:
        role, bypass, superuser = conn.execute(
            sa.text(
                "SELECT current_user, rolbypassrls, rolsuper FROM pg_roles "
                "WHERE rolname = current_user"
            )
        ).one()
        owners = dict(
            conn.execute(
                sa.text("SELECT tablename, tableowner FROM pg_tables WHERE tablename = ANY(:t)"),
                {"t": list(RLS_TABLES)},
            ).all()
        )
        flags = conn.execute(
            sa.text(
                "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
                "WHERE relname = ANY(:t)"
            ),
            {"t": list(RLS_TABLES)},
        ).all()
    assert role == APP_ROLE and not bypass and not superuser
    assert set(owners) == set(RLS_TABLES) and APP_ROLE not in owners.values()
    assert {name for name, enabled, forced in flags if enabled and forced} == set(RLS_TABLES)


@pytest.mark.parametrize("table", RLS_TABLES)
def test_statement_forgetting_its_tenant_filter_sees_no_foreign_rows(
    store: MemoryStore, two_tenants: tuple[str, str], table: str
) -> None:
    mine, theirs = two_tenants
    with as_tenant(store, mine) as conn:
        seen = set(conn.execute(sa.text(f"SELECT DISTINCT tenant FROM {table}")).scalars())
        changed = conn.execute(sa.text(f"UPDATE {table} SET tenant = tenant")).rowcount
        own = conn.execute(
            sa.text(f"SELECT count(*) FROM {table} WHERE tenant = :t"), {"t": mine}
        ).scalar_one()
    assert seen == {mine}
    assert changed == own
    with as_tenant(store) as conn:
        assert conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one() == 0
    with all_tenants(store) as conn:
        everyone = set(conn.execute(sa.text(f"SELECT DISTINCT tenant FROM {table}")).scalars())
    assert {mine, theirs} <= everyone


def test_writing_a_row_of_another_tenant_is_refused(
    store: MemoryStore, two_tenants: tuple[str, str]
) -> None:
    mine, theirs = two_tenants
    # Citus refuses moving a row to another tenant before the policy is asked.
    refused = "row-level security|modifying the partition value of rows is not allowed"
    with pytest.raises(StoreError, match=refused):  # noqa: SIM117
        with as_tenant(store, mine) as conn:
            conn.execute(
                sa.text("UPDATE memories SET tenant = :other WHERE tenant = :me"),
                {"other": theirs, "me": mine},
            )
    with pytest.raises(StoreError, match="row-level security"):  # noqa: SIM117
        with as_tenant(store, mine) as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO runs (id, tenant, user_id, status, attempts, started_at) "
                    "VALUES ('forged', :other, 'u', 'running', 0, now())"
                ),
                {"other": theirs},
            )


def test_cross_tenant_maintenance_still_works(
    store: MemoryStore, two_tenants: tuple[str, str]
) -> None:
    mine, theirs = two_tenants
    counts = store.status().counts
    assert counts[mine]["active"] == 3 and counts[theirs]["active"] == 3  # fact, rule, lesson
    adapter = ProductAdapter(store)
    assert adapter.pending_cleanups() >= 2 and adapter.pending_cleanups(mine) == 1
    assert adapter.reconcile() >= 2
    assert adapter.pending_cleanups(mine) == 0 and adapter.pending_cleanups(theirs) == 0
