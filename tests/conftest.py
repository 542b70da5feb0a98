"""Fixtures every kind of test may use, and the markers that follow the folders.

Tests live by kind: ``tests/unit`` (no database, no model, no other process), ``tests/db``
(PostgreSQL in-process, some the real model), ``tests/system`` (subprocesses, servers, a
browser, a wheel, real faults). Each test is marked ``unit``, ``db`` or ``system`` after its
folder, and ``model`` when it uses the real embedding model. Helpers live in ``tests/support``.

One embedded PostgreSQL per test session, a fresh database per session, a unique tenant per
test. Set HARNESS_TEST_DATABASE_URL to use another server instead, or HARNESS_TEST_CITUS_URL to
run on a Citus coordinator (``make test-citus``: each database made on every node, the store's
tables distributed by tenant; tests marked ``cluster`` run only there, ``tests/support/citus.py``)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa
from hypothesis import settings as hypothesis_settings
from sqlalchemy.engine import make_url

from harness.clock import FixedClock
from harness.memory.embedding.embedder import Embedder, load_embedder
from harness.memory.store.aio import AsyncMemoryStore
from harness.memory.store.db import normalize_url
from harness.memory.store.migrate import upgrade_to_head
from harness.memory.store.sync import MemoryStore
from harness.settings import Settings
from tests.support.citus import citus_url, create_citus_database
from tests.support.hash_embedder import HashEmbedder
from tests.support.kinds import MODEL_FIXTURES, TESTS, kind_of
from tests.support.loop_thread import LoopThread, open_async_store
from tests.support.stores import T0, create_database, make_store

if TYPE_CHECKING:
    from harness.console import AdminTokenFile

# Speed is measured in bench/, not asserted by tests: a per-example deadline only turns a busy
# shared machine into a failure. Each test's own max_examples/stateful settings still apply.
hypothesis_settings.register_profile("harness", deadline=None)
hypothesis_settings.load_profile("harness")

# Under mutation testing (bench/mutation.py sets HARNESS_MUTATION) every mutant must meet the
# same examples, and a loaded machine must not turn a slow example into a "killed" mutant.
hypothesis_settings.register_profile(
    "mutation", deadline=None, derandomize=True, database=None, max_examples=30
)
if os.environ.get("HARNESS_MUTATION"):
    hypothesis_settings.load_profile("mutation")


# --- markers follow the folders ------------------------------------------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if citus_url() is None:  # the cluster's own tests need the cluster (make test-citus)
        left_out = [item for item in items if item.get_closest_marker("cluster") is not None]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item.get_closest_marker("cluster") is None]
    for item in items:
        kind = kind_of(item.path)
        if kind is not None:
            item.add_marker(kind)
        if set(getattr(item, "fixturenames", ())) & MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if kind_of(item.path) is None and TESTS in Path(item.path).resolve().parents:
        pytest.fail(
            f"{item.nodeid}: a test lives in tests/unit, tests/db or tests/system (see "
            "tests/conftest.py), so its folder says what it needs",
            pytrace=False,
        )


# --- PostgreSQL ----------------------------------------------------------------------------------


def _server_url(tmp_root: Path) -> str:
    cluster = citus_url()
    if cluster is not None:
        return cluster
    explicit = os.environ.get("HARNESS_TEST_DATABASE_URL")
    if explicit:
        return normalize_url(explicit)
    from harness.memory.store.embedded import embedded_url

    return normalize_url(embedded_url(tmp_root / "harness-home"))


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _server_url(tmp_path_factory.mktemp("pg"))


#: Shards per distributed table in the suite's cluster databases (2 per worker): enough to put
#: tenants on different workers, few enough to create quickly.
CITUS_TEST_SHARDS = 4


def _migrated_database(server_url: str, name: str) -> str:
    """A new database, migrated (and on a cluster, distributed); returns its URL."""
    if citus_url() is not None:
        url = create_citus_database(server_url, name)
        owner = MemoryStore.connect(url, embedder=HashEmbedder(), migrate=True, check_model=False)
        try:
            owner.distribute(shard_count=CITUS_TEST_SHARDS)
        finally:
            owner.close()
        return url
    url = create_database(server_url, name)
    engine = sa.create_engine(url)
    upgrade_to_head(engine)
    engine.dispose()
    return url


@pytest.fixture(scope="session")
def db_url(server_url: str) -> str:
    return _migrated_database(server_url, f"harness_test_{os.getpid()}")


@pytest.fixture(scope="session")
def template_db_url(server_url: str) -> str:
    """A migrated database nothing connects to after migration: the template of
    :func:`private_db_url` (PostgreSQL copies a template only while it has no sessions)."""
    return _migrated_database(server_url, f"harness_tpl_{os.getpid()}")


@pytest.fixture
def private_db_url(server_url: str, request: pytest.FixtureRequest) -> str:
    """A migrated database of this test alone, for operations that span every tenant
    (reconcile, purge, status counts): nothing another test wrote can change their results.
    (On a cluster: one distributed database emptied for each test, since Citus databases are
    not copied and a new one takes seconds.)"""
    if citus_url() is not None:
        url = str(request.getfixturevalue("_citus_private_db_url"))
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            tables = conn.execute(
                sa.text(
                    "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables "
                    "WHERE schemaname = current_schema() AND tablename <> 'alembic_version'"
                )
            ).scalar_one()
            conn.execute(sa.text(f"TRUNCATE {tables}"))
        engine.dispose()
        return url
    name = f"harness_own_{uuid.uuid4().hex[:12]}"
    template = make_url(request.getfixturevalue("template_db_url")).database
    return create_database(server_url, name, template=template)


@pytest.fixture(scope="session")
def _citus_private_db_url(server_url: str) -> str:
    return _migrated_database(server_url, f"harness_own_{os.getpid()}")


@pytest.fixture
def fresh_db_url(server_url: str) -> str:
    """An empty, unmigrated database of its own."""
    name = f"harness_fresh_{uuid.uuid4().hex[:12]}"
    if citus_url() is not None:
        return create_citus_database(server_url, name)
    return create_database(server_url, name)


@pytest.fixture(scope="session")
def semantic_db_url(server_url: str) -> str:
    """A migrated database for stores with the real model (vectors of one model per store)."""
    return _migrated_database(server_url, f"harness_semantic_{os.getpid()}")


# --- the embedding model -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    settings = Settings.from_env()
    # As the product loads it (queries through the int8 copy only with HARNESS_EMBED_INT8=on).
    embedder, reason = load_embedder(
        settings.embed_model,
        settings.embed_model_path,
        int8_cache=settings.model_cache if settings.embed_int8 else None,
    )
    if embedder is None:
        pytest.fail(
            "these tests need the embedding model: set HARNESS_EMBED_MODEL_PATH to a "
            f"local all-MiniLM-L6-v2 ONNX folder ({reason})"
        )
    return embedder


# --- clock and tenants ---------------------------------------------------------------------------


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0)


@pytest.fixture
def tenant() -> str:
    """A tenant no other test uses: every database test writes under its own."""
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def other_tenant(tenant: str) -> str:
    """A second tenant of this test alone (isolation tests write the same data into both)."""
    return f"{tenant}-b"


# --- stores --------------------------------------------------------------------------------------


@pytest.fixture
def store(db_url: str, clock: FixedClock) -> Iterator[MemoryStore]:
    """A store with a deterministic hash embedder (real vector path, no model)."""
    s = make_store(db_url, HashEmbedder(), clock)
    yield s
    s.close()


@pytest.fixture
def private_store(private_db_url: str, clock: FixedClock) -> Iterator[MemoryStore]:
    """Like :func:`store`, on a database of this test alone (for cross-tenant operations)."""
    s = make_store(private_db_url, HashEmbedder(), clock)
    yield s
    s.close()


@pytest.fixture
def semantic_store(
    semantic_db_url: str, clock: FixedClock, real_embedder: Embedder
) -> Iterator[MemoryStore]:
    """A store with the real embedding model (its own database: a store never mixes models)."""
    s = make_store(semantic_db_url, real_embedder, clock)
    yield s
    s.close()


@pytest.fixture
def lexical_store(db_url: str, clock: FixedClock) -> Iterator[MemoryStore]:
    with pytest.warns(RuntimeWarning, match="lexical-only"):
        s = make_store(db_url, None, clock)
    yield s
    s.close()


@pytest.fixture
def aloop() -> Iterator[LoopThread]:
    """An event loop in a thread of its own, for one test (see ``tests/support/loop_thread.py``)."""
    loop = LoopThread()
    yield loop
    loop.close()


@pytest.fixture
def astore(aloop: LoopThread, db_url: str, clock: FixedClock) -> Iterator[AsyncMemoryStore]:
    """The asyncio twin of :func:`store` (same database, hash embedder, clock), living on
    ``aloop``: run its coroutines with ``aloop.run(...)``. (tests/db/integrations/ has its own
    ``astore``, on ``runner``.)"""
    s = aloop.run(open_async_store(db_url, HashEmbedder(), clock))
    yield s
    aloop.run(s.close())


# --- shared by the parts of one topic in different folders ---------------------------------------


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    """An asyncio runner for this test (modules that need one per module define their own)."""
    with asyncio.Runner() as r:
        yield r


@pytest.fixture(params=["run", "arun"])
def mode(request: pytest.FixtureRequest) -> str:
    """The engine tests: ``run``: the blocking engine on MemoryStore; ``arun``: the asyncio
    engine on an AsyncMemoryStore over the same database, with coroutine model and judge."""
    return str(request.param)


@pytest.fixture
def tokens(tmp_path: Path) -> AdminTokenFile:
    """The console tests: an admin token file of this test."""
    from harness.console import AdminTokenFile

    return AdminTokenFile(tmp_path / "console-tokens.json")


@pytest.fixture
def _no_model_requests() -> Iterator[None]:
    """The pydantic-ai tests (``pytestmark = pytest.mark.usefixtures(...)``): no request may
    reach a real model."""
    from pydantic_ai import models

    saved = models.ALLOW_MODEL_REQUESTS
    models.ALLOW_MODEL_REQUESTS = False
    yield
    models.ALLOW_MODEL_REQUESTS = saved
