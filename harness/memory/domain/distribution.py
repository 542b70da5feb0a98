"""Sharding by tenant on Citus, as values and one rule: what ``distribute`` does to each table.

The table list is the schema's, not a list written here: every table with a ``tenant`` column
is distributed by it and co-located with ``memories`` (so one tenant's rows of every table
live on one node and a transaction over them stays on one shard); every other table becomes a
reference table (copied to every node), except the migrations' bookkeeping, which stays on
the coordinator where migrations run. Pure: no IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.errors import ConflictingState

__all__ = [
    "ANCHOR_TABLE",
    "DISTRIBUTION_COLUMN",
    "LOCAL_TABLES",
    "ClusterNode",
    "ClusterState",
    "DistributionReport",
    "DistributionStep",
    "TablePlacement",
    "plan_distribution",
]

#: The column every tenant table is distributed by.
DISTRIBUTION_COLUMN = "tenant"
#: The table the others are co-located with (when the schema has it).
ANCHOR_TABLE = "memories"
#: Tables without tenant data that stay on the coordinator (Alembic writes it there).
LOCAL_TABLES = frozenset({"alembic_version"})

Placement = Literal["distributed", "reference", "local"]


@dataclass(frozen=True, slots=True)
class TablePlacement:
    """How Citus holds one table: ``local`` when it is not a Citus table at all."""

    table: str
    placement: Placement
    column: str | None = None
    colocation: int | None = None
    shards: int = 0


@dataclass(frozen=True, slots=True)
class ClusterNode:
    """One node of ``pg_dist_node``."""

    host: str
    port: int
    role: str
    active: bool
    has_shards: bool
    group: int

    @property
    def is_coordinator(self) -> bool:
        return self.group == 0


@dataclass(frozen=True, slots=True)
class ClusterState:
    """The cluster as ``status`` shows it: its nodes and every table of the schema."""

    citus_version: str
    nodes: tuple[ClusterNode, ...]
    tables: tuple[TablePlacement, ...]
    tenant_tables: frozenset[str]

    @property
    def distributed(self) -> bool:
        """Every tenant table distributed (what ``distribute`` leaves behind)."""
        by_name = {t.table: t for t in self.tables}
        return all(by_name[t].placement == "distributed" for t in self.tenant_tables)


@dataclass(frozen=True, slots=True)
class DistributionStep:
    """One Citus call: distribute ``table`` by tenant (co-located with ``colocate_with``, or
    a new co-location group when None), or make it a reference table."""

    action: Literal["distribute", "reference"]
    table: str
    colocate_with: str | None = None


@dataclass(frozen=True, slots=True)
class DistributionReport:
    """What ``distribute`` did: the steps (none when there was nothing to do), whether the
    application role was allowed to log in, and the cluster afterwards."""

    steps: tuple[DistributionStep, ...]
    login_granted: bool
    state: ClusterState


def plan_distribution(
    tables: Mapping[str, str | None],
    placements: Mapping[str, TablePlacement],
    references: Mapping[str, frozenset[str]] | None = None,
) -> tuple[DistributionStep, ...]:
    """The steps that bring ``tables`` (name -> the type of its tenant column, None without
    one) to their roles, given how Citus holds them now (``placements``: only the Citus
    tables). Nothing for a table already in its role, so running the steps twice is running
    them once. ``references``: the tables each table's foreign keys point at; a referenced
    tenant table is distributed before the tables referencing it (Citus refuses a foreign
    key to a table it does not hold yet).

    Raises:
        ConflictingState: naming the table, when one is already distributed differently (by
            another column, in another co-location group, or as the wrong kind of table), or
            its tenant column has another type than the anchor's (co-location needs one type):
            moving data that is already sharded is the operator's decision, not this one's.
    """
    tenant_tables = sorted(t for t, tenant_type in tables.items() if tenant_type is not None)
    steps: list[DistributionStep] = []
    if tenant_tables:
        steps += _tenant_steps(tables, _referenced_first(tenant_tables, references), placements)
    for table in sorted(t for t, tenant_type in tables.items() if tenant_type is None):
        if table in LOCAL_TABLES:
            continue
        now = placements.get(table)
        if now is None or now.placement == "local":
            steps.append(DistributionStep("reference", table))
        elif now.placement != "reference":
            raise _refuse(table, f"holds no tenant column but is a {now.placement} table")
    return tuple(steps)


def _referenced_first(
    tables: list[str], references: Mapping[str, frozenset[str]] | None
) -> list[str]:
    """``tables`` (sorted) with each one after the tables its foreign keys reference."""
    refs = references or {}
    done: list[str] = []

    def visit(table: str, path: frozenset[str]) -> None:
        if table in done or table in path:
            return
        for target in sorted(refs.get(table, frozenset())):
            if target in tables and target != table:
                visit(target, path | {table})
        done.append(table)

    for table in tables:
        visit(table, frozenset())
    return done


def _tenant_steps(
    tables: Mapping[str, str | None],
    tenant_tables: list[str],
    placements: Mapping[str, TablePlacement],
) -> list[DistributionStep]:
    anchor = ANCHOR_TABLE if ANCHOR_TABLE in tenant_tables else tenant_tables[0]
    for table in tenant_tables:
        if tables[table] != tables[anchor]:
            raise ConflictingState(
                f"distribute: table {table!r} has a tenant column of type {tables[table]}, "
                f"{anchor!r} of type {tables[anchor]}: co-located tables need one type; "
                "change the column's type (a migration), then run distribute again"
            )
    anchor_now = placements.get(anchor)
    anchor_group = anchor_now.colocation if anchor_now is not None else None
    steps: list[DistributionStep] = []
    for table in [anchor, *(t for t in tenant_tables if t != anchor)]:
        now = placements.get(table)
        if now is None or now.placement == "local":
            steps.append(DistributionStep("distribute", table, None if table == anchor else anchor))
            continue
        if now.placement != "distributed":
            raise _refuse(table, f"is a {now.placement} table, not distributed by tenant")
        if now.column != DISTRIBUTION_COLUMN:
            raise _refuse(
                table, f"is distributed by {now.column!r}, not by {DISTRIBUTION_COLUMN!r}"
            )
        if table != anchor and anchor_group is not None and now.colocation != anchor_group:
            raise _refuse(
                table,
                f"is distributed by tenant but not co-located with {anchor!r} "
                f"(co-location group {now.colocation}, not {anchor_group})",
            )
    return steps


def _refuse(table: str, why: str) -> ConflictingState:
    return ConflictingState(
        f"distribute: table {table!r} {why}; undistribute it first "
        f"(SELECT undistribute_table('{table}')) and run distribute again"
    )
