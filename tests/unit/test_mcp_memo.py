"""RecallSet memos over MCP: handles work in stateless and handshake mode, per caller only.

Here the tests that need no database, model or other process; the others are in
tests/db/test_mcp_memo_db.py, tests/system/test_mcp_memo_system.py."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.mcp_server import MemoLimits
from harness.mcp_server.memos import MemoExpired, MemoNotFound, MemoOwner, RecallSets, token_key
from harness.memory import Caller

ALICE = MemoOwner(Caller("t1", "alice"), token_key("a" * 64))
BOB = MemoOwner(Caller("t1", "bob"), token_key("b" * 64))
ALICE_ELSEWHERE = MemoOwner(Caller("t2", "alice"), token_key("c" * 64))
#: alice of t1 with a second bearer token
ALICE_AGAIN = MemoOwner(Caller("t1", "alice"), token_key("d" * 64))
OWNERS = (ALICE, BOB, ALICE_ELSEWHERE, ALICE_AGAIN)


# --- the registry alone (no server, no database) ------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_handles_are_long_random_and_distinct() -> None:
    memos = RecallSets()
    handles = {memos.open(ALICE)[0] for _ in range(200)}
    assert len(handles) == 200
    for handle in handles:
        assert re.fullmatch(r"memo_[A-Za-z0-9_-]{22}", handle)  # 16 random bytes


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(OWNERS), st.booleans()), max_size=40))
def test_a_handle_opens_only_for_its_caller_and_token(ops: list[tuple[MemoOwner, bool]]) -> None:
    memos = RecallSets(MemoLimits(max_memos_per_caller=3))
    owners: dict[str, MemoOwner] = {}
    for who, opening in ops:
        if opening or not owners:
            handle, rs = memos.open(who)
            rs.add(f"{who.caller.tenant}/{who.caller.user_id} {handle}")
            owners[handle] = who
        for handle, owner in owners.items():
            for other in OWNERS:
                if other == owner:
                    try:
                        notes = memos.get(handle, other).items()
                    except MemoExpired:
                        continue  # closed by the cap: allowed for the owner only
                    assert [n.content for n in notes] == [
                        f"{owner.caller.tenant}/{owner.caller.user_id} {handle}"
                    ]
                else:
                    with pytest.raises(MemoNotFound):
                        memos.get(handle, other)
        assert memos.open_count(who) <= 3


def test_idle_memos_expire_and_say_so() -> None:
    clock = Clock()
    memos = RecallSets(MemoLimits(idle_s=60), clock=clock)
    old, rs = memos.open(ALICE)
    rs.add("note")
    live, _ = memos.open(ALICE)
    clock.now = 50
    memos.get(live, ALICE)  # use refreshes the timer
    clock.now = 100
    with pytest.raises(MemoExpired, match="idle"):
        memos.get(old, ALICE)
    assert memos.get(live, ALICE) is not None
    with pytest.raises(MemoNotFound):  # another caller is told nothing about it
        memos.get(old, BOB)
    clock.now = 1000
    assert memos.sweep() == 0
    assert rs.items() == []  # the notes are gone, not just unreachable


def test_cap_per_caller_drops_least_recently_used() -> None:
    memos = RecallSets(MemoLimits(max_memos_per_caller=2))
    first, _ = memos.open(ALICE)
    second, _ = memos.open(ALICE)
    memos.get(first, ALICE)
    bobs, _ = memos.open(BOB)
    third, _ = memos.open(ALICE)
    with pytest.raises(MemoExpired, match="more than 2"):
        memos.get(second, ALICE)
    assert memos.get(first, ALICE) is not None and memos.get(third, ALICE) is not None
    assert memos.get(bobs, BOB) is not None  # one caller's cap never closes another's memos
    assert memos.open_count() == 3
    memos.discard(third, ALICE)
    memos.discard(third, ALICE)  # idempotent
    with pytest.raises(MemoNotFound):
        memos.get(third, ALICE)


def test_the_token_key_is_a_labelled_hash_of_the_digest() -> None:
    """A memo keeps neither the token nor the digest the token file checks it against."""
    digest = "e" * 64
    assert re.fullmatch(r"[0-9a-f]{64}", token_key(digest))
    assert token_key(digest) not in (digest, token_key("f" * 64))
