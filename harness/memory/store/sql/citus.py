"""Statements of sharding by tenant on Citus: the catalog reads ``distribute`` and ``status``
decide from, and the Citus calls that distribute the tables.

Catalog and maintenance statements, none over tenant rows; the Citus functions and views are
referenced only after :func:`citus_version` found the extension (on plain PostgreSQL they do
not exist). The table names come from the live catalog, bound as parameters.
"""

from __future__ import annotations

from sqlalchemy import TextClause, text

__all__ = [
    "app_role_can_login",
    "citus_version",
    "cluster_nodes",
    "create_distributed_table",
    "create_reference_table",
    "grant_app_role_login",
    "schema_foreign_keys",
    "schema_tables",
    "table_placements",
]


def citus_version() -> TextClause:
    """The installed Citus extension's version (no row without Citus)."""
    return text("SELECT extversion FROM pg_extension WHERE extname = 'citus'")


def schema_tables() -> TextClause:
    """Every ordinary or partitioned table of the current schema (not a partition, not a
    shard) and the type of its ``tenant`` column (NULL without one)."""
    return text(
        "SELECT c.relname AS name, (SELECT a.atttypid::regtype::text FROM pg_attribute a "
        "WHERE a.attrelid = c.oid AND a.attname = 'tenant' AND a.attnum > 0 "
        "AND NOT a.attisdropped) AS tenant_type "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition "
        "ORDER BY c.relname"
    )


def schema_foreign_keys() -> TextClause:
    """Every foreign key between tables of the current schema: (referencing, referenced)."""
    return text(
        "SELECT src.relname AS name, dst.relname AS target FROM pg_constraint k "
        "JOIN pg_class src ON src.oid = k.conrelid JOIN pg_class dst ON dst.oid = k.confrelid "
        "JOIN pg_namespace n ON n.oid = src.relnamespace "
        "WHERE k.contype = 'f' AND n.nspname = current_schema() ORDER BY 1, 2"
    )


def table_placements() -> TextClause:
    """How Citus holds each of its tables of the current schema: kind, distribution column,
    co-location group and shard count."""
    return text(
        "SELECT c.relname AS name, t.citus_table_type AS placement, "
        "nullif(t.distribution_column, '<none>') AS column, t.colocation_id AS colocation, "
        "t.shard_count AS shards FROM citus_tables t JOIN pg_class c ON c.oid = t.table_name "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
    )


def cluster_nodes() -> TextClause:
    """Every node of the cluster, the coordinator (group 0) first."""
    return text(
        "SELECT nodename AS host, nodeport AS port, noderole::text AS role, isactive AS active, "
        "shouldhaveshards AS has_shards, groupid AS grp FROM pg_dist_node "
        "ORDER BY groupid, nodeport"
    )


def create_distributed_table(
    table: str, column: str, colocate_with: str | None, shard_count: int | None
) -> TextClause:
    """Distribute ``table`` by ``column``, co-located with ``colocate_with`` (None: a group of
    its own, of ``shard_count`` shards or the server's ``citus.shard_count``)."""
    if colocate_with is not None:
        return text(
            "SELECT create_distributed_table(CAST(:table AS regclass), :column, "
            "colocate_with => :colocate)"
        ).bindparams(table=table, column=column, colocate=colocate_with)
    if shard_count is not None:
        return text(
            "SELECT create_distributed_table(CAST(:table AS regclass), :column, "
            "colocate_with => 'none', shard_count => :shards)"
        ).bindparams(table=table, column=column, shards=shard_count)
    return text(
        "SELECT create_distributed_table(CAST(:table AS regclass), :column, "
        "colocate_with => 'none')"
    ).bindparams(table=table, column=column)


def create_reference_table(table: str) -> TextClause:
    """Copy ``table`` to every node (a reference table)."""
    return text("SELECT create_reference_table(CAST(:table AS regclass))").bindparams(table=table)


def app_role_can_login(role: str) -> TextClause:
    """Whether ``role`` exists (a row) and may log in (its value)."""
    return text("SELECT rolcanlogin FROM pg_roles WHERE rolname = :role").bindparams(role=role)


def grant_app_role_login(role: str) -> TextClause:
    """Let ``role`` log in: the coordinator opens its worker connections as the current role
    (Citus propagates the change to the workers). ``role`` is the store's own constant."""
    if not role.isidentifier():
        raise ValueError(f"not a plain role name: {role!r}")
    return text(f"ALTER ROLE {role} LOGIN")
