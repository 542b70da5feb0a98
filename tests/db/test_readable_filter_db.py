"""The readable-set filter (SPEC section 5 step 1) as a statement, against an oracle.

A grid of rows (two tenants x every scope x scope ids that name each other's scopes x every
status x expiry around ``now``) is inserted once; the filter of every shape (with and without
workflow and session) must select exactly the rows the rule admits. The rows live in a
temporary table of the columns the filter reads, so the filter alone decides (no row-level
security, no other statement). Fast enough to be the test selection of the filter's mutation
run (docs/mutation.md).

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_readable_filter.py.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from harness.memory.store.sql.retrieval import readable_filter, readable_params
from harness.memory.store.sql.schema import memories
from tests.unit.test_readable_filter import NOW

TICK = timedelta(microseconds=1)
SCOPES = ("platform", "user", "workflow", "session")
#: Every scoped row gets every id, so an id of one scope never reads as another's (platform
#: rows have the empty id: the schema admits no other).
SCOPE_IDS = ("alice", "bob", "wf-1", "wf-2", "s-1", "s-2")
STATUSES = ("active", "pending_approval", "rejected", "superseded")
EXPIRIES = (None, NOW - TICK, NOW, NOW + TICK)

SCOPED = [("platform", ""), *((s, i) for s in SCOPES[1:] for i in SCOPE_IDS)]

Row = tuple[uuid.UUID, str, str, str, str, datetime | None]


def grid(tenants: tuple[str, str]) -> list[Row]:
    return [
        (uuid.uuid4(), tenant, scope, scope_id, status, expires)
        for tenant, (scope, scope_id), status, expires in itertools.product(
            tenants, SCOPED, STATUSES, EXPIRIES
        )
    ]


def admitted(
    row: Row, tenant: str, user: str, workflow: str | None, session: str | None, now: datetime
) -> bool:
    """The rule, written plainly."""
    _, t, scope, scope_id, status, expires = row
    if t != tenant or status != "active" or (expires is not None and expires <= now):
        return False
    return (
        (scope == "platform" and scope_id == "")
        or (scope == "user" and scope_id == user)
        or (scope == "workflow" and workflow is not None and scope_id == workflow)
        or (scope == "session" and session is not None and scope_id == session)
    )


@pytest.fixture(scope="module")
def seeded(server_url: str) -> Iterator[tuple[sa.Connection, list[Row], str]]:
    """The grid in a temporary table named ``memories`` (it shadows any real one for this
    connection): no database to create or migrate, so each mutant's run takes a second."""
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    rows = grid((tenant, f"{tenant}-b"))
    engine = sa.create_engine(server_url)
    with engine.connect() as conn:
        conn.execute(
            sa.text(
                "CREATE TEMPORARY TABLE memories (id uuid PRIMARY KEY, tenant text, scope text,"
                " scope_id text, status text, expires_at timestamptz)"
            )
        )
        conn.execute(
            memories.insert(),
            [
                {
                    "id": rid,
                    "tenant": t,
                    "scope": scope,
                    "scope_id": scope_id,
                    "status": status,
                    "expires_at": expires,
                }
                for rid, t, scope, scope_id, status, expires in rows
            ],
        )
        yield conn, rows, tenant
    engine.dispose()


@pytest.mark.parametrize(
    ("user", "workflow", "session"),
    [
        ("alice", None, None),
        ("alice", "wf-1", None),
        ("alice", None, "s-1"),
        ("bob", "wf-2", "s-2"),
        ("alice", "", ""),  # empty ids mean "no such scope"
    ],
)
def test_the_filter_selects_exactly_the_readable_rows(
    seeded: tuple[sa.Connection, list[Row], str],
    user: str,
    workflow: str | None,
    session: str | None,
) -> None:
    conn, rows, tenant = seeded
    where = readable_filter(has_workflow=bool(workflow), has_session=bool(session))
    params = readable_params(tenant, user, workflow, session, NOW)
    got = set(conn.execute(sa.select(memories.c.id).where(where), params).scalars())
    want = {
        row[0]
        for row in rows
        if admitted(row, tenant, user, workflow or None, session or None, NOW)
    }
    assert got == want
    assert want  # the grid holds readable rows of every shape


def test_expiry_compares_instants_whatever_the_sessions_time_zone(
    seeded: tuple[sa.Connection, list[Row], str],
) -> None:
    """At 01:30 on the night New York turns its clocks back, a local time names two instants:
    a comparison made without the time zone would move ``now`` by an hour."""
    conn, _, tenant = seeded
    now = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # 01:30 EDT, the first of the two
    owner = f"{tenant}-dst"
    rows = {
        "later": now + timedelta(minutes=30),
        "just after": now + TICK,
        "earlier": now - timedelta(minutes=30),
    }
    ids = {name: uuid.uuid4() for name in rows}
    conn.execute(
        memories.insert(),
        [
            {
                "id": ids[name],
                "tenant": owner,
                "scope": "platform",
                "scope_id": "",
                "status": "active",
                "expires_at": expires,
            }
            for name, expires in rows.items()
        ],
    )
    where = readable_filter(has_workflow=False, has_session=False)
    conn.execute(sa.text("SET TIME ZONE 'America/New_York'"))
    try:
        got = set(
            conn.execute(
                sa.select(memories.c.id).where(where),
                readable_params(owner, "alice", None, None, now),
            ).scalars()
        )
    finally:
        conn.execute(sa.text("RESET TIME ZONE"))
    assert got == {ids["later"], ids["just after"]}
