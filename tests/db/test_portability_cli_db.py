"""`harness-memory export` and `import` end to end: stdout lines, a report on stderr, one
`error:` line and exit 2 for a bad line (nothing written), mem0's skipped records listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.app import app
from harness.memory import MemoryStore
from tests.unit.test_facades import cand


@pytest.fixture(autouse=True)
def lexical_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_EMBED_MODEL_PATH", raising=False)  # lexical-only, fast
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "empty-fastembed-cache"))
    monkeypatch.setenv("COLUMNS", "400")


def test_export_then_import_as_another_tenant(
    store: MemoryStore, db_url: str, tenant: str, other_tenant: str, tmp_path: Path
) -> None:
    store.write(cand(tenant, content="The office printer is on floor three"))
    store.write(cand(tenant, scope_id="bob", content="Bob likes tea"))
    out = tmp_path / "t.jsonl"
    exported = CliRunner().invoke(
        app,
        ["export", "--tenant", tenant, "--scope", "user:alice", "-o", str(out), "--url", db_url],
    )
    assert exported.exit_code == 0, exported.output
    lines = out.read_text().splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["header", "memory"]
    refused = CliRunner().invoke(
        app, ["import", str(out), "--tenant", other_tenant, "--url", db_url]
    )
    assert refused.exit_code == 2 and "--as-tenant" in refused.output
    done = CliRunner().invoke(
        app, ["import", str(out), "--as-tenant", other_tenant, "--url", db_url]
    )
    assert done.exit_code == 0, done.output
    assert f"imported into tenant {other_tenant}: 1 memories" in done.output
    again = CliRunner().invoke(
        app, ["import", str(out), "--as-tenant", other_tenant, "--url", db_url]
    )
    assert "0 memories (1 already there" in again.output


def test_a_bad_line_is_one_error_line_and_nothing_is_written(
    store: MemoryStore, db_url: str, tenant: str, other_tenant: str, tmp_path: Path
) -> None:
    store.write(cand(tenant, content="one"))
    store.write(cand(tenant, content="two"))
    lines: list[str] = []
    store.export_memories(tenant, lines.append)
    lines[2] = lines[2].replace('"status":"active"', '"status":"dormant"')
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(
        app, ["import", str(path), "--as-tenant", other_tenant, "--url", db_url]
    )
    assert result.exit_code == 2
    assert "error: line 3: status: " in result.output
    after: list[str] = []
    store.export_memories(other_tenant, after.append)
    assert after[1:] == []


def test_mem0_records_without_text_are_listed_with_their_line(
    store: MemoryStore, db_url: str, tenant: str, tmp_path: Path
) -> None:
    path = tmp_path / "mem0.jsonl"
    path.write_text(
        json.dumps({"id": "a", "memory": "Prefers window seats", "user_id": "alice"})
        + "\n"
        + json.dumps({"id": "b", "user_id": "alice", "hash": "h"})
        + "\n"
    )
    result = CliRunner().invoke(
        app, ["import", str(path), "--from", "mem0", "--tenant", tenant, "--url", db_url]
    )
    assert result.exit_code == 0, result.output
    assert "mem0 skipped line 2: no memory text" in result.output
    assert f"imported into tenant {tenant}: 1 memories" in result.output
    lines: list[str] = []
    store.export_memories(tenant, lines.append)
    (memory,) = [json.loads(x) for x in lines[1:]]
    assert (memory["scope"], memory["scope_id"], memory["content"]) == (
        "user",
        "alice",
        "Prefers window seats",
    )
