"""The conversation archive in PostgreSQL: posting replaces atomically and embeds only what
changed, recall returns the caller's own dated passages (or nothing relevant), the reading
tools see only the caller's conversations, and forgetting, a deleted user and retention
remove text and vectors for good. Each case runs through both facades."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from bench.common import all_tenants
from harness.errors import InvalidInput, MemoryNotFound
from harness.memory.domain.conversations import NOTHING_RELEVANT
from tests.support.facades import KINDS, Facade, TickingClock, open_facade
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import T0


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []
        self.fail = False

    def embed(self, texts: Any) -> list[list[float]]:
        if self.fail:
            raise RuntimeError("model down")
        self.embedded += list(texts)
        return super().embed(texts)


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


@pytest.fixture(params=KINDS)
def facade(request: pytest.FixtureRequest, db_url: str, runner: asyncio.Runner) -> Iterator[Facade]:
    f = open_facade(request.param, db_url, CountingEmbedder(), runner, TickingClock(T0))
    yield f
    f.close()


def turn(seq: int, text: str, role: str = "user", minutes: int = 0) -> dict[str, Any]:
    return {
        "seq": seq,
        "ts": (T0 + timedelta(minutes=seq + minutes)).isoformat(),
        "role": role,
        "text": text,
    }


CHAT = [
    turn(0, "Can you review the numbers for the North site?"),
    turn(1, "North finished at 2,185 units/day, 91% of capacity.", "assistant"),
    turn(2, "We decided to go ahead with the N-11 upgrade once MT-4471 is closed."),
    turn(3, "Noted: N-11 waits on maintenance ticket MT-4471 for machine K-2.", "assistant"),
    turn(4, "Thanks, that is all for today."),
]


#: Another conversation of the same user: what a real archive holds around the one that matters.
SMALL_TALK = [
    turn(n, text, "user" if n % 2 == 0 else "assistant", minutes=600)
    for n, text in enumerate(
        [
            "Good morning, how was the weekend?",
            "It was fine, we went hiking by the lake.",
            "Can you suggest a recipe for dinner tonight?",
            "A tomato pasta with basil is quick to make.",
            "What is the weather like for Friday?",
            "Sunny in the morning, rain in the afternoon.",
            "Please draft a short thank-you note for the team.",
            "Thank you all for the hard work this month.",
            "Remind me about the dentist appointment next week.",
            "Noted: the dentist appointment is on Tuesday.",
        ]
    )
]


def stored_rows(facade: Facade, tenant: str, user: str) -> list[tuple[Any, ...]]:
    with all_tenants(facade.store) as conn:
        return list(
            conn.execute(
                sa.text(
                    "SELECT conversation_id, seq, text, embedding IS NOT NULL "
                    "FROM conversation_turns WHERE tenant = :t AND user_id = :u "
                    "ORDER BY conversation_id, seq"
                ),
                {"t": tenant, "u": user},
            )
        )


def test_reposting_an_unchanged_conversation_embeds_nothing(facade: Facade, tenant: str) -> None:
    embedder = facade.store.embedder
    first = facade.put_conversation(
        tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT[:3]
    )
    assert (first.turns, first.embedded, first.unchanged) == (3, 3, 0)
    embedder.embedded.clear()
    again = facade.put_conversation(
        tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT[:3]
    )
    assert (again.embedded, again.unchanged, embedder.embedded) == (0, 3, [])
    grown = facade.put_conversation(
        tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT
    )
    assert (grown.embedded, grown.unchanged) == (2, 3)
    assert embedder.embedded == [CHAT[3]["text"], CHAT[4]["text"]]


def test_turns_stored_while_the_model_failed_get_vectors_on_the_next_post(
    facade: Facade, tenant: str
) -> None:
    facade.store.embedder.fail = True
    down = facade.put_conversation(
        tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT[:2]
    )
    assert (down.turns, down.embedded) == (2, 0)
    assert [r[3] for r in stored_rows(facade, tenant, "alice")] == [False, False]
    facade.store.embedder.fail = False
    back = facade.put_conversation(
        tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT[:2]
    )
    assert back.embedded == 2
    assert [r[3] for r in stored_rows(facade, tenant, "alice")] == [True, True]


def test_posting_again_replaces_the_conversation(facade: Facade, tenant: str) -> None:
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT)
    edited = [CHAT[0], {**CHAT[1], "text": "North finished at 2,200 units/day."}]
    result = facade.put_conversation(
        tenant=tenant, user_id="alice", conversation_id="c1", turns=edited
    )
    assert (result.turns, result.embedded, result.unchanged, result.removed) == (2, 1, 1, 3)
    rows = stored_rows(facade, tenant, "alice")
    assert [(r[1], r[2]) for r in rows] == [(0, CHAT[0]["text"]), (1, edited[1]["text"])]
    assert all(r[3] for r in rows)
    (summary,) = facade.list_conversations(tenant=tenant, user_id="alice")
    assert summary.turns == 2 and summary.conversation_id == "c1"


@pytest.mark.parametrize(
    ("turns", "field"),
    [
        ([turn(1, "b"), turn(0, "a")], "turns.1.seq"),
        ([turn(0, "a"), turn(0, "b")], "turns.1.seq"),
        ([{**turn(0, "a"), "ts": "2026-10-08T10:00:00"}], "turns.0.ts"),
        ([turn(0, "x" * 20_001)], "turns.0.text"),
        ([{**turn(0, "a"), "role": "robot"}], "turns.0.role"),
    ],
)
def test_bad_turns_name_the_field_and_store_nothing(
    facade: Facade, tenant: str, turns: list[dict[str, Any]], field: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c1", turns=turns)
    assert err.value.fields == (field,)
    assert stored_rows(facade, tenant, "alice") == []


def test_a_bad_conversation_id_is_refused(facade: Facade, tenant: str) -> None:
    with pytest.raises(InvalidInput) as err:
        facade.put_conversation(
            tenant=tenant, user_id="alice", conversation_id="../etc", turns=CHAT
        )
    assert err.value.fields == ("conversation_id",)


def test_recall_returns_the_callers_dated_passage_with_neighbours(
    facade: Facade, tenant: str, other_tenant: str
) -> None:
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT)
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c0", turns=SMALL_TALK)
    bob = [turn(0, "Motor P-7 bearing noise, ticket MT-5120.")]
    facade.put_conversation(tenant=tenant, user_id="bob", conversation_id="c9", turns=bob)
    facade.put_conversation(tenant=other_tenant, user_id="alice", conversation_id="c9", turns=bob)
    result = facade.recall_conversations(
        tenant=tenant, user_id="alice", query="MT-4471 N-11", k=1, neighbours=1
    )
    assert not result.degraded and result.passages
    top = result.passages[0]
    assert top.conversation_id == "c1"
    hit = top.hit_seqs[0]
    assert hit in (2, 3)
    assert top.seqs == tuple(range(hit - 1, min(hit + 1, 4) + 1))
    assert f"{T0:%Y-%m-%d}" in result.text and "MT-4471" in result.text
    # isolation: bob's and the other tenant's MT-5120 are not alice's
    other = facade.recall_conversations(tenant=tenant, user_id="alice", query="MT-5120 P-7")
    assert all(p.conversation_id == "c1" for p in other.passages)
    assert "MT-5120" not in other.text


def test_recall_keeps_whole_passages_within_the_budget(facade: Facade, tenant: str) -> None:
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT)
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c0", turns=SMALL_TALK)
    full = facade.recall_conversations(
        tenant=tenant, user_id="alice", query="MT-4471", k=1, neighbours=1, threshold=0.0
    )
    size = len(full.passages[0].render())
    tight = facade.recall_conversations(
        tenant=tenant,
        user_id="alice",
        query="MT-4471",
        k=1,
        neighbours=1,
        budget_chars=size - 1,
        threshold=0.0,
    )
    assert tight.passages == () and tight.left_out == 1 and tight.text == NOTHING_RELEVANT


def test_a_user_without_conversations_gets_nothing_relevant(facade: Facade, tenant: str) -> None:
    result = facade.recall_conversations(tenant=tenant, user_id="nobody", query="N-11")
    assert result.nothing_relevant and result.text == NOTHING_RELEVANT


def test_reading_tools_see_only_the_callers_conversations(
    facade: Facade, tenant: str, other_tenant: str
) -> None:
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT)
    turns = facade.read_conversation(
        tenant=tenant, user_id="alice", conversation_id="c1", from_seq=1, to_seq=2
    )
    assert [t.seq for t in turns] == [1, 2]
    found = facade.find_in_conversation(
        tenant=tenant, user_id="alice", conversation_id="c1", text="mt-4471"
    )
    assert [t.seq for t in found] == [2, 3]
    for who, where in (("bob", tenant), ("alice", other_tenant)):
        with pytest.raises(MemoryNotFound):
            facade.read_conversation(tenant=where, user_id=who, conversation_id="c1")
        with pytest.raises(MemoryNotFound):
            facade.find_in_conversation(
                tenant=where, user_id=who, conversation_id="c1", text="N-11"
            )
        assert not facade.forget_conversation(tenant=where, user_id=who, conversation_id="c1")
    assert len(stored_rows(facade, tenant, "alice")) == len(CHAT)


def test_forget_and_a_deleted_user_remove_text_and_vectors(facade: Facade, tenant: str) -> None:
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT)
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="c2", turns=CHAT)
    assert facade.forget_conversation(tenant=tenant, user_id="alice", conversation_id="c1")
    assert not facade.forget_conversation(tenant=tenant, user_id="alice", conversation_id="c1")
    assert {r[0] for r in stored_rows(facade, tenant, "alice")} == {"c2"}
    assert facade.delete_user_conversations(tenant=tenant, user_id="alice") == 1
    assert stored_rows(facade, tenant, "alice") == []
    assert facade.list_conversations(tenant=tenant, user_id="alice") == []


def test_retention_purges_conversations_past_it(facade: Facade, tenant: str) -> None:
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="old", turns=CHAT)
    late = [{**t, "ts": (T0 + timedelta(days=40)).isoformat()} for t in CHAT[:1]]
    facade.put_conversation(tenant=tenant, user_id="alice", conversation_id="new", turns=late)
    now = T0 + timedelta(days=45)
    facade.purge_old_conversations(now)  # no retention set: kept
    assert len(facade.list_conversations(tenant=tenant, user_id="alice")) == 2
    facade.set_conversation_retention(tenant=tenant, days=30)
    assert facade.purge_old_conversations(now) >= 1
    assert [
        c.conversation_id for c in facade.list_conversations(tenant=tenant, user_id="alice")
    ] == ["new"]
    assert {r[0] for r in stored_rows(facade, tenant, "alice")} == {"new"}


def test_a_large_archive_ranks_by_the_index_and_still_finds_identifiers(
    db_url: str, tenant: str, runner: asyncio.Runner
) -> None:
    """Past ``large_pool`` turns the vectors come from the HNSW index and full text ranks their
    candidates plus the turns holding one of the query's identifiers."""
    from harness.memory import RecallConfig
    from harness.memory.store.sync import MemoryStore

    with MemoryStore.connect(
        db_url,
        embedder=CountingEmbedder(),
        migrate=False,
        check_model=False,
        recall=RecallConfig(large_pool=3),
    ) as big:
        big.put_conversation(tenant=tenant, user_id="alice", conversation_id="c1", turns=CHAT)
        big.put_conversation(tenant=tenant, user_id="alice", conversation_id="c0", turns=SMALL_TALK)
        result = big.recall_conversations(
            tenant=tenant, user_id="alice", query="MT-4471", k=2, threshold=0.0
        )
    assert [h.conversation_id for h in result.hits][:1] == ["c1"]
    assert result.hits[0].seq in (2, 3)
