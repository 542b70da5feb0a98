"""Sharding the store by tenant on a Citus coordinator: ``distribute`` and the cluster's state.

Operations for the store facades (run as the tables' owner, in one maintenance transaction).
What each table becomes is decided by :func:`harness.memory.domain.distribution.plan_distribution`
from the live schema, so tables added by later migrations are picked up by running
``distribute`` again.
"""

from __future__ import annotations

from harness.errors import StoreMisconfigured
from harness.memory.domain.distribution import (
    DISTRIBUTION_COLUMN,
    ClusterNode,
    ClusterState,
    DistributionStep,
    TablePlacement,
    plan_distribution,
)
from harness.memory.store.executors import Op
from harness.memory.store.sql import citus as citus_sql
from harness.memory.store.sql.security import APP_ROLE

__all__ = ["NOT_CITUS", "cluster_state_op", "distribute_op"]

#: The one line ``distribute`` says on a server without Citus.
NOT_CITUS = (
    "distribute: this database has no Citus extension (CREATE EXTENSION citus on a Citus "
    "coordinator first); a single PostgreSQL server needs no distribution"
)


def cluster_state_op() -> Op[ClusterState | None]:
    """Read-only: the cluster's nodes and how each table of the schema is held (None on a
    server without Citus)."""
    version = (yield citus_sql.citus_version()).scalar_one_or_none()
    if version is None:
        return None
    tables = {row.name: row.tenant_type for row in (yield citus_sql.schema_tables())}
    placements = yield from _placements()
    nodes = tuple(
        ClusterNode(r.host, int(r.port), r.role, bool(r.active), bool(r.has_shards), int(r.grp))
        for r in (yield citus_sql.cluster_nodes())
    )
    held = tuple(placements.get(t) or TablePlacement(t, "local") for t in sorted(tables))
    return ClusterState(
        str(version), nodes, held, frozenset(t for t, kind in tables.items() if kind is not None)
    )


def distribute_op(shard_count: int | None) -> Op[tuple[tuple[DistributionStep, ...], bool]]:
    """Distribute every tenant table by tenant (co-located), make the others reference
    tables, and let the application role log in (the workers' connections log in as it).
    Returns the steps taken (none when already distributed) and whether the role was changed.

    Raises:
        StoreMisconfigured: the server has no Citus (:data:`NOT_CITUS`).
        ConflictingState: a table is already distributed differently (named).
    """
    if (yield citus_sql.citus_version()).scalar_one_or_none() is None:
        raise StoreMisconfigured(NOT_CITUS)
    tables = {row.name: row.tenant_type for row in (yield citus_sql.schema_tables())}
    references: dict[str, frozenset[str]] = {}
    for row in (yield citus_sql.schema_foreign_keys()):
        references[row.name] = references.get(row.name, frozenset()) | {row.target}
    steps = plan_distribution(tables, (yield from _placements()), references)
    login = (yield citus_sql.app_role_can_login(APP_ROLE)).scalar_one_or_none()
    granted = login is False
    if granted:
        yield citus_sql.grant_app_role_login(APP_ROLE)
    for step in steps:
        if step.action == "reference":
            yield citus_sql.create_reference_table(step.table)
        else:
            yield citus_sql.create_distributed_table(
                step.table, DISTRIBUTION_COLUMN, step.colocate_with, shard_count
            )
    return steps, granted


def _placements() -> Op[dict[str, TablePlacement]]:
    rows = yield citus_sql.table_placements()
    return {
        r.name: TablePlacement(
            r.name,
            "reference" if r.placement == "reference" else r.placement,
            r.column,
            r.colocation,
            int(r.shards or 0),
        )
        for r in rows
    }
