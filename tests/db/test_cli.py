"""The harness-memory command line against the test database."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.store.migrate import head_revision

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # The CLI loads its own embedder from the environment; keep these runs lexical and fast:
    # no model variable, no hub, an empty fastembed cache.
    monkeypatch.delenv("HARNESS_EMBED_MODEL_PATH", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "empty-fastembed-cache"))
    monkeypatch.setenv("HARNESS_HOME", str(tmp_path / "home"))
    # Rich wraps at the terminal width: long database paths must not split the words asserted.
    monkeypatch.setenv("COLUMNS", "400")


def test_status_shows_revision_mode_counts_and_redacts(
    store: MemoryStore, tenant: str, db_url: str
) -> None:
    store.write(
        MemoryCandidate(tenant=tenant, scope="user", scope_id="a", kind="fact", content="a fact")
    )
    result = runner.invoke(app, ["status", "--url", db_url.replace("postgres:@", "postgres:pw@")])
    assert result.exit_code == 0, result.output
    assert f"schema revision {head_revision()}" in result.output
    assert "lexical-only" in result.output
    assert tenant in result.output
    assert "pw@" not in result.output and "***" in result.output


def test_init_is_idempotent(db_url: str) -> None:
    for _ in range(2):
        result = runner.invoke(app, ["init", "--url", db_url])
        assert result.exit_code == 0 and f"revision {head_revision()}" in result.output


def test_admin_flow(store: MemoryStore, tenant: str, db_url: str) -> None:
    m = store.write(
        MemoryCandidate(
            tenant=tenant,
            scope="platform",
            kind="constraint",
            content="Cite sources",
            source={"origin": "completion"},
        )
    )
    out = runner.invoke(app, ["admin", "pending", "--tenant", tenant, "--url", db_url]).output
    assert str(m.id) in out and "Cite sources" in out
    ok = runner.invoke(
        app, ["admin", "approve", str(m.id), "--by", "root", "--tenant", tenant, "--url", db_url]
    )
    assert ok.exit_code == 0 and "approved" in ok.output
    again = runner.invoke(
        app, ["admin", "approve", str(m.id), "--by", "root", "--tenant", tenant, "--url", db_url]
    )
    assert again.exit_code == 2 and "not pending" in again.output
    unknown = runner.invoke(
        app,
        [
            "admin",
            "reject",
            "00000000-0000-0000-0000-000000000001",
            "--by",
            "root",
            "--reason",
            "no",
            "--tenant",
            tenant,
            "--url",
            db_url,
        ],
    )
    assert unknown.exit_code == 2 and "has no memory with id" in unknown.output
    audit = runner.invoke(app, ["admin", "audit", "--tenant", tenant, "--url", db_url]).output
    assert "approved" in audit and "root" in audit


def test_reembed_without_model_is_a_clear_error(db_url: str) -> None:
    result = runner.invoke(app, ["reembed", "--url", db_url])
    assert result.exit_code == 2 and "needs an embedding model" in result.output


def test_status_shows_pending_cleanups(
    store: MemoryStore, tenant: str, db_url: str, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from product_adapter import ProductAdapter
    from tests.support.stores import unreachable_store

    down = unreachable_store()
    try:
        ProductAdapter(down, tmp_path / "home" / "cleanup-spool.jsonl").workflow_deleted(
            tenant, "wf-gone"
        )
    finally:
        down.close()
    out = runner.invoke(app, ["status", "--url", db_url]).output
    line = next(row for row in out.splitlines() if tenant in row)
    assert line.rstrip(" │").endswith("1")


def test_lessons_queue_retire_restore_and_history(
    store: MemoryStore, tenant: str, db_url: str
) -> None:
    def teach(run: str, **verdict: object) -> object:
        placed = verdict.pop("placed", ())
        return store.learn(
            {
                "tenant": tenant,
                "user_id": "alice",
                "run_id": run,
                "task": "Summarise the incident for the ops channel",
                "verdicts": [{"id": f"v-{run}", "accepted": False, **verdict}],
                "placed": placed,
            }
        )

    (lesson,) = teach("r1", feedback="Ops summaries are three lines at most.").written  # type: ignore[attr-defined]
    args = ["--tenant", tenant, "--url", db_url]
    empty = runner.invoke(app, ["lessons", "proposals", *args])
    assert empty.exit_code == 0 and "no lesson" in empty.output
    for run in ("r2", "r3"):
        teach(run, feedback="Not here.", misled=[str(lesson.id)], placed=[lesson.id])
    queue = runner.invoke(app, ["lessons", "proposals", *args])
    assert str(lesson.id) in queue.output and "misled 2" in queue.output
    retired = runner.invoke(app, ["lessons", "retire", str(lesson.id), "--by", "root", *args])
    assert retired.exit_code == 0 and "retired" in retired.output
    twice = runner.invoke(app, ["lessons", "retire", str(lesson.id), "--by", "root", *args])
    assert (
        twice.exit_code == 2 and "error:" in twice.output and "only active lessons" in twice.output
    )
    restored = runner.invoke(app, ["lessons", "restore", str(lesson.id), "--by", "root", *args])
    assert restored.exit_code == 0 and "restored" in restored.output
    record = runner.invoke(app, ["lessons", "history", str(lesson.id), *args]).output
    assert all(w in record for w in ("taught", "misled", "retired by root", "restored by root"))
    assert record.index("taught") < record.index("retired by root") < record.index("restored")


def test_distribute_on_a_server_without_citus_says_so_in_one_line_and_exits_2(
    db_url: str,
) -> None:
    result = CliRunner().invoke(app, ["distribute", "--url", db_url])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "no Citus extension" in lines[0], result.output
