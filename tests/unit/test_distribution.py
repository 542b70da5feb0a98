"""What ``distribute`` does to each table (harness.memory.domain.distribution): derived from
the schema, idempotent, refusing a table distributed differently with the table named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import ConflictingState
from harness.memory.domain.distribution import (
    ClusterNode,
    ClusterState,
    DistributionStep,
    TablePlacement,
    plan_distribution,
)

VARCHAR = "character varying"
names = st.text("abcdefghij_", min_size=1, max_size=8)
schemas = st.dictionaries(names, st.sampled_from([VARCHAR, None]), max_size=8)


def _applied(tables: dict[str, str | None], steps: tuple[DistributionStep, ...]) -> dict:
    """The placements after running ``steps`` (what Citus would then report)."""
    held: dict[str, TablePlacement] = {}
    for step in steps:
        if step.action == "reference":
            held[step.table] = TablePlacement(step.table, "reference", None, 99, 1)
        else:
            held[step.table] = TablePlacement(step.table, "distributed", "tenant", 1, 4)
    return held


@given(schemas)
def test_every_tenant_table_is_distributed_the_others_referenced_and_twice_is_once(
    tables: dict[str, str | None],
) -> None:
    steps = plan_distribution(tables, {})
    distributed = {s.table for s in steps if s.action == "distribute"}
    referenced = {s.table for s in steps if s.action == "reference"}
    assert distributed == {t for t, kind in tables.items() if kind is not None}
    assert referenced == {t for t, kind in tables.items() if kind is None} - {"alembic_version"}
    if distributed:  # the anchor first, in a group of its own; every other one co-located with it
        anchor = steps[0]
        assert anchor.action == "distribute" and anchor.colocate_with is None
        assert all(s.colocate_with == anchor.table for s in steps[1:] if s.action == "distribute")
    assert plan_distribution(tables, _applied(tables, steps)) == ()


def test_memories_is_the_anchor_when_present() -> None:
    steps = plan_distribution({"aaa": VARCHAR, "memories": VARCHAR, "store_meta": None}, {})
    assert steps == (
        DistributionStep("distribute", "memories"),
        DistributionStep("distribute", "aaa", "memories"),
        DistributionStep("reference", "store_meta"),
    )


@pytest.mark.parametrize(
    ("table", "now", "says"),
    [
        ("runs", TablePlacement("runs", "distributed", "id", 1, 4), "distributed by 'id'"),
        ("runs", TablePlacement("runs", "distributed", "tenant", 7, 4), "not co-located"),
        ("runs", TablePlacement("runs", "reference", None, 2, 1), "reference table"),
        ("store_meta", TablePlacement("store_meta", "distributed", "k", 3, 4), "no tenant"),
    ],
)
def test_a_table_distributed_differently_is_refused_by_name(
    table: str, now: TablePlacement, says: str
) -> None:
    tables = {"memories": VARCHAR, "runs": VARCHAR, "store_meta": None}
    held = {"memories": TablePlacement("memories", "distributed", "tenant", 1, 4), table: now}
    with pytest.raises(ConflictingState, match=f"table '{table}'.*{says}"):
        plan_distribution(tables, held)


def test_a_tenant_column_of_another_type_is_refused_by_name() -> None:
    with pytest.raises(ConflictingState, match="'chats' has a tenant column of type text"):
        plan_distribution({"memories": VARCHAR, "chats": "text"}, {})


def test_the_cluster_is_distributed_only_when_every_tenant_table_is() -> None:
    nodes = (ClusterNode("h", 1, "primary", True, False, 0),)
    done = TablePlacement("memories", "distributed", "tenant", 1, 4)
    local = TablePlacement("runs", "local")
    state = ClusterState("14.0-1", nodes, (done, local), frozenset({"memories", "runs"}))
    assert not state.distributed and nodes[0].is_coordinator
    assert ClusterState("14.0-1", nodes, (done,), frozenset({"memories"})).distributed


@given(schemas, st.data())
def test_a_referenced_tenant_table_is_distributed_before_the_tables_referencing_it(
    tables: dict[str, str | None], data: st.DataObject
) -> None:
    tenant = sorted(t for t, kind in tables.items() if kind is not None)
    # an acyclic set of foreign keys: each table may point at tables earlier in a drawn order
    order = data.draw(st.permutations(tenant))
    references = {
        table: frozenset(data.draw(st.lists(st.sampled_from(order[:i]), max_size=2)))
        for i, table in enumerate(order)
        if i and table != "memories"
    }
    steps = plan_distribution(tables, {}, references)
    position = {s.table: n for n, s in enumerate(steps) if s.action == "distribute"}
    assert set(position) == set(tenant)
    for table, targets in references.items():
        for target in targets:
            assert position[target] < position[table], (table, target, steps)


def test_the_archive_turns_follow_their_conversations() -> None:
    tables = {"memories": VARCHAR, "conversation_turns": VARCHAR, "conversations": VARCHAR}
    steps = plan_distribution(tables, {}, {"conversation_turns": frozenset({"conversations"})})
    assert [s.table for s in steps] == ["memories", "conversations", "conversation_turns"]
