"""Shard-ready by tenant (issue 18, point 4), proven from the live schema and the statements.

A table distributed by ``tenant`` (Citus) needs the distribution column in every primary key
and unique index, and a statement is routed to one shard when it filters by tenant. Both are
asserted here: the keys from the migrated database itself, the routing from every statement
builder's expression tree and compiled SQL (tenant is the first filter of every statement
that reads or changes a tenant table, or the statement is a declared cross-tenant one).

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_shard_ready.py.
"""

from __future__ import annotations

import sqlalchemy as sa

from harness.memory.store.migrate import upgrade_to_head
from tests.unit.test_shard_ready import TENANT_TABLES

#: Tables without tenant data: reference tables (replicated to every node).
REFERENCE_TABLES = {"store_meta", "alembic_version"}


def test_live_schema_keys_lead_with_tenant(fresh_db_url: str) -> None:
    """After migrating: every primary key and unique index of a tenant table leads with
    tenant; only reference tables have keys without it."""
    engine = sa.create_engine(fresh_db_url)
    try:
        upgrade_to_head(engine)
        inspector = sa.inspect(engine)
        tables = set(inspector.get_table_names())
        assert tables == TENANT_TABLES | REFERENCE_TABLES
        for table in sorted(TENANT_TABLES):
            pk = inspector.get_pk_constraint(table)["constrained_columns"]
            assert pk[0] == "tenant" and len(pk) >= 2, (table, pk)
            uniques = [ix for ix in inspector.get_indexes(table) if ix["unique"]]
            uniques += [
                {"name": u["name"], "column_names": u["column_names"]}
                for u in inspector.get_unique_constraints(table)
            ]
            for unique in uniques:
                assert unique["column_names"][0] == "tenant", (table, unique)
        with engine.connect() as conn:
            # The catalog itself, independent of the inspector: no unique index on a tenant
            # table lacks the tenant column.
            rows = conn.execute(
                sa.text(
                    "SELECT c.relname, i.indexrelid::regclass::text, "
                    "  array_agg(a.attname ORDER BY k.ord) "
                    "FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
                    "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, ord) "
                    "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
                    "WHERE i.indisunique AND c.relname = ANY(:tables) "
                    "GROUP BY c.relname, i.indexrelid"
                ),
                {"tables": sorted(TENANT_TABLES)},
            ).all()
        assert {r[0] for r in rows} == TENANT_TABLES  # every tenant table has its key
        for table, index, columns in rows:
            assert columns[0] == "tenant", (table, index, columns)
    finally:
        engine.dispose()
