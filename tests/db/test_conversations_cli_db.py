"""``harness-memory conversations``: a JSONL import in the seed's line format (idempotent),
recall, list, forget, and a malformed line refused with its line number."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from harness.cli import app
from harness.memory import MemoryStore
from tests.support.hash_embedder import HashEmbedder

runner = CliRunner()


def line(session: str, seq: int, role: str, text: str) -> str:
    return json.dumps(
        {
            "session_id": session,
            "turn_uuid": f"{session}-{seq}",
            "seq": seq,
            "ts": f"2026-10-0{3 + seq}T09:00:00Z",
            "role": role,
            "harness": "copilot",
            "blocks": [{"block_type": "text", "text": text}],
        }
    )


def reader(url: str) -> MemoryStore:
    """A store for reading back what the CLI did (the CLI's model is this database's; this
    store embeds nothing and records no model)."""
    return MemoryStore.connect(url, embedder=HashEmbedder(), migrate=False, check_model=False)


def test_import_is_idempotent_and_recall_lists_and_forgets(
    tenant: str, private_db_url: str, tmp_path: Path
) -> None:
    db_url = private_db_url
    path = tmp_path / "alice.funes.jsonl"
    path.write_text(
        "\n".join(
            [
                line("handover", 0, "user", "Night shift handover: K-2 is down, ticket MT-4471."),
                line("handover", 1, "assistant", "Noted MT-4471 for machine K-2."),
                line("lunch", 0, "user", "Where should we order lunch from today?"),
                line("lunch", 1, "assistant", "The noodle place on the corner is quick."),
            ]
        )
        + "\n"
    )
    args = ["--tenant", tenant, "--user", "alice", "--url", db_url]
    first = runner.invoke(app, ["conversations", "import", str(path), *args])
    assert first.exit_code == 0, first.output
    assert "imported 2 conversations, 4 turns embedded" in first.output
    again = runner.invoke(app, ["conversations", "import", str(path), *args])
    assert "imported 2 conversations, 0 turns embedded" in again.output
    with reader(db_url) as store:
        turns = store.read_conversation(tenant=tenant, user_id="alice", conversation_id="handover")
    assert [t.turn_id for t in turns] == ["handover-0", "handover-1"]
    listed = runner.invoke(app, ["conversations", "list", *args])
    assert "handover" in listed.output and "lunch" in listed.output
    forgot = runner.invoke(app, ["conversations", "forget", "lunch", *args])
    assert forgot.exit_code == 0 and "forgot lunch" in forgot.output
    assert [
        c.conversation_id for c in store.list_conversations(tenant=tenant, user_id="alice")
    ] == ["handover"]


def test_a_malformed_line_names_its_number_and_imports_nothing(
    tenant: str, private_db_url: str, tmp_path: Path
) -> None:
    db_url = private_db_url
    path = tmp_path / "bad.jsonl"
    path.write_text(line("s1", 0, "user", "fine") + "\n{not json\n")
    out = runner.invoke(
        app,
        ["conversations", "import", str(path), "--tenant", tenant, "--user", "a", "--url", db_url],
    )
    assert out.exit_code == 2 and "line 2" in out.output
    with reader(db_url) as store:
        assert store.list_conversations(tenant=tenant, user_id="a") == []
