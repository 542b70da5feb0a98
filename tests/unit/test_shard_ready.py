"""Shard-ready by tenant (issue 18, point 4), proven from the live schema and the statements.

A table distributed by ``tenant`` (Citus) needs the distribution column in every primary key
and unique index, and a statement is routed to one shard when it filters by tenant. Both are
asserted here: the keys from the migrated database itself, the routing from every statement
builder's expression tree and compiled SQL (tenant is the first filter of every statement
that reads or changes a tenant table, or the statement is a declared cross-tenant one).

Here the tests that need no database, model or other process; the others are in
tests/db/test_shard_ready_db.py.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql import visitors
from sqlalchemy.sql.elements import BinaryExpression, BooleanClauseList, ColumnElement

from harness.memory.domain.caller import Caller
from harness.memory.domain.listing import BrowseFilter
from harness.memory.domain.types import Kind, Scope
from harness.memory.store.sql import cleanups as adapter_sql
from harness.memory.store.sql import console as console_sql
from harness.memory.store.sql import conversations as conversations_sql
from harness.memory.store.sql import layout as layout_sql
from harness.memory.store.sql import lessons as lessons_sql
from harness.memory.store.sql import memories as memories_sql
from harness.memory.store.sql import memos as memos_sql
from harness.memory.store.sql import portability as portability_sql
from harness.memory.store.sql import records as records_sql
from harness.memory.store.sql import retrieval as recall_sql
from harness.memory.store.sql import security as security_sql
from harness.memory.store.sql.schema import metadata

#: Tables holding tenant data: distributed by tenant.
TENANT_TABLES = {
    "memories",
    "memory_approvals",
    "runs",
    "cleanup_tasks",
    "ingest_requests",
    "mcp_memos",
    "lesson_events",
    "lesson_scores",
    "conversations",
    "conversation_turns",
    "conversation_settings",
}

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ID = uuid.UUID(int=7)
ROW = {"tenant": "t", "id": ID}
CALLER = Caller("t", "u", "w")

#: Every statement builder routed by tenant, called with sample arguments.
ROUTED: dict[str, Callable[[], Any]] = {
    "memories.active_for_key": lambda: memories_sql.active_for_key("t", Scope.USER, "u", "k"),
    "memories.active_with_fingerprint": lambda: memories_sql.active_with_fingerprint(
        "t", Scope.USER, "u", Kind.FACT, "f"
    ),
    "memories.active_for_keys": lambda: memories_sql.active_for_keys("t", ["user"], ["u"], ["k"]),
    "memories.active_with_fingerprints": lambda: memories_sql.active_with_fingerprints(
        "t", ["user"], ["u"], ["fact"], ["f"]
    ),
    "memories.insert_memories": memories_sql.insert_memories,
    "memories.supersede_many": lambda: memories_sql.supersede_many("t", [(ID, ID)]),
    "memories.approval_audit": lambda: memories_sql.approval_audit("t"),
    "memories.by_id": lambda: memories_sql.by_id("t", ID, for_update=True),
    "memories.delete_by_id": lambda: memories_sql.delete_by_id("t", ID),
    "memories.delete_scope": lambda: memories_sql.delete_scope("t", Scope.WORKFLOW, "w"),
    "memories.history": lambda: memories_sql.history("t", Scope.USER, "u", "k"),
    "memories.insert_approval": lambda: memories_sql.insert_approval(
        {"tenant": "t", "memory_id": ID, "decision": "approved", "actor": "a", "decided_at": NOW}
    ),
    "memories.insert_memory": lambda: memories_sql.insert_memory(ROW),
    "memories.pending": lambda: memories_sql.pending("t"),
    "memories.purge_expired": lambda: memories_sql.purge_expired("t", NOW),
    "memories.set_embedding": memories_sql.set_embedding,
    "memories.set_status": lambda: memories_sql.set_status("t", ID, {"status": "active"}),
    "memories.supersede": lambda: memories_sql.supersede("t", ID, ID),
    "memories.unlink": lambda: memories_sql.unlink("t", ID),
    "lessons.insert_events": lessons_sql.insert_events,
    "lessons.lessons_for_learning": lambda: lessons_sql.lessons_for_learning(
        "t", Scope.USER, "u", [ID]
    ),
    "lessons.events_of": lambda: lessons_sql.events_of("t", ID),
    "lessons.wordings_of": lambda: lessons_sql.wordings_of("t", [ID]),
    "lessons.lesson_stats": lambda: lessons_sql.lesson_stats("t"),
    "lessons.delete_records_of": lambda: lessons_sql.delete_records_of("t", ID),
    "lessons.delete_records_in_scope": lambda: lessons_sql.delete_records_in_scope(
        "t", Scope.USER, "u"
    ),
    "lessons.delete_records_of_expired": lambda: lessons_sql.delete_records_of_expired("t", NOW),
    "lessons.add_scores": lessons_sql.add_scores,
    "recall.pool_probe": lambda: recall_sql.pool_probe(has_workflow=True, has_session=True),
    "recall.recall_rows": lambda: recall_sql.recall_rows(has_workflow=True, has_session=True),
    **{
        f"recall.relevance_scores[{vector},{exact}]": (
            lambda vector=vector, exact=exact: recall_sql.relevance_scores(
                has_workflow=True,
                has_session=True,
                scopes=tuple(s.value for s in Scope),
                with_vector=vector,
                exact=exact,
                bounded_lexical=vector and not exact,
            )
        )
        for vector in (True, False)
        for exact in (True, False)
        if exact or vector
    },
    "records.delete_runs_of_workflow": lambda: records_sql.delete_runs_of_workflow("t", "w"),
    "records.finish_run": lambda: records_sql.finish_run("t", "r", {"status": "done"}),
    "records.idempotency_record": lambda: records_sql.idempotency_record("t", "k"),
    "records.insert_idempotency_record": lambda: records_sql.insert_idempotency_record(
        {"tenant": "t", "idempotency_key": "k"}
    ),
    "records.insert_run": lambda: records_sql.insert_run({"tenant": "t", "id": "r"}),
    "records.runs_of": lambda: records_sql.runs_of("t", "w"),
    "memos.close_memos_over_cap": lambda: memos_sql.close_memos_over_cap(
        CALLER, "k", 2, 1.0, "cap"
    ),
    "memos.count_open_memos": lambda: memos_sql.count_open_memos(CALLER, "k", 1.0, 60.0),
    "memos.discard_memo": lambda: memos_sql.discard_memo(CALLER, "k", "h"),
    "memos.expire_idle_memos": lambda: memos_sql.expire_idle_memos(CALLER, "k", 1.0, 60.0, "idle"),
    "memos.forget_ended_memos": lambda: memos_sql.forget_ended_memos(CALLER, "k", 3),
    "memos.insert_memo": lambda: memos_sql.insert_memo(CALLER, "k", "h", "{}", 1.0, 1),
    "memos.next_touched": lambda: memos_sql.next_touched(CALLER, "k"),
    "memos.memo_for_update": lambda: memos_sql.memo_for_update(CALLER, "k", "h"),
    "memos.sweep_abandoned_memos": lambda: memos_sql.sweep_abandoned_memos("t", 1.0, 100),
    "memos.touch_memo": lambda: memos_sql.touch_memo(CALLER, "k", "h", 1.0, "{}"),
    "console.active_for_key_readonly": lambda: console_sql.active_for_key_readonly(
        "t", Scope.USER, "u", "k"
    ),
    "console.audit_of_memory": lambda: console_sql.audit_of_memory("t", ID),
    "console.browse": lambda: console_sql.browse(
        "t", BrowseFilter(scope=Scope.USER, text="x"), before=(NOW, ID), limit=5
    ),
    "console.counts_by_dimension": lambda: console_sql.counts_by_dimension(["t", "u"]),
    "console.open_cleanups": lambda: console_sql.open_cleanups(["t"]),
    "console.pending_page": lambda: console_sql.pending_page("t", after=(NOW, ID), limit=5),
    "console.similar_active": lambda: console_sql.similar_active("t", [ID], Scope.USER, "u", 3),
    "console.written_per_day": lambda: console_sql.written_per_day("t", NOW),
    "adapter.enqueue": lambda: adapter_sql.enqueue({"tenant": "t", "id": "c"}),
    "adapter.claim_next": lambda: adapter_sql.claim_next(NOW, "t"),
    "adapter.mark_done": lambda: adapter_sql.mark_done("t", "c", NOW),
    "adapter.mark_failed": lambda: adapter_sql.mark_failed("t", "c", "e", NOW),
    "adapter.count_open": lambda: adapter_sql.count_open("t"),
    "portability.export_memories_page": lambda: portability_sql.export_memories_page(
        "t", [(Scope.USER, "u")], ID, 10, vectors=True
    ),
    "portability.export_approvals_page": lambda: portability_sql.export_approvals_page(
        "t", [(Scope.USER, None)], 3, 10
    ),
    "portability.export_events_page": lambda: portability_sql.export_events_page(
        "t", [(Scope.USER, "u")], 3, 10, vectors=False
    ),
    "portability.export_scores_page": lambda: portability_sql.export_scores_page("t", [], ID, 10),
    "portability.export_conversations_page": lambda: portability_sql.export_conversations_page(
        "t", [(Scope.USER, "u")], ("u", "c"), 10
    ),
    "portability.export_conversation_turns": lambda: portability_sql.export_conversation_turns(
        "t", "u", "c"
    ),
    "portability.import_memories": lambda: portability_sql.import_memories(
        [dict.fromkeys(portability_sql._MEMORY_TYPES, None) | {"tenant": "t", "id": ID}]
    ),
    "portability.import_approvals": lambda: portability_sql.import_approvals(
        [
            {
                "tenant": "t",
                "memory_id": ID,
                "decision": "approved",
                "actor": "a",
                "reason": None,
                "decided_at": NOW,
            }
        ]
    ),
    "portability.import_events": lambda: portability_sql.import_events(
        [
            dict.fromkeys(
                (
                    "polarity",
                    "run_id",
                    "verdict_id",
                    "actor",
                    "task",
                    "feedback",
                    "embedding",
                    "feedback_embedding",
                ),
                None,
            )
            | {"tenant": "t", "memory_id": ID, "event": "taught", "at": NOW}
        ],
    ),
    "portability.import_scores": lambda: portability_sql.import_scores(
        [{"tenant": "t", "memory_id": ID, "n": 1, "mean": 0.5, "m2": 0.0}]
    ),
    "conversations.upsert_conversation": lambda: conversations_sql.upsert_conversation(
        {
            "tenant": "t",
            "user_id": "u",
            "conversation_id": "c",
            "started_at": NOW,
            "last_at": NOW,
            "turns": 1,
            "stored_at": NOW,
        }
    ),
    "conversations.stored_turn_hashes": lambda: conversations_sql.stored_turn_hashes("t", "u", "c"),
    "conversations.delete_conversation_turns": lambda: conversations_sql.delete_conversation_turns(
        "t", "u", "c", [1]
    ),
    "conversations.insert_conversation_turns": conversations_sql.insert_conversation_turns,
    "conversations.update_turn_metadata": conversations_sql.update_turn_metadata,
    "conversations.delete_conversation": lambda: conversations_sql.delete_conversation(
        "t", "u", "c"
    ),
    "conversations.delete_user_conversations": lambda: conversations_sql.delete_user_conversations(
        "t", "u"
    ),
    "conversations.set_conversation_retention": lambda: (
        conversations_sql.set_conversation_retention("t", 30)
    ),
    "conversations.list_conversations": lambda: conversations_sql.list_conversations("t", "u", 5),
    "conversations.list_conversations_by_id": lambda: conversations_sql.list_conversations_by_id(
        "t", "u", "c"
    ),
    "conversations.turn_seq_of": lambda: conversations_sql.turn_seq_of("t", "u", "c", "m1"),
    "conversations.read_conversation_turns": lambda: conversations_sql.read_conversation_turns(
        "t", "u", "c", 0, 5, 10
    ),
    "conversations.find_in_conversation_turns": lambda: (
        conversations_sql.find_in_conversation_turns("t", "u", "c", "x", 10)
    ),
    "conversations.neighbour_turns": conversations_sql.neighbour_turns,
    "conversations.user_turn_count": lambda: conversations_sql.user_turn_count("t", "u"),
    "conversations.conversation_recall_scores[exact]": lambda: (
        conversations_sql.conversation_recall_scores(with_vector=True, exact=True)
    ),
    "conversations.conversation_recall_scores[hnsw]": lambda: (
        conversations_sql.conversation_recall_scores(with_vector=True, exact=False)
    ),
    "conversations.conversation_recall_scores[hnsw_ids]": lambda: (
        conversations_sql.conversation_recall_scores(with_vector=True, exact=False, with_ids=True)
    ),
    "conversations.conversation_recall_scores[lexical]": lambda: (
        conversations_sql.conversation_recall_scores(with_vector=False)
    ),
}

#: Builders that are cross-tenant by nature (maintenance sweeps and status counts: multi-shard
#: queries on Citus), touch reference tables only, or are not statements over tables at all.
NOT_ROUTED = {
    "memories.clear_vectors": "reembed to another model clears every tenant's vectors",
    "memories.count_memories": "reembed counts every tenant's rows",
    "memories.counts_by_tenant_status": "status counts per tenant",
    "memories.missing_embeddings": "reembed pages every tenant's rows (returns tenant)",
    "lessons.events_to_embed": "reembed pages every tenant's events (returns tenant)",
    "lessons.set_event_vectors": "reembed writes by (tenant, id) of rows it paged",
    "memories.open_cleanups_by_tenant": "status counts per tenant",
    "memories.tenants_with_expired": "the purge finds tenants, then deletes per tenant",
    "adapter.due_tenants": "the reconcile sweep finds tenants, then claims per tenant",
    "memories.meta_get": "store_meta is a reference table",
    "memories.meta_upsert": "store_meta is a reference table",
    "memories.vector_column_type": "catalog query",
    "memories.retype_vectors": "schema change (reembed)",
    "memories.lock_key": "advisory lock",
    "memories.lock_model": "advisory lock",
    "memories.lock_name": "advisory lock",
    "memories.lock_names": "advisory locks",
    "memories.key_lock_name": "a lock name, not a statement",
    "memories.fingerprint_lock_name": "a lock name, not a statement",
    "recall.hnsw_settings": "session settings",
    "recall.readable_filter": "a filter (asserted through the statements using it)",
    "recall.readable_params": "bind values",
    "records.lock_idempotency": "advisory lock",
    "memos.lock_memo_caller": "advisory lock",
    "memos.memo_lock_name": "a lock name, not a statement",
    "memos.count_open_memos_of_all": "status count over every tenant (open_count of all)",
    "security.set_tenant": "session setting",
    "security.all_tenants": "session setting",
    "security.current_role": "session setting",
    "security.reset_local_role": "session setting",
    "security.set_local_role": "session setting",
    "layout.scope_pages": "layout of every tenant's rows (maintenance, multi-shard)",
    "layout.cluster_memories": "table rewrite (maintenance; on Citus, per shard)",
    "layout.analyze_memories": "planner statistics (maintenance)",
    "layout.maintenance_settings": "session settings",
    "conversations.delete_expired_conversations": "the retention purge sweeps every tenant "
    "with a retention (maintenance, multi-shard)",
}


def _builders() -> set[str]:
    modules = {
        "memories": memories_sql,
        "lessons": lessons_sql,
        "recall": recall_sql,
        "records": records_sql,
        "memos": memos_sql,
        "security": security_sql,
        "console": console_sql,
        "layout": layout_sql,
        "adapter": adapter_sql,
        "portability": portability_sql,
        "conversations": conversations_sql,
    }
    return {
        f"{label}.{name}"
        for label, module in modules.items()
        for name in module.__all__
        if callable(getattr(module, name))
    }


def _statements(name: str) -> list[Any]:
    built = ROUTED[name]()
    return list(built) if isinstance(built, list) else [built]


def _first_conjunct(clause: ColumnElement[Any]) -> ColumnElement[Any]:
    while isinstance(clause, BooleanClauseList) and clause.operator is sa.sql.operators.and_:
        clause = clause.clauses[0]
    return clause


def _is_tenant_test(clause: ColumnElement[Any] | None, table_names: set[str]) -> bool:
    """``<tenant table>.tenant = :x`` or ``<tenant table>.tenant IN (...)`` (any alias), or
    ``<other>.tenant = <tenant table>.tenant`` (a co-located correlation)."""
    first = None if clause is None else _first_conjunct(clause)
    if not isinstance(first, BinaryExpression):
        return False
    if first.operator not in (sa.sql.operators.eq, sa.sql.operators.in_op):
        return False
    sides = [first.left]
    if first.operator is sa.sql.operators.eq and getattr(first.left, "name", None) == "tenant":
        sides.append(first.right)
    for side in sides:
        table = getattr(side, "table", None)
        original = getattr(table, "original", table)
        if getattr(side, "name", None) == "tenant" and getattr(original, "name", None) in (
            table_names
        ):
            return True
    return False


def _tenant_table(from_: Any) -> set[str]:
    """The tenant table ``from_`` is (directly or as an alias); subqueries and CTEs are
    checked as selects of their own."""
    original = getattr(from_, "original", from_)
    if isinstance(original, sa.Table) and original.name in TENANT_TABLES:
        return {original.name}
    return set()


def _routing_problems(stmt: Any) -> list[str]:
    """Every place ``stmt`` reads or changes a tenant table without tenant as its first filter."""
    problems: list[str] = []
    if isinstance(stmt, sa.Insert):
        # The row carries its distribution column: tenant is among the inserted columns.
        match = re.match(r"INSERT INTO (\w+) \(([^)]*)\)", _compiled(stmt))
        assert match is not None
        table, columns = match.group(1), [c.strip() for c in match.group(2).split(",")]
        if table in TENANT_TABLES and "tenant" not in columns:
            problems.append(f"insert into {table} without tenant")
        return problems
    for element in visitors.iterate(stmt):
        if isinstance(element, (sa.Update, sa.Delete)):
            table = element.table.name  # type: ignore[attr-defined]
            if table in TENANT_TABLES and not _is_tenant_test(element.whereclause, {table}):
                problems.append(f"{type(element).__name__} of {table}: tenant is not first")
        if isinstance(element, sa.Select):
            for from_ in element.get_final_froms():
                direct = _tenant_table(from_)
                if isinstance(from_, sa.Join):
                    joined = _tenant_table(from_.right)
                    if (
                        joined
                        and not _is_tenant_test(from_.onclause, joined)
                        and not (_is_tenant_test(element.whereclause, joined))
                    ):
                        problems.append(f"join of {joined}: tenant is not first")
                    direct = _tenant_table(from_.left)
                if direct and not _is_tenant_test(element.whereclause, direct):
                    problems.append(f"select from {direct}: tenant is not the first filter")
    return problems


def _compiled(stmt: Any) -> str:
    return str(stmt.compile(dialect=postgresql.dialect()))


def test_every_statement_builder_is_classified() -> None:
    """A new builder must be listed as routed (and so checked below) or say why it is not."""
    assert _builders() == set(ROUTED_BASE_NAMES) | set(NOT_ROUTED)


ROUTED_BASE_NAMES = {name.split("[")[0] for name in ROUTED}


@pytest.mark.parametrize("name", sorted(ROUTED))
def test_statement_routes_by_tenant(name: str) -> None:
    for stmt in _statements(name):
        assert _routing_problems(stmt) == [], _compiled(stmt)
        sql = _compiled(stmt)
        # In the SQL sent: every WHERE that opens on a tenant table's column opens on tenant.
        for alias, column in re.findall(r"(?<!FILTER \()WHERE \(?(\w+)\.(\w+)", sql):
            if alias in TENANT_TABLES:
                assert column == "tenant", sql


# The deliberately bad insert leaves a primary-key column out; SQLAlchemy says so.
@pytest.mark.filterwarnings("ignore:Column 'runs.tenant' is marked")
def test_the_check_catches_a_statement_not_routed_by_tenant() -> None:
    m = metadata.tables["memories"].c
    late = sa.select(m.id).where(m.status == "active", m.tenant == "t")
    missing = sa.update(metadata.tables["memories"]).where(m.id == ID).values(status="active")
    join = (
        sa.select(m.id)
        .join_from(
            metadata.tables["memories"],
            metadata.tables["memory_approvals"],
            metadata.tables["memory_approvals"].c.memory_id == m.id,
        )
        .where(m.tenant == "t")
    )
    insert = sa.insert(metadata.tables["runs"]).values(id="r", user_id="u")
    assert _routing_problems(late)
    assert _routing_problems(missing)
    assert _routing_problems(join)
    assert _routing_problems(insert)
    assert _routing_problems(sa.select(m.id).where(m.tenant == "t")) == []
