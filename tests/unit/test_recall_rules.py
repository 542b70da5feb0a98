"""Properties of the pure recall assembly (SPEC sections 4 and 5), without a database."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import IncompleteRecall
from harness.memory.domain.recall import Candidate, RecallResult, assemble, render_item
from harness.memory.domain.types import SCOPE_BREADTH, Kind, Memory, Scope, Source, Status

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCOPE_IDS = {Scope.SESSION: "s", Scope.WORKFLOW: "w", Scope.USER: "u", Scope.PLATFORM: ""}


@st.composite
def memories(draw: st.DrawFn, n: int) -> Memory:
    scope = draw(st.sampled_from(list(Scope)))
    return Memory(
        id=uuid.UUID(int=n + 1),
        tenant="t",
        scope=scope,
        scope_id=SCOPE_IDS[scope],
        kind=draw(st.sampled_from(list(Kind))),
        key=draw(st.sampled_from([None, "a", "b", "c"])),
        content=draw(st.text(alphabet="abc xyz\n", min_size=1, max_size=120)),
        context=None,
        priority=draw(st.integers(-2, 2)),
        status=Status.ACTIVE,
        source=Source(),
        created_at=T0 + timedelta(minutes=draw(st.integers(0, 5))),
        expires_at=None,
        supersedes=None,
        superseded_by=None,
        fingerprint="f",
    )


@st.composite
def candidate_lists(draw: st.DrawFn) -> list[Candidate]:
    size = draw(st.integers(0, 14))
    return [
        Candidate(draw(memories(i)), draw(st.floats(0, 1, allow_nan=False))) for i in range(size)
    ]


limits = st.fixed_dictionaries(
    {
        "budget_chars": st.integers(0, 900),
        "max_items": st.integers(0, 15),
        "max_item_chars": st.integers(1, 200),
    }
)


def beats(a: Memory, b: Memory) -> bool:
    """SPEC section 4, stated directly: does ``a`` win over ``b`` in one key group?"""
    a_con, b_con = a.kind is Kind.CONSTRAINT, b.kind is Kind.CONSTRAINT
    if a_con != b_con:
        return a_con
    ba, bb = SCOPE_BREADTH[a.scope], SCOPE_BREADTH[b.scope]
    if ba != bb:
        return ba > bb if a_con else ba < bb
    if a.priority != b.priority:
        return a.priority > b.priority
    if a.created_at != b.created_at:
        return a.created_at > b.created_at
    return str(a.id) < str(b.id)


def ids(result: RecallResult) -> list[uuid.UUID]:
    return [i.memory.id for i in result.items]


@given(candidate_lists(), limits)
def test_every_candidate_is_included_or_omitted_once(cands: list[Candidate], lim: dict) -> None:
    r = assemble(cands, **lim)
    accounted = ids(r) + [o.memory_id for o in r.omitted]
    assert sorted(accounted) == sorted(c.memory.id for c in cands)


@given(candidate_lists(), limits)
def test_key_group_winner_follows_precedence(cands: list[Candidate], lim: dict) -> None:
    r = assemble(cands, **lim)
    by_id = {c.memory.id: c.memory for c in cands}
    conflicts = [o for o in r.omitted if o.reason == "conflict"]
    winners = {o.winner_id for o in conflicts}
    for o in conflicts:
        loser, winner = by_id[o.memory_id], by_id[o.winner_id]  # type: ignore[index]
        assert loser.key == winner.key
        assert beats(winner, loser)
    for key in {m.key for m in by_id.values() if m.key}:
        group = [m for m in by_id.values() if m.key == key]
        champion = [m for m in group if all(m is x or beats(m, x) for x in group)]
        assert len(champion) == 1
        if len(group) > 1:
            assert champion[0].id in winners
        # the champion is never reported as a conflict loser
        assert champion[0].id not in {o.memory_id for o in conflicts}


@given(candidate_lists(), limits)
def test_platform_constraint_is_never_overridden(cands: list[Candidate], lim: dict) -> None:
    r = assemble(cands, **lim)
    for o in r.omitted:
        if o.reason != "conflict":
            continue
        loser = next(c.memory for c in cands if c.memory.id == o.memory_id)
        winner = next(c.memory for c in cands if c.memory.id == o.winner_id)
        if loser.scope is Scope.PLATFORM and loser.kind is Kind.CONSTRAINT:
            assert winner.scope is Scope.PLATFORM and winner.kind is Kind.CONSTRAINT


@given(candidate_lists(), limits)
def test_text_fits_budget_and_items_are_whole(cands: list[Candidate], lim: dict) -> None:
    r = assemble(cands, **lim)
    assert len(r.text) <= lim["budget_chars"]
    assert len(r.items) <= lim["max_items"]
    for item in r.items:
        assert item.text == render_item(item.memory)
        assert item.text in r.text
        assert len(item.text) <= lim["max_item_chars"]
    assert r.text == "\n".join(i.text for i in r.items)
    for o in r.omitted:
        if o.reason == "item_too_long":
            assert o.chars > lim["max_item_chars"]


@given(candidate_lists(), limits)
def test_constraints_come_first_broadest_first(cands: list[Candidate], lim: dict) -> None:
    r = assemble(cands, **lim)
    kinds = [i.memory.kind is Kind.CONSTRAINT for i in r.items]
    assert kinds == sorted(kinds, reverse=True)
    breadths = [SCOPE_BREADTH[i.memory.scope] for i in r.items if i.memory.kind is Kind.CONSTRAINT]
    assert breadths == sorted(breadths, reverse=True)


@given(candidate_lists(), limits)
def test_budget_omits_only_what_does_not_fit(cands: list[Candidate], lim: dict) -> None:
    r = assemble(cands, **lim)
    room_left = lim["budget_chars"] - len(r.text)
    for o in r.omitted:
        if o.reason == "budget":
            # it did not fit even in what is left now (plus at most one separator)
            assert o.chars + 1 > room_left


def test_budget_skips_a_big_item_and_keeps_trying() -> None:
    big = _mem(1, Scope.USER, Kind.PREFERENCE, None, "b" * 120, prio=5)
    small = _mem(2, Scope.USER, Kind.PREFERENCE, None, "small one", prio=1)
    r = assemble(
        [Candidate(big), Candidate(small)], budget_chars=80, max_items=5, max_item_chars=500
    )
    assert ids(r) == [small.id]
    assert [(o.memory_id, o.reason) for o in r.omitted] == [(big.id, "budget")]


@given(candidate_lists(), limits, st.integers(1, 500))
def test_raising_budget_drops_nothing_unless_it_admits_something_ranked_higher(
    cands: list[Candidate], lim: dict, extra: int
) -> None:
    small = assemble(cands, **lim)
    big = assemble(cands, **{**lim, "budget_chars": lim["budget_chars"] + extra})
    order_big = ids(big)
    small_ids, big_ids = set(ids(small)), set(order_big)
    full_order = [i.memory.id for i in assemble(cands, **{**lim, "budget_chars": 10**6}).items]
    rank = {mid: n for n, mid in enumerate(full_order)}
    for dropped in small_ids - big_ids:
        newly = [m for m in big_ids - small_ids if rank[m] < rank[dropped]]
        assert newly, "an included item was dropped without a higher-ranked item taking its room"
    assert len(big.text) >= len(small.text) or big_ids != small_ids


@given(candidate_lists(), limits)
def test_budget_monotone_when_everything_fits(cands: list[Candidate], lim: dict) -> None:
    huge = assemble(cands, **{**lim, "budget_chars": 10**6})
    exact = assemble(cands, **{**lim, "budget_chars": len(huge.text)})
    assert ids(exact) == ids(huge)


@settings(max_examples=60)
@given(candidate_lists(), limits, st.randoms(use_true_random=False))
def test_result_does_not_depend_on_input_order(cands: list[Candidate], lim: dict, rnd) -> None:
    shuffled = list(cands)
    rnd.shuffle(shuffled)
    a, b = assemble(cands, **lim), assemble(shuffled, **lim)
    assert a.text == b.text
    assert ids(a) == ids(b)
    assert sorted(a.omitted, key=lambda o: str(o.memory_id)) == sorted(
        b.omitted, key=lambda o: str(o.memory_id)
    )


@given(candidate_lists(), limits)
def test_complete_flag_tracks_placed_constraints(cands: list[Candidate], lim: dict) -> None:
    r = assemble(cands, **lim)
    by_id = {c.memory.id: c.memory for c in cands}
    unplaced = [
        o
        for o in r.omitted
        if o.reason != "conflict" and by_id[o.memory_id].kind is Kind.CONSTRAINT
    ]
    assert r.complete == (not unplaced)


def _mem(n: int, scope: Scope, kind: Kind, key: str | None, content: str, prio: int = 0) -> Memory:
    return Memory(
        id=uuid.UUID(int=n),
        tenant="t",
        scope=scope,
        scope_id=SCOPE_IDS[scope],
        kind=kind,
        key=key,
        content=content,
        context=None,
        priority=prio,
        status=Status.ACTIVE,
        source=Source(),
        created_at=T0,
        expires_at=None,
        supersedes=None,
        superseded_by=None,
        fingerprint="f",
    )


def test_spec_example_workflow_summary_beats_user_detail() -> None:
    user = _mem(1, Scope.USER, Kind.PREFERENCE, "answer.length", "Prefers detailed answers")
    wf = _mem(2, Scope.WORKFLOW, Kind.PREFERENCE, "answer.length", "Three-line summary")
    r = assemble(
        [Candidate(user), Candidate(wf)], budget_chars=500, max_items=5, max_item_chars=200
    )
    assert ids(r) == [wf.id]
    assert r.omitted[0].reason == "conflict" and r.omitted[0].winner_id == wf.id


def test_platform_constraint_beats_session_preference_and_user_constraint() -> None:
    plat = _mem(1, Scope.PLATFORM, Kind.CONSTRAINT, "pii", "Never output e-mail addresses")
    user = _mem(2, Scope.USER, Kind.CONSTRAINT, "pii", "Mask e-mail addresses", prio=9)
    sess = _mem(3, Scope.SESSION, Kind.PREFERENCE, "pii", "Show e-mail addresses", prio=9)
    r = assemble(
        [Candidate(sess), Candidate(user), Candidate(plat)],
        budget_chars=500,
        max_items=5,
        max_item_chars=200,
    )
    assert ids(r) == [plat.id]


def test_unplaceable_constraint_is_incomplete_and_strict_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="harness.memory.domain.recall")
    big = _mem(1, Scope.PLATFORM, Kind.CONSTRAINT, None, "x" * 300)
    small = _mem(2, Scope.USER, Kind.PREFERENCE, None, "short")
    r = assemble(
        [Candidate(big), Candidate(small)], budget_chars=100, max_items=5, max_item_chars=1000
    )
    assert not r.complete and ids(r) == [small.id]
    assert r.omitted[0].reason == "budget" and r.omitted[0].chars == len(render_item(big))
    assert "constraint" in caplog.text and "INCOMPLETE" in r.explain()
    with pytest.raises(IncompleteRecall):
        assemble([Candidate(big)], budget_chars=100, max_items=5, max_item_chars=1000, strict=True)


def test_rendering_labels_scope_kind_and_source() -> None:
    text = render_item(_mem(1, Scope.PLATFORM, Kind.CONSTRAINT, None, "Cite sources"))
    assert text.startswith("- [platform constraint | api | 2026-01-01]")
    assert text.endswith("Cite sources")
