"""The conversation archive's pure rules: turn validation (each field named), passages (hits
with their neighbours, merged per conversation), whole-passage budgets, the seed's JSONL."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.memory.domain.conversations import (
    ConversationHit,
    Passage,
    Turn,
    check_conversation_id,
    check_turns,
    parse_ts,
    passages_of,
    render_passages,
    turns_from_jsonl,
)

T0 = datetime(2026, 10, 8, 9, 0, tzinfo=UTC)


def raw(seq: int, text: str = "hello") -> dict[str, object]:
    return {
        "seq": seq,
        "ts": (T0 + timedelta(seconds=seq)).isoformat(),
        "role": "user",
        "text": text,
    }


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=30, unique=True))
def test_turns_in_increasing_seq_pass_and_get_default_ids(seqs: list[int]) -> None:
    turns = check_turns("c1", [raw(s) for s in sorted(seqs)])
    assert [t.seq for t in turns] == sorted(seqs)
    assert [t.turn_id for t in turns] == [f"c1-{s}" for s in sorted(seqs)]
    assert all(t.ts.tzinfo is UTC for t in turns)


@given(st.lists(st.integers(0, 50), min_size=2, max_size=20))
def test_turns_out_of_order_or_duplicated_name_the_first_bad_seq(seqs: list[int]) -> None:
    bad = next((n for n in range(1, len(seqs)) if seqs[n] <= seqs[n - 1]), None)
    if bad is None:
        check_turns("c1", [raw(s) for s in seqs])
        return
    with pytest.raises(InvalidInput) as err:
        check_turns("c1", [raw(s) for s in seqs])
    assert err.value.fields == (f"turns.{bad}.seq",)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"ts": "2026-10-08T09:00:00"}, "turns.0.ts"),
        ({"ts": "yesterday"}, "turns.0.ts"),
        ({"role": "admin"}, "turns.0.role"),
        ({"text": "x" * 20_001}, "turns.0.text"),
        ({"text": 5}, "turns.0.text"),
        ({"seq": -1}, "turns.0.seq"),
        ({"seq": True}, "turns.0.seq"),
        ({"turn_id": "a b"}, "turns.0.turn_id"),
        ({"colour": "red"}, "turns.0.colour"),
    ],
)
def test_a_bad_field_is_named(change: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        check_turns("c1", [{**raw(0), **change}])
    assert err.value.fields == (field,)


def test_duplicate_turn_ids_and_empty_lists_are_refused() -> None:
    with pytest.raises(InvalidInput) as err:
        check_turns("c1", [{**raw(0), "turn_id": "x"}, {**raw(1), "turn_id": "x"}])
    assert err.value.fields == ("turns.1.turn_id",)
    with pytest.raises(InvalidInput) as err:
        check_turns("c1", [])
    assert err.value.fields == ("turns",)


@given(st.text(max_size=140))
def test_conversation_ids_are_the_safe_alphabet(value: str) -> None:
    ok = 1 <= len(value) <= 128 and all(c.isascii() and (c.isalnum() or c in "_-") for c in value)
    if ok:
        assert check_conversation_id(value) == value
    else:
        with pytest.raises(InvalidInput):
            check_conversation_id(value)


def test_timestamps_need_a_zone_and_come_back_as_utc() -> None:
    assert parse_ts("2026-10-08T11:00:00+02:00", "ts") == T0
    assert parse_ts("2026-10-08T09:00:00Z", "ts") == T0
    with pytest.raises(InvalidInput):
        parse_ts("2026-10-08T09:00:00", "ts")


def _turns(n: int) -> list[Turn]:
    return [Turn(s, T0 + timedelta(minutes=s), "user", f"turn {s}", f"t{s}") for s in range(n)]


@given(
    st.lists(
        st.tuples(st.sampled_from("ab"), st.integers(0, 29)), min_size=1, max_size=8, unique=True
    ),
    st.integers(0, 3),
)
def test_every_hit_lands_in_one_passage_with_its_neighbours(
    picks: list[tuple[str, int]], neighbours: int
) -> None:
    hits = [
        ConversationHit(c, s, fused=1.0 / (n + 1), probability=0.9 - n / 100)
        for n, (c, s) in enumerate(picks)
    ]
    turns = {"a": _turns(30), "b": _turns(30)}
    passages = passages_of(hits, turns, {"a": T0, "b": T0}, neighbours)
    for hit in hits:
        holding = [
            p
            for p in passages
            if p.conversation_id == hit.conversation_id and hit.seq in p.hit_seqs
        ]
        assert len(holding) == 1
        p = holding[0]
        window = set(range(max(0, hit.seq - neighbours), min(29, hit.seq + neighbours) + 1))
        assert window <= set(p.seqs)
    for cid in "ab":
        spans = sorted((p.seqs[0], p.seqs[-1]) for p in passages if p.conversation_id == cid)
        assert all(b1 + 1 < a2 for (_, b1), (a2, _) in itertools.pairwise(spans))
        for p in passages:
            assert list(p.seqs) == list(range(p.seqs[0], p.seqs[-1] + 1))
    # passages come in the order of their best hit
    firsts = [min(picks.index((p.conversation_id, s)) for s in p.hit_seqs) for p in passages]
    assert firsts == sorted(firsts)


@given(st.integers(1, 2000), st.lists(st.integers(1, 6), min_size=1, max_size=6))
def test_render_keeps_whole_passages_within_the_budget(budget: int, sizes: list[int]) -> None:
    passages = [
        Passage(f"c{n}", T0, (0,), tuple(_turns(size)), fused=1.0, probability=0.5)
        for n, size in enumerate(sizes)
    ]
    kept, text = render_passages(passages, budget)
    assert len(text) <= budget
    for p in kept:
        assert p.render() in text
    for p in passages:
        if p not in kept:
            assert f"conversation {p.conversation_id} " not in text


def test_a_passage_is_dated_and_marks_its_hit() -> None:
    p = Passage("n11", T0, (1,), tuple(_turns(3)), fused=1.0, probability=0.5)
    lines = p.render().splitlines()
    assert lines[0] == "--- 2026-10-08 · conversation n11 (turns 0-2)"
    assert lines[2].startswith("*[1] user 2026-10-08 09:01: turn 1")
    assert lines[1].startswith(" [0]")


def test_the_seed_jsonl_becomes_turns_per_session() -> None:
    rows = [
        {
            "session_id": "s1",
            "turn_uuid": "u1",
            "seq": 0,
            "ts": "2026-10-08T09:00:00Z",
            "role": "user",
            "harness": "copilot",
            "blocks": [
                {"block_type": "text", "text": "a"},
                {"block_type": "image"},
                {"block_type": "text", "text": "b"},
            ],
        },
        {"session_id": "s2", "seq": 0, "ts": "2026-10-08T09:00:00Z", "role": "user", "blocks": []},
    ]
    out = turns_from_jsonl([json.dumps(r) for r in rows] + [""])
    assert out == {
        "s1": [
            {
                "seq": 0,
                "ts": "2026-10-08T09:00:00Z",
                "role": "user",
                "text": "a\nb",
                "turn_id": "u1",
            }
        ],
        "s2": [{"seq": 0, "ts": "2026-10-08T09:00:00Z", "role": "user", "text": ""}],
    }
    with pytest.raises(InvalidInput) as err:
        turns_from_jsonl([json.dumps(rows[0]), "{oops"])
    assert err.value.fields == ("line 2",)
    with pytest.raises(InvalidInput) as err:
        turns_from_jsonl([json.dumps({**rows[0], "session_id": "../x"})])
    assert err.value.fields == ("line 1.session_id",)
