"""CLUSTER: each scope's memories stored together, nothing else changed, bounded lock wait.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_cluster.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from harness.cli import app
from harness.clock import FixedClock
from harness.errors import StoreUnavailable
from harness.memory import MemoryCandidate, MemoryStore, RecallRequest
from tests.support.hash_embedder import HashEmbedder
from tests.support.loop_thread import LoopThread, open_async_store
from tests.support.stores import make_store

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
    monkeypatch.delenv("HARNESS_EMBED_MODEL_PATH", raising=False)  # lexical-only, fast
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "empty-fastembed-cache"))
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
