"""CLUSTER: each scope's memories stored together, nothing else changed, bounded lock wait."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import InvalidInput, StoreUnavailable
from harness.memory import MemoryCandidate, MemoryStore, RecallRequest
from harness.memory.store.checks import check_index_memory, check_lock_wait
from harness.memory.store.ops.layout import cluster_op, layout_op

from .conftest import FixedClock, HashEmbedder, make_store
from .loop_thread import LoopThread, open_async_store

USERS = ("ana", "bo", "cy", "dee")
PER_USER = 40


@pytest.fixture
def own_store(private_db_url: str, clock: FixedClock) -> Iterator[MemoryStore]:
    """CLUSTER rewrites the whole table: a database of this test alone."""
    s = make_store(private_db_url, HashEmbedder(), clock)
    yield s
    s.close()


def write_interleaved(store: MemoryStore, tenant: str) -> None:
    """Users' facts arriving turn by turn, as a live tenant's do: each page holds every user."""
    for i in range(PER_USER):
        store.write_many(
            [
                MemoryCandidate(
                    tenant=tenant,
                    scope="user",
                    scope_id=user,
                    kind="fact",
                    content=f"{user} note {i}: the {i % 7}th depot ships crate {i * 31 % 97}.",
                )
                for user in USERS
            ]
        )


def pages_of(url: str, tenant: str) -> dict[str, list[int]]:
    """Heap block numbers of each user's rows (read as the superuser, outside the store)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT scope_id, (ctid::text::point)[0]::int AS block FROM memories "
                    "WHERE tenant = :t AND scope = 'user'"
                ),
                {"t": tenant},
            ).all()
    finally:
        engine.dispose()
    out: dict[str, list[int]] = {}
    for user, block in rows:
        out.setdefault(user, []).append(block)
    return out


def snapshot(url: str, tenant: str) -> list[tuple[object, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [
                tuple(r)
                for r in conn.execute(
                    sa.text(
                        "SELECT id, scope, scope_id, kind, content, status, embedding::text, "
                        "created_at FROM memories WHERE tenant = :t ORDER BY id"
                    ),
                    {"t": tenant},
                )
            ]
    finally:
        engine.dispose()


def recalled(store: MemoryStore, tenant: str, user: str) -> list[str]:
    result = store.recall(
        RecallRequest(tenant=tenant, user_id=user, query="which depot ships crate 62", max_items=8)
    )
    return [str(item.memory.id) for item in result.items]


def test_cluster_stores_each_scope_together_and_changes_no_memory(
    own_store: MemoryStore, private_db_url: str, tenant: str
) -> None:
    write_interleaved(own_store, tenant)
    scattered = pages_of(private_db_url, tenant)
    before_rows = snapshot(private_db_url, tenant)
    before_recall = {u: recalled(own_store, tenant, u) for u in USERS}
    assert all(len(set(blocks)) > PER_USER // 2 for blocks in scattered.values())

    report = own_store.cluster(index_memory_mb=128)

    together = pages_of(private_db_url, tenant)
    for user, blocks in together.items():
        pages = sorted(set(blocks))
        assert len(blocks) == PER_USER
        assert pages == list(range(pages[0], pages[-1] + 1))  # contiguous
        assert len(pages) < len(set(scattered[user])) // 2
    assert snapshot(private_db_url, tenant) == before_rows
    assert {u: recalled(own_store, tenant, u) for u in USERS} == before_recall
    assert report.before.rows == report.after.rows == len(USERS) * PER_USER
    assert report.after.pages < report.before.pages
    assert report.after.rows_per_page > report.before.rows_per_page
    assert own_store.layout() == report.after  # read-only and repeatable
    assert report.seconds > 0


def test_cluster_gives_up_on_a_held_lock_changing_nothing(
    own_store: MemoryStore, private_db_url: str, tenant: str
) -> None:
    write_interleaved(own_store, tenant)
    scattered = pages_of(private_db_url, tenant)
    holder = sa.create_engine(private_db_url)
    try:
        with holder.connect() as conn:
            conn.execute(sa.text("LOCK TABLE memories IN ACCESS SHARE MODE"))  # a long reader
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match=r"cluster memories.*0\.2 s.*lock"):
                own_store.cluster(lock_wait_s=0.2)
            assert time.monotonic() - started < 5.0
            conn.rollback()
    finally:
        holder.dispose()
    assert pages_of(private_db_url, tenant) == scattered
    # No lock left behind: writes and recalls go on.
    own_store.write(
        MemoryCandidate(tenant=tenant, scope="user", scope_id="ana", kind="fact", content="after")
    )
    assert recalled(own_store, tenant, "ana")


def test_async_cluster_is_the_same_operation(
    aloop: LoopThread, own_store: MemoryStore, private_db_url: str, tenant: str
) -> None:
    write_interleaved(own_store, tenant)
    before = own_store.layout()
    astore = aloop.run(open_async_store(private_db_url, HashEmbedder()))
    try:
        report = aloop.run(astore.cluster(lock_wait_s=1))
        assert aloop.run(astore.layout()) == report.after
    finally:
        aloop.run(astore.close())
    assert report.before == before
    assert report.after.rows == before.rows and report.after.pages < before.pages
    assert own_store.layout() == report.after


def test_cluster_command_reports_pages_before_and_after(
    own_store: MemoryStore,
    private_db_url: str,
    tenant: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HARNESS_EMBED_MODEL_PATH", f"{tmp_path}/no-model")
    monkeypatch.setenv("COLUMNS", "400")
    write_interleaved(own_store, tenant)
    before = own_store.layout()
    result = CliRunner().invoke(
        app, ["cluster", "--url", private_db_url, "--lock-wait", "2", "--index-memory", "64"]
    )
    assert result.exit_code == 0, result.output
    after = own_store.layout()
    assert after.pages < before.pages
    assert f"clustered {before.rows} memories" in result.output
    assert f"{before.pages} -> {after.pages}" in result.output
    refused = CliRunner().invoke(app, ["cluster", "--url", private_db_url, "--lock-wait", "0"])
    assert refused.exit_code == 2 and "--lock-wait" in refused.output


@given(st.one_of(st.floats(allow_nan=True), st.integers(-10, 10_000), st.booleans(), st.text()))
def test_lock_wait_accepts_only_a_positive_bounded_number_of_seconds(value: object) -> None:
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and not math.isnan(value)
        and 0 < value <= 3600
    )
    if ok:
        assert isinstance(value, int | float)
        assert check_lock_wait(value) == max(1, round(value * 1000))
    else:
        with pytest.raises(InvalidInput) as caught:
            check_lock_wait(value)  # type: ignore[arg-type]
        assert caught.value.field == "lock_wait_s"


@given(st.one_of(st.none(), st.integers(-5, 2_000_000), st.floats(), st.booleans()))
def test_index_memory_is_none_or_whole_megabytes_in_range(value: object) -> None:
    ok = value is None or (
        isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1_048_576
    )
    if ok:
        assert check_index_memory(value) == value  # type: ignore[arg-type]
    else:
        with pytest.raises(InvalidInput) as caught:
            check_index_memory(value)  # type: ignore[arg-type]
        assert caught.value.field == "index_memory_mb"


class _OneRow:
    """A result holding one layout row (what ``scope_pages`` returns)."""

    def mappings(self) -> _OneRow:
        return self

    def one(self) -> dict[str, int]:
        return {"rows": 10, "pages": 4}


def _sql_of(op: object) -> list[str]:
    """Drive an operation without a database; the SQL of every step, in order."""
    from sqlalchemy.dialects import postgresql

    steps: list[str] = []
    gen: Any = op
    try:
        step = next(gen)
        while True:
            statement = step[0] if isinstance(step, tuple) else step
            steps.append(
                str(
                    statement.compile(
                        dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}
                    )
                )
            )
            step = gen.send(_OneRow())
    except StopIteration:
        return steps


def test_whole_table_scans_and_the_rewrite_run_without_the_statement_timeout() -> None:
    read = _sql_of(layout_op())
    assert "statement_timeout" in read[0] and "'0'" in read[0]
    assert "lock_timeout" not in read[0] and "FROM memories" in read[1]
    rewrite = _sql_of(cluster_op(250, 64))
    settings, first_scan = rewrite[0], rewrite[1]
    assert "'statement_timeout', '0'" in settings
    assert "'lock_timeout', '250ms'" in settings and "'maintenance_work_mem', '64MB'" in settings
    assert "FROM memories" in first_scan  # measured under those settings
    assert rewrite[2] == "CLUSTER memories USING ix_memories_readable"
    assert rewrite[3] == "ANALYZE memories" and "FROM memories" in rewrite[4]
    assert "maintenance_work_mem" not in _sql_of(cluster_op(250, None))[0]
