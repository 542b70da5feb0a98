"""Read replicas on a real streaming replica (``pg_basebackup -R`` of a primary, both from the
embedded server's binaries), through both facades: reads go to the replica, writes to the
primary, a caller's own writes are visible to its next read, and a replica that vanishes or
never answered costs nothing but a warning."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from harness.errors import StoreMisconfigured, StoreUnavailable
from harness.memory import AsyncMemoryStore, MemoryCandidate, MemoryStore, RecallRequest
from harness.memory.domain.idempotency import Answer
from harness.memory.store.migrate import upgrade_to_head
from harness.settings import Settings
from tests.support.facades import KINDS, Facade, TickingClock, open_facade
from tests.support.hash_embedder import HashEmbedder
from tests.support.pg_replica import ReplicatedServer, primary_with_replica
from tests.support.stores import T0, UNREACHABLE_URL


def _migrate(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        upgrade_to_head(engine)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def replicated() -> Iterator[ReplicatedServer]:
    with primary_with_replica(prepare=_migrate) as server:
        yield server


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


@pytest.fixture
def replay(replicated: ReplicatedServer) -> Iterator[ReplicatedServer]:
    """The replicated server, caught up, with replay running again after the test."""
    replicated.wait_caught_up()
    yield replicated
    replicated.resume_replay()


def cand(tenant: str, content: str) -> MemoryCandidate:
    return MemoryCandidate(
        tenant=tenant, scope="user", scope_id="alice", kind="preference", content=content
    )  # type: ignore[arg-type]


def recall_texts(facade: Facade, tenant: str) -> list[str]:
    result = facade.recall(
        RecallRequest(
            tenant=tenant,
            user_id="alice",
            query="answers",
            budget_chars=4000,
            max_items=50,
            max_item_chars=500,
        )
    )
    assert not result.degraded
    return [item.memory.content for item in result.items]


def replica_reads(facade: Facade) -> int:
    return int(facade.store.read_routing().replicas[0].reads)


def with_replica(
    kind: str, server: ReplicatedServer, runner: asyncio.Runner, **settings: object
) -> Facade:
    return open_facade(
        kind,
        server.primary_url,
        HashEmbedder(),
        runner,
        TickingClock(T0),
        database_read_url=server.replica_url,
        **settings,
    )


def primary_only(kind: str, server: ReplicatedServer, runner: asyncio.Runner) -> Facade:
    return open_facade(kind, server.primary_url, HashEmbedder(), runner, TickingClock(T0))


@pytest.mark.parametrize("kind", KINDS)
def test_reads_go_to_the_replica_and_writes_to_the_primary(
    kind: str, replay: ReplicatedServer, runner: asyncio.Runner, tenant: str
) -> None:
    routed = with_replica(kind, replay, runner)
    direct = primary_only(kind, replay, runner)
    try:
        replay.pause_replay()
        # Written by another store: the routed one has no position to wait for.
        elsewhere = direct.write(cand(tenant, "Answers in French"))
        assert direct.get(elsewhere.id, tenant=tenant) is not None
        # The paused replica has not replayed it: a read that does not find it read there.
        assert routed.get(elsewhere.id, tenant=tenant) is None
        assert recall_texts(routed, tenant) == []
        assert replica_reads(routed) == 2
        # A write through the routed store succeeds (a replica refuses writes) and the
        # primary has it at once.
        mine = routed.write(cand(tenant, "Answers with sources"))
        assert direct.get(mine.id, tenant=tenant) is not None
        replay.resume_replay()
        replay.wait_caught_up()
        before = replica_reads(routed)
        assert routed.get(elsewhere.id, tenant=tenant) is not None
        assert replica_reads(routed) == before + 1
    finally:
        routed.close()
        direct.close()


def test_replica_connections_are_standby_sessions_under_the_app_role(
    replay: ReplicatedServer, tenant: str
) -> None:
    """Row-level security holds on the replica: its pooled sessions assume the application
    role like the primary's (same role, same policies, replicated with the data)."""
    store = MemoryStore.connect(
        replay.primary_url,
        embedder=None,
        migrate=False,
        settings=Settings.from_env(database_read_url=replay.replica_url),
    )
    try:
        store.write(cand(tenant, "Answers in French"))  # a row of this test's own
        replay.wait_caught_up()
        (engine,) = store._reads.engines
        with engine.connect() as conn:
            row = conn.execute(sa.text("SELECT current_user, pg_is_in_recovery()")).one()
            # No tenant admitted: no row of any tenant is visible.
            hidden = conn.execute(sa.text("SELECT count(*) FROM memories")).scalar_one()
        assert tuple(row) == ("harness_app", True)
        assert hidden == 0
        assert replay.on_replica("SELECT count(*) FROM memories") > 0  # the superuser sees rows
    finally:
        store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_own_writes_are_visible_to_the_next_recall(
    kind: str, replay: ReplicatedServer, runner: asyncio.Runner, tenant: str
) -> None:
    """Read-your-writes: a lagging replica is waited for (bounded), else the primary answers."""
    quick = with_replica(kind, replay, runner, replica_wait_ms=100)
    patient = with_replica(kind, replay, runner, replica_wait_ms=5000)
    try:
        replay.pause_replay()
        quick.write(cand(tenant, "Answers in French"))
        started = time.monotonic()
        assert recall_texts(quick, tenant) == ["Answers in French"]
        assert time.monotonic() - started >= 0.1  # it waited the bound, then read the primary
        routing = quick.store.read_routing()
        assert routing.fallbacks == {"lag": 1} and routing.replicas[0].reads == 0

        # The replica catches up while the read waits: the replica answers, and has the write.
        patient.write(cand(tenant, "Answers with sources"))
        threading.Timer(0.3, replay.resume_replay).start()
        texts = recall_texts(patient, tenant)
        assert sorted(texts) == ["Answers in French", "Answers with sources"]
        routing = patient.store.read_routing()
        assert routing.replicas[0].reads == 1 and routing.primary_reads == 0
        # Caught up now: the next write-then-read needs at most a short wait.
        patient.write(cand(tenant, "Answers briefly"))
        assert len(recall_texts(patient, tenant)) == 3
        assert patient.store.read_routing().replicas[0].reads == 2
    finally:
        quick.close()
        patient.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_replica_going_away_mid_run_falls_back_to_the_primary_and_is_retried(
    kind: str,
    replay: ReplicatedServer,
    runner: asyncio.Runner,
    tenant: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    facade = with_replica(kind, replay, runner, replica_retry_s=1.5)
    try:
        facade.write(cand(tenant, "Answers in French"))
        assert recall_texts(facade, tenant) == ["Answers in French"]
        assert replica_reads(facade) == 1
        replay.stop_replica()
        try:
            with caplog.at_level(logging.WARNING, logger="harness.memory.store.replicas"):
                assert recall_texts(facade, tenant) == ["Answers in French"]
            assert any("read replica" in r.getMessage() for r in caplog.records)
            # Paused: the next reads go straight to the primary, without trying it.
            assert recall_texts(facade, tenant) == ["Answers in French"]
            routing = facade.store.read_routing()
            assert not routing.replicas[0].up and routing.replicas[0].failures == 1
            assert routing.fallbacks == {"error": 1, "down": 1}
        finally:
            replay.start_replica()
        time.sleep(1.6)  # past the retry pause (generous: the two reads above must fit in it)
        assert recall_texts(facade, tenant) == ["Answers in French"]
        routing = facade.store.read_routing()
        assert routing.replicas[0].up and routing.replicas[0].reads == 2
    finally:
        facade.close()


@pytest.mark.parametrize("kind", KINDS)
def test_unreachable_read_url_at_start_is_a_warning_and_reads_use_the_primary(
    kind: str, db_url: str, runner: asyncio.Runner, tenant: str
) -> None:
    with pytest.warns(RuntimeWarning, match="HARNESS_DATABASE_READ_URL.*cannot be reached"):
        facade = open_facade(
            kind,
            db_url,
            HashEmbedder(),
            runner,
            TickingClock(T0),
            database_read_url=UNREACHABLE_URL,
        )
    try:
        facade.write(cand(tenant, "Answers in French"))
        assert recall_texts(facade, tenant) == ["Answers in French"]
        routing = facade.store.read_routing()
        assert not routing.replicas[0].up and routing.primary_reads == 1
        assert routing.replicas[0].url.endswith("127.0.0.1:9/harness")
    finally:
        facade.close()


def test_unreachable_primary_is_still_unavailable(replicated: ReplicatedServer) -> None:
    settings = Settings.from_env(database_read_url=replicated.replica_url)
    with pytest.raises(StoreUnavailable):
        MemoryStore.connect(UNREACHABLE_URL, embedder=None, check_model=False, settings=settings)
    with pytest.raises(StoreUnavailable):
        asyncio.run(
            AsyncMemoryStore.connect(
                UNREACHABLE_URL, embedder=None, check_model=False, settings=settings
            )
        )


def test_a_misconfigured_read_url_is_refused_naming_the_setting(db_url: str) -> None:
    wrong_db = sa.engine.make_url(db_url).set(database="no_such_db_here")
    settings = Settings.from_env(database_read_url=wrong_db.render_as_string(hide_password=False))
    with pytest.raises(StoreMisconfigured, match="HARNESS_DATABASE_READ_URL") as err:
        MemoryStore.connect(db_url, embedder=None, migrate=False, settings=settings)
    assert 'database "no_such_db_here" does not exist' in str(err.value)


def test_status_lists_each_read_replica_with_its_health(
    replay: ReplicatedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from harness.cli import app

    monkeypatch.setenv("HARNESS_DATABASE_READ_URL", f"{replay.replica_url}, {UNREACHABLE_URL}")
    result = CliRunner().invoke(app, ["status", "--url", replay.primary_url])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("read replica")]
    assert len(lines) == 2, result.output
    assert f":{replay.replica.port}/" in lines[0] and "(up, " in lines[0]
    assert "127.0.0.1:9/" in lines[1] and "(down: " in lines[1]


@pytest.mark.parametrize("kind", KINDS)
def test_idempotent_and_maintenance_writes_count_for_read_your_writes(
    kind: str, replay: ReplicatedServer, runner: asyncio.Runner, tenant: str, other_tenant: str
) -> None:
    """Every path that writes remembers its position: an idempotent request for its tenant,
    a maintenance transaction (purge) for every tenant. With replay paused, the next read of
    those tenants goes to the primary after the bound, and sees the write."""
    facade = with_replica(kind, replay, runner, replica_wait_ms=50)
    try:
        replay.pause_replay()
        written: list[uuid.UUID] = []

        def attempt(write_many: Any) -> Any:
            result = write_many([cand(tenant, "Answers in French")])
            if inspect.isawaitable(result):

                async def finish() -> Answer:
                    written.extend(m.id for m in await result)
                    return Answer(201, {})

                return finish()
            written.extend(m.id for m in result)
            return Answer(201, {})

        facade.idempotent(tenant, "key-1", "0" * 64, attempt)
        assert facade.get(written[0], tenant=tenant) is not None
        assert facade.store.read_routing().fallbacks == {"lag": 1}
        assert facade.get(written[0], tenant=other_tenant) is None  # not waited for: replica
        assert facade.store.read_routing().replicas[0].reads == 1

        facade.purge_expired()
        assert facade.pending(other_tenant) == []
        assert facade.store.read_routing().fallbacks == {"lag": 2}
    finally:
        facade.close()


def test_concurrent_recalls_all_answer_while_the_replica_vanishes(
    replay: ReplicatedServer, tenant: str
) -> None:
    """Eight asyncio callers at once, the replica stopped under them: every recall answers
    from the primary, none degrades."""

    async def scenario() -> list[list[str]]:
        store = await AsyncMemoryStore.connect(
            replay.primary_url,
            embedder=HashEmbedder(),
            migrate=False,
            check_model=False,
            settings=Settings.from_env(database_read_url=replay.replica_url),
        )
        try:
            await store.write(cand(tenant, "Answers in French"))
            request = RecallRequest(tenant=tenant, user_id="alice", query="answers")
            await asyncio.gather(*(store.recall(request) for _ in range(8)))  # pools warm
            replay.stop_replica()
            results = await asyncio.gather(*(store.recall(request) for _ in range(8)))
            assert all(not r.degraded for r in results)
            routing = store.read_routing()
            assert routing.fallbacks.get("error", 0) >= 1
            assert routing.fallbacks.get("error", 0) + routing.fallbacks.get("down", 0) == 8
            return [[i.memory.content for i in r.items] for r in results]
        finally:
            await store.close()

    try:
        assert asyncio.run(scenario()) == [["Answers in French"]] * 8
    finally:
        replay.start_replica()
