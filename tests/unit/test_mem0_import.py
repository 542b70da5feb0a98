"""mem0's export shape mapped onto the export format (pure): scopes, kinds, ids, what is
skipped (with its line) and what cannot be mapped (counted)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest

from harness.errors import MemoryRejected
from harness.memory.domain.export_format import MemoryRecord, parse_header, parse_line
from harness.memory.domain.mem0_import import MEM0_NAMESPACE, Mem0Mapping, mem0_export_lines
from harness.memory.domain.types import Kind, MemoryCandidate, Scope

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ID = "3c90c3cc-0d44-4b50-8888-8dd25736052a"


def mapped(lines: list[str], **kw: object) -> tuple[list[MemoryRecord], Mem0Mapping]:
    mapping = Mem0Mapping()
    out = list(mem0_export_lines(lines, tenant="acme", now=NOW, mapping=mapping, **kw))  # type: ignore[arg-type]
    assert parse_header(out[0]).tenant == "acme"
    records = [parse_line(text, n) for n, text in enumerate(out[1:], start=2)]
    return records, mapping  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("ids", "scope", "scope_id"),
    [
        ({"user_id": "alice", "run_id": "r-1", "agent_id": "bot"}, Scope.SESSION, "r-1"),
        ({"user_id": "alice", "agent_id": "bot"}, Scope.USER, "alice"),
        ({"agent_id": "bot"}, Scope.WORKFLOW, "bot"),
        ({}, Scope.PLATFORM, ""),
    ],
)
def test_ids_map_onto_the_narrowest_scope(ids: dict[str, str], scope: Scope, scope_id: str) -> None:
    records, _ = mapped([json.dumps({"id": ID, "memory": "likes tea", **ids})])
    assert (records[0].scope, records[0].scope_id) == (scope, scope_id)


def test_the_documented_get_all_document_maps_field_by_field() -> None:
    doc = {
        "results": [
            {
                "id": ID,
                "memory": "Prefers window seats",
                "user_id": "alice",
                "agent_id": "travel-bot",
                "hash": "abc",
                "metadata": {"kind": "preference", "source": "chat"},
                "categories": ["travel"],
                "created_at": "2024-07-20T01:02:03-07:00",
                "updated_at": "2024-07-21T01:02:03-07:00",
                "expiration_date": "2030-01-01",
            },
            {"id": "m-2", "memory": "   ", "user_id": "alice"},
            {"id": "m-3", "memory": "Deploys at noon", "metadata": {"kind": "gossip"}},
        ]
    }
    records, mapping = mapped(json.dumps(doc, indent=2).splitlines(keepends=True))
    first, third = records
    assert first.id == uuid.UUID(ID)
    assert first.kind is Kind.PREFERENCE and first.content == "Prefers window seats"
    assert first.created_at == datetime(2024, 7, 20, 8, 2, 3, tzinfo=UTC)
    assert first.expires_at == datetime(2030, 1, 1, tzinfo=UTC)
    assert third.kind is Kind.FACT and third.scope is Scope.PLATFORM
    assert third.id == uuid.uuid5(MEM0_NAMESPACE, "m-3")
    assert mapping.skipped == ["record 2: no memory text"]
    assert mapping.memories == 2
    assert mapping.unmapped == {
        "agent_id": 1,
        "hash": 1,
        "categories": 1,
        "updated_at": 1,
        "metadata": 1,
    }


def test_a_record_without_text_is_skipped_with_its_line_number() -> None:
    lines = [
        json.dumps({"id": ID, "memory": "one", "user_id": "alice"}),
        "",
        json.dumps({"id": "x", "user_id": "alice"}),
        "{broken",
    ]
    records, mapping = mapped(lines)
    assert len(records) == 1
    assert mapping.skipped == ["line 3: no memory text", "line 4: not a JSON object"]


def test_what_the_guard_refuses_is_skipped_with_its_line_and_rule() -> None:
    def guard(cand: MemoryCandidate) -> None:
        if "password" in cand.content:
            raise MemoryRejected("looks like a secret", rule="secret.password")

    lines = [
        json.dumps({"memory": "the password is hunter2", "user_id": "alice"}),
        json.dumps({"memory": "likes tea", "user_id": "alice"}),
    ]
    records, mapping = mapped(lines, check=guard)
    assert [r.content for r in records] == ["likes tea"]
    assert mapping.skipped == [
        "line 1: memory rejected by guard rule 'secret.password': looks like a secret"
    ]


def test_the_same_record_gets_the_same_id_twice() -> None:
    line = json.dumps({"memory": "likes tea", "user_id": "alice"})
    assert mapped([line])[0][0].id == mapped([line])[0][0].id
