"""Shared fixtures: one embedded PostgreSQL per test session, a fresh database per session,
a unique tenant per test. Set HARNESS_TEST_DATABASE_URL to use another server instead."""

from __future__ import annotations

import hashlib
import math
import os
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import settings as hypothesis_settings
from sqlalchemy.engine import make_url

from harness.clock import FixedClock
from harness.memory.embedding.embedder import Embedder, load_embedder
from harness.memory.store.aio import AsyncMemoryStore
from harness.memory.store.migrate import upgrade_to_head
from harness.memory.store.sync import MemoryStore, normalize_url
from harness.settings import Settings
from tests.loop_thread import LoopThread, open_async_store

# Speed is measured in bench/, not asserted by tests: a per-example deadline only turns a busy
# shared machine into a failure. Each test's own max_examples/stateful settings still apply.
hypothesis_settings.register_profile("harness", deadline=None)
hypothesis_settings.load_profile("harness")

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

# Under mutation testing (bench/mutation.py sets HARNESS_MUTATION) every mutant must meet the
# same examples, and a loaded machine must not turn a slow example into a "killed" mutant.
hypothesis_settings.register_profile(
    "mutation", deadline=None, derandomize=True, database=None, max_examples=30
)
if os.environ.get("HARNESS_MUTATION"):
    hypothesis_settings.load_profile("mutation")


class HashEmbedder:
    """Deterministic bag-of-words vectors: no model, still a real vector path."""

    def __init__(self, dim: int = 384, name: str = "test/hash-embedder"):
        self._dim = dim
        self._name = name

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self._dim
            for word in text.lower().split():
                h = int(
                    hashlib.blake2b(word.strip(".,?!:;").encode(), digest_size=8).hexdigest(), 16
                )
                vec[h % self._dim] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


def _server_url(tmp_root: Path) -> str:
    explicit = os.environ.get("HARNESS_TEST_DATABASE_URL")
    if explicit:
        return normalize_url(explicit)
    from harness.memory.store.embedded import embedded_url

    return normalize_url(embedded_url(tmp_root / "harness-home"))


def create_database(server_url: str, name: str, template: str | None = None) -> str:
    """Create a database on the server (empty, or a copy of ``template``); return its URL."""
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    copy = f' TEMPLATE "{template}"' if template else ""
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"{copy}'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _server_url(tmp_path_factory.mktemp("pg"))


@pytest.fixture(scope="session")
def db_url(server_url: str) -> str:
    url = create_database(server_url, f"harness_test_{os.getpid()}")
    engine = sa.create_engine(url)
    upgrade_to_head(engine)
    engine.dispose()
    return url


@pytest.fixture(scope="session")
def template_db_url(server_url: str) -> str:
    """A migrated database nothing connects to after migration: the template of
    :func:`private_db_url` (PostgreSQL copies a template only while it has no sessions)."""
    url = create_database(server_url, f"harness_tpl_{os.getpid()}")
    engine = sa.create_engine(url)
    upgrade_to_head(engine)
    engine.dispose()
    return url


@pytest.fixture
def private_db_url(server_url: str, template_db_url: str) -> str:
    """A migrated database of this test alone, for operations that span every tenant
    (reconcile, purge, status counts): nothing another test wrote can change their results."""
    template = make_url(template_db_url).database
    return create_database(server_url, f"harness_own_{uuid.uuid4().hex[:12]}", template=template)


@pytest.fixture
def fresh_db_url(server_url: str) -> str:
    """An empty, unmigrated database of its own."""
    return create_database(server_url, f"harness_fresh_{uuid.uuid4().hex[:12]}")


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


#: Fixtures that reach PostgreSQL or load the embedding model; tests using them (directly or
#: through another fixture) are marked ``db`` / ``model`` so ``pytest -m "not db"`` stays pure.
_DB_FIXTURES = frozenset({"server_url"})
_MODEL_FIXTURES = frozenset({"real_embedder"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & _DB_FIXTURES or item.get_closest_marker("subprocess"):
            item.add_marker(pytest.mark.db)
        if names & _MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)


#: A PostgreSQL URL nothing listens on: a real connection failure, fast.
UNREACHABLE_URL = "postgresql+psycopg://postgres@127.0.0.1:9/harness"


def unreachable_store() -> MemoryStore:
    """A store whose database cannot be reached (no migration, no model check)."""
    return MemoryStore.connect(
        UNREACHABLE_URL, embedder=HashEmbedder(), migrate=False, check_model=False
    )


def make_store(
    db_url: str, embedder: Embedder | None, clock: FixedClock | None = None, **settings: object
) -> MemoryStore:
    return MemoryStore.connect(
        db_url,
        embedder=embedder,
        clock=clock,
        migrate=False,
        check_model=False,
        settings=Settings.from_env(**settings),
    )  # type: ignore[arg-type]


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


@pytest.fixture(scope="session")
def semantic_db_url(server_url: str) -> str:
    """A migrated database for stores with the real model (vectors of one model per store)."""
    url = create_database(server_url, f"harness_semantic_{os.getpid()}")
    engine = sa.create_engine(url)
    upgrade_to_head(engine)
    engine.dispose()
    return url


@pytest.fixture
def aloop() -> Iterator[LoopThread]:
    """An event loop in a thread of its own, for one test (see ``tests/loop_thread.py``)."""
    loop = LoopThread()
    yield loop
    loop.close()


@pytest.fixture
def astore(aloop: LoopThread, db_url: str, clock: FixedClock) -> Iterator[AsyncMemoryStore]:
    """The asyncio twin of :func:`store` (same database, hash embedder, clock), living on
    ``aloop``: run its coroutines with ``aloop.run(...)``."""
    s = aloop.run(open_async_store(db_url, HashEmbedder(), clock))
    yield s
    aloop.run(s.close())
