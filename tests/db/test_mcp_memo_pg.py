"""RecallSet memos in PostgreSQL (``PostgresMemoBook``): the in-process book's rules, shared.

The registry checks of ``test_mcp_memo`` run on both books; a state machine drives both with
the same calls and compares every answer; the rest is what only the database version has:
hashed handles, row locks across connections, the per-caller cap under concurrent opens, row-
level security, committed idle ends, and the sweep of abandoned rows.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    rule,
    run_state_machine_as_test,
)

from bench.common import all_tenants, as_tenant
from harness.errors import MemoryNotFound
from harness.mcp_server import MemoLimits
from harness.mcp_server.memo_book import LocalMemoBook, MemoBook
from harness.mcp_server.memo_pg import PostgresMemoBook
from harness.mcp_server.memos import MemoExpired, MemoNotFound, MemoOwner, RecallSets, token_key
from harness.memory import AsyncMemoryStore, Caller
from harness.recallset import AddResult, RecallSet
from tests.support.hash_embedder import HashEmbedder
from tests.support.loop_thread import LoopThread, open_async_store

T = TypeVar("T")
BOOKS = ["local", "postgres"]


class Clock:
    """A settable clock both books read (Unix-like seconds, advanced by hand)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


Who = Caller | MemoOwner


def owner(who: Who) -> MemoOwner:
    """A test's caller as a memo owner: a bare caller holds no token (as over stdio)."""
    return who if isinstance(who, MemoOwner) else MemoOwner.local(who)


class Book:
    """A memo book driven from the test thread (its coroutines run on the store's loop)."""

    def __init__(self, book: MemoBook, aloop: LoopThread) -> None:
        self.book = book
        self.aloop = aloop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.aloop.run(coro)

    def open(self, who: Who) -> str:
        return self.run(self.book.open(owner(who)))

    def use(self, handle: str, who: Who, action: Callable[[RecallSet], T]) -> T:
        return self.run(self.book.use(handle, owner(who), action))

    def notes(self, handle: str, who: Who) -> list[str]:
        return self.use(handle, who, lambda rs: [item.content for item in rs.items()])

    def discard(self, handle: str, who: Who) -> None:
        self.run(self.book.discard(handle, owner(who)))

    def count(self, who: Who | None = None) -> int:
        return self.run(self.book.open_count(None if who is None else owner(who)))


@pytest.fixture
def make_book(
    request: pytest.FixtureRequest, aloop: LoopThread, astore: AsyncMemoryStore
) -> Callable[..., Book]:
    """Builds the book the test is parametrized with: in process, or in PostgreSQL."""

    def make(limits: MemoLimits | None = None, clock: Callable[[], float] | None = None) -> Book:
        limits = limits or MemoLimits()
        clock = clock or Clock()
        if request.param == "local":
            return Book(LocalMemoBook(RecallSets(limits, clock)), aloop)
        return Book(PostgresMemoBook(astore, limits, clock), aloop)

    return make


def adding(content: str, **options: Any) -> Callable[[RecallSet], AddResult]:
    """An action adding one note."""
    return lambda rs: rs.add(content, **options)


def callers(tenant: str, other_tenant: str) -> tuple[Caller, Caller, Caller]:
    return Caller(tenant, "alice"), Caller(tenant, "bob"), Caller(other_tenant, "alice")


# --- the registry checks, on both books -----------------------------------------------------


@pytest.mark.parametrize("make_book", BOOKS, indirect=True)
def test_handles_are_long_random_and_distinct(make_book: Callable[..., Book], tenant: str) -> None:
    book = make_book(MemoLimits(max_memos_per_caller=100))
    handles = {book.open(Caller(tenant, "alice")) for _ in range(40)}
    assert len(handles) == 40
    for handle in handles:
        assert re.fullmatch(r"memo_[A-Za-z0-9_-]{22}", handle)  # 16 random bytes


@pytest.mark.parametrize("make_book", BOOKS, indirect=True)
def test_a_handle_opens_only_for_its_caller(
    make_book: Callable[..., Book], tenant: str, other_tenant: str
) -> None:
    book = make_book()
    alice, bob, alice_elsewhere = callers(tenant, other_tenant)
    strangers = [
        bob,
        alice_elsewhere,  # the same user in another tenant
        Caller(tenant, "alice", "wf-1"),  # the same user pinned to a workflow
        Caller(tenant, "alice", None, "session-1"),  # ... or to a session
    ]
    handle = book.open(alice)
    book.use(handle, alice, lambda rs: rs.add("alice's note"))
    for stranger in strangers:
        with pytest.raises(MemoNotFound, match=f"no memo {handle!r} for this caller"):
            book.use(handle, stranger, lambda rs: rs.add("written by a stranger"))
        book.discard(handle, stranger)  # not theirs: nothing happens
    with pytest.raises(MemoNotFound):
        book.use("memo_" + "A" * 22, alice, len)  # made up
    assert book.notes(handle, alice) == ["alice's note"]
    assert [book.count(who) for who in (alice, *strangers)] == [1, 0, 0, 0, 0]


@pytest.mark.parametrize("make_book", BOOKS, indirect=True)
def test_a_memo_opens_only_for_the_token_that_opened_it(
    make_book: Callable[..., Book], tenant: str
) -> None:
    """Two tokens of the same tenant and user are two owners: the second reads, changes,
    discards and counts none of the first's memos (issue 31, point 4)."""
    book = make_book()
    alice = Caller(tenant, "alice")
    first, second = MemoOwner(alice, token_key("1" * 64)), MemoOwner(alice, token_key("2" * 64))
    handle = book.open(first)
    book.use(handle, first, lambda rs: rs.add("first token's note"))
    for stranger in (second, MemoOwner.local(alice)):
        with pytest.raises(MemoNotFound, match=f"no memo {handle!r} for this caller"):
            book.use(handle, stranger, lambda rs: rs.overview())
        book.discard(handle, stranger)  # not theirs: nothing happens
        assert book.count(stranger) == 0
    assert book.notes(handle, first) == ["first token's note"]
    theirs = book.open(second)
    with pytest.raises(MemoNotFound):
        book.use(theirs, first, len)
    assert (book.count(first), book.count(second)) == (1, 1)


@pytest.mark.parametrize("make_book", BOOKS, indirect=True)
def test_idle_memos_expire_and_say_so(make_book: Callable[..., Book], tenant: str) -> None:
    clock = Clock(0.0)
    book = make_book(MemoLimits(idle_s=60), clock)
    alice, bob = Caller(tenant, "alice"), Caller(tenant, "bob")
    old = book.open(alice)
    book.use(old, alice, lambda rs: rs.add("note"))
    live = book.open(alice)
    clock.now = 50
    book.notes(live, alice)  # use refreshes the timer
    clock.now = 100
    with pytest.raises(MemoExpired, match=r"has ended \(idle for more than 60 s, it expired\)"):
        book.notes(old, alice)
    assert book.notes(live, alice) == []
    with pytest.raises(MemoNotFound):  # another caller is told nothing about it
        book.notes(old, bob)
    clock.now = 160  # exactly idle_s after the last use: not idle yet
    assert book.notes(live, alice) == []
    clock.now = 220.5
    with pytest.raises(MemoExpired, match="idle"):
        book.notes(live, alice)
    assert book.count(alice) == 0


@pytest.mark.parametrize("make_book", BOOKS, indirect=True)
def test_cap_per_caller_drops_least_recently_used(
    make_book: Callable[..., Book], tenant: str
) -> None:
    book = make_book(MemoLimits(max_memos_per_caller=2))
    alice, bob = Caller(tenant, "alice"), Caller(tenant, "bob")
    first = book.open(alice)
    second = book.open(alice)
    book.notes(first, alice)
    bobs = book.open(bob)
    third = book.open(alice)
    with pytest.raises(MemoExpired, match=r"more than 2 memos were open \(least recently used"):
        book.notes(second, alice)
    assert book.notes(first, alice) == [] and book.notes(third, alice) == []
    assert book.notes(bobs, bob) == []  # one caller's cap never closes another's memos
    assert (book.count(alice), book.count(bob)) == (2, 1)
    book.discard(third, alice)
    book.discard(third, alice)  # idempotent
    with pytest.raises(MemoNotFound):
        book.notes(third, alice)
    book.discard(second, alice)  # an ended memo keeps saying why
    with pytest.raises(MemoExpired):
        book.notes(second, alice)
    assert book.count(alice) == 1


@pytest.mark.parametrize("make_book", BOOKS, indirect=True)
def test_a_use_whose_action_fails_still_restarts_the_timer(
    make_book: Callable[..., Book], tenant: str
) -> None:
    clock = Clock(0.0)
    book = make_book(MemoLimits(idle_s=60), clock)
    alice = Caller(tenant, "alice")
    handle = book.open(alice)
    clock.now = 50
    with pytest.raises(MemoryNotFound, match="r9"):
        book.use(handle, alice, lambda rs: rs.mark("r9", "keep"))
    clock.now = 100  # 50 s after the failed use, 100 s after the open
    assert book.notes(handle, alice) == []


@pytest.mark.parametrize("make_book", BOOKS, indirect=True)
def test_an_idle_end_can_push_out_an_older_one(make_book: Callable[..., Book], tenant: str) -> None:
    clock = Clock(0.0)
    book = make_book(MemoLimits(idle_s=60, max_ended_per_caller=1), clock)
    alice = Caller(tenant, "alice")
    older = book.open(alice)
    clock.now = 10
    newer = book.open(alice)
    clock.now = 100  # both idle: they end together, least recently used first
    with pytest.raises(MemoExpired, match="idle"):
        book.notes(newer, alice)
    with pytest.raises(MemoNotFound):  # only one end is remembered: the later one
        book.notes(older, alice)


@pytest.mark.parametrize("make_book", BOOKS, indirect=True)
def test_only_the_last_ends_are_remembered(make_book: Callable[..., Book], tenant: str) -> None:
    book = make_book(MemoLimits(max_memos_per_caller=1, max_ended_per_caller=2))
    alice = Caller(tenant, "alice")
    handles = [book.open(alice) for _ in range(4)]  # each open closes the one before
    with pytest.raises(MemoNotFound):  # its end was forgotten: the oldest goes first
        book.notes(handles[0], alice)
    for ended in handles[1:3]:
        with pytest.raises(MemoExpired):
            book.notes(ended, alice)
    assert book.notes(handles[3], alice) == []


@pytest.mark.parametrize("make_book", BOOKS, indirect=True)
def test_notes_round_trip_whatever_they_hold(make_book: Callable[..., Book], tenant: str) -> None:
    """NUL and other text PostgreSQL cannot keep as such (the state is stored escaped)."""
    book = make_book(MemoLimits(max_items=3))
    alice = Caller(tenant, "alice")
    handle = book.open(alice)
    texts = ["nul \x00 inside", 'quotes " and \\ and 한국어', "x" * 9000]
    for text in texts:
        book.use(handle, alice, adding(text, title="t\x00"))
    assert book.notes(handle, alice) == texts
    evicted = book.use(handle, alice, lambda rs: rs.add("fourth", mark="keep")).evicted
    assert [item.content for item in evicted] == [texts[0]]


# --- both books, the same random calls --------------------------------------------------------

LIMITS = MemoLimits(max_memos_per_caller=2, max_items=3, idle_s=10.0, max_ended_per_caller=1)
CONTENTS = st.sampled_from(["a", "A ", "b", "c\x00", "d", "lone \ud800 surrogate"])
#: How long the clock moves before a call (idle_s is 10: both sides of the boundary).
WAIT = st.sampled_from([0.0, 0.0, 0.5, 3.0, 9.5, 10.0, 10.5])
#: Whose call: the memo's owner (mostly), one of the four owners, or a made-up handle.
WHO = st.sampled_from([None, None, None, None, 0, 1, 2, 3, "made up"])
#: One call on a memo: (what, content, item number, mark); each kind uses what it needs.
ACTIONS = st.tuples(
    st.sampled_from(["add", "add", "mark", "read", "overview", "discard memo"]),
    CONTENTS,
    st.integers(1, 6),
    st.sampled_from(["keep", "check", "discard"]),
)


def _action(spec: tuple[str, str, int, str]) -> Callable[[RecallSet], object]:
    what, content, number, mark = spec

    def act(rs: RecallSet) -> object:
        if what == "add":
            return rs.add(content, mark=mark)
        if what == "mark":
            return rs.mark(f"r{number}", mark)
        if what == "read":
            return rs.read(f"r{number}")
        return rs.overview()

    return act


def test_both_books_answer_every_call_alike(aloop: LoopThread, astore: AsyncMemoryStore) -> None:
    class Twins(RuleBasedStateMachine):
        memos = Bundle("memos")

        def __init__(self) -> None:
            super().__init__()
            tenant = f"t-{uuid.uuid4().hex[:10]}"
            self.callers: list[Who] = [
                Caller(tenant, "alice"),
                Caller(tenant, "bob"),
                Caller(tenant + "-b", "alice", "wf"),
                # alice again, with a bearer token of her own
                MemoOwner(Caller(tenant, "alice"), token_key("b" * 64)),
            ]
            self.clock = Clock(0.0)
            self.local = Book(LocalMemoBook(RecallSets(LIMITS, self.clock)), aloop)
            self.pg = Book(PostgresMemoBook(astore, LIMITS, self.clock, retention_s=1e9), aloop)
            self.last_used: dict[tuple[str, str], float] = {}

        def _both(
            self, call: Callable[[Book, str], object], memo: tuple[str, str]
        ) -> tuple[object, object]:
            answers: list[tuple[object, object]] = []
            for book, handle in ((self.local, memo[0]), (self.pg, memo[1])):
                try:
                    answers.append(("ok", call(book, handle)))
                except Exception as exc:  # compare the errors, handles left out
                    answers.append((type(exc), str(exc).replace(handle, "HANDLE")))
            assert answers[0] == answers[1]
            return answers[0]

        @rule(target=memos, who=st.integers(0, 3), wait=WAIT)
        def open(self, who: int, wait: float) -> tuple[str, str, int]:
            self.clock.now += wait
            caller = self.callers[who]
            memo = (self.local.open(caller), self.pg.open(caller))
            self.last_used[memo] = self.clock.now
            return (*memo, who)

        @rule(memo=memos, who=WHO, spec=ACTIONS, wait=WAIT, then_count=st.booleans())
        def call(
            self,
            memo: tuple[str, str, int],
            who: int | str | None,
            spec: tuple[str, str, int, str],
            wait: float,
            then_count: bool,
        ) -> None:
            self.clock.now += wait
            handles = ("memo_made_up", "memo_made_up") if who == "made up" else memo[:2]
            caller = self.callers[memo[2] if who is None or who == "made up" else int(who)]
            if spec[0] == "discard memo":
                # An idle memo nobody has ended yet: in process, another caller's open may have
                # ended it (discard then keeps its end) or not (discard forgets it): skipped.
                if self.clock.now - self.last_used[memo[:2]] <= LIMITS.idle_s:
                    self._both(lambda book, h: book.discard(h, caller), handles)
            else:
                answer = self._both(lambda book, h: book.use(h, caller, _action(spec)), handles)
                used = answer[0] not in (MemoExpired, MemoNotFound)  # the timer restarted
                if used and handles == memo[:2] and who in (None, memo[2]):
                    self.last_used[memo[:2]] = self.clock.now
            if then_count:
                self.count()

        def count(self) -> None:
            # in process, idle memos count as open until some call ends them: end them first
            self.local.book.recallsets.sweep()  # type: ignore[attr-defined]
            for caller in self.callers:
                assert self.local.count(caller) == self.pg.count(caller)

    run_state_machine_as_test(
        Twins, settings=settings(max_examples=20, stateful_step_count=30, deadline=None)
    )


# --- what only the database book has ----------------------------------------------------------


@pytest.fixture
def pg(aloop: LoopThread, astore: AsyncMemoryStore) -> Callable[..., Book]:
    def make(
        limits: MemoLimits | None = None, clock: Callable[[], float] | None = None, **kw: Any
    ) -> Book:
        return Book(PostgresMemoBook(astore, limits, clock or Clock(), **kw), aloop)

    return make


def _rows(book: Book, tenant: str) -> list[dict[str, Any]]:
    store = book.book.store  # type: ignore[attr-defined]
    with all_tenants(store, as_owner=True) as conn:
        result = conn.execute(
            sa.text("SELECT * FROM mcp_memos WHERE tenant = :t ORDER BY touched"), {"t": tenant}
        )
        return [dict(row) for row in result.mappings()]


def test_a_row_holds_the_handles_digest_never_the_handle(
    pg: Callable[..., Book], tenant: str
) -> None:
    book = pg()
    alice = Caller(tenant, "alice", "wf-7")
    handle = book.open(alice)
    book.use(handle, alice, lambda rs: rs.add("remember the VPN log"))
    [row] = _rows(book, tenant)
    assert row["handle_sha256"] == hashlib.sha256(handle.encode()).hexdigest()
    assert (row["user_id"], row["workflow_id"], row["session_id"]) == ("alice", "wf-7", "")
    assert row["token_sha256"] == ""  # a bare caller: no bearer token (stdio)
    assert all(handle not in str(value) for value in row.values())
    assert all(handle[5:] not in str(value) for value in row.values())
    assert row["ended_why"] is None and '"content":"remember the VPN log"' in row["state"]

    with all_tenants(book.book.store) as conn:  # type: ignore[attr-defined]
        query = "SELECT relpersistence FROM pg_class WHERE relname = 'mcp_memos'"
        persistence = str(conn.execute(sa.text(query)).scalar_one())
    assert persistence == "u"  # UNLOGGED: never written to the WAL


def test_a_row_holds_a_hash_of_the_token_identity_never_the_token(
    pg: Callable[..., Book], tenant: str
) -> None:
    book = pg()
    token = "hm_" + "T" * 43
    digest = hashlib.sha256(token.encode()).hexdigest()  # what the token file keeps
    book.open(MemoOwner(Caller(tenant, "alice"), token_key(digest)))
    [row] = _rows(book, tenant)
    assert row["token_sha256"] == token_key(digest) and len(row["token_sha256"]) == 64
    assert all(token not in str(v) and digest not in str(v) for v in row.values())


def test_an_idle_end_is_committed_though_the_use_raises(
    pg: Callable[..., Book], tenant: str
) -> None:
    clock = Clock(0.0)
    book = pg(MemoLimits(idle_s=60), clock)
    alice = Caller(tenant, "alice")
    idle, other_idle = book.open(alice), book.open(alice)
    book.use(idle, alice, lambda rs: rs.add("secret note"))
    clock.now = 61
    with pytest.raises(MemoExpired, match="idle"):
        book.notes(idle, alice)
    rows = _rows(book, tenant)
    assert [(r["state"], r["ended_at"]) for r in rows] == [(None, 61.0), (None, 61.0)]
    assert all("idle for more than 60 s" in r["ended_why"] for r in rows)
    with pytest.raises(MemoExpired, match="idle"):  # ended with the caller's first call
        book.notes(other_idle, alice)


def test_a_failed_action_stores_nothing_but_the_use(pg: Callable[..., Book], tenant: str) -> None:
    clock = Clock(0.0)
    book = pg(MemoLimits(idle_s=60), clock)
    alice = Caller(tenant, "alice")
    handle = book.open(alice)
    book.use(handle, alice, lambda rs: rs.add("kept"))

    def add_then_fail(rs: RecallSet) -> None:
        rs.add("not kept")
        rs.mark("r99", "keep")

    clock.now = 50
    with pytest.raises(MemoryNotFound, match="r99"):
        book.use(handle, alice, add_then_fail)
    clock.now = 100  # 50 s after the failed use, 100 s after the last stored change
    assert book.notes(handle, alice) == ["kept"]


def test_concurrent_uses_from_two_stores_lose_no_note(
    aloop: LoopThread, astore: AsyncMemoryStore, db_url: str, tenant: str
) -> None:
    second = aloop.run(open_async_store(db_url, HashEmbedder()))
    try:
        books = [PostgresMemoBook(astore), PostgresMemoBook(second)]  # two pools, like workers
        alice = Caller(tenant, "alice")

        async def race() -> tuple[list[str], list[str]]:
            handle = await books[0].open(owner(alice))
            added = await asyncio.gather(
                *(books[i % 2].use(handle, owner(alice), adding(f"note {i}")) for i in range(20))
            )
            notes = await books[1].use(
                handle, owner(alice), lambda rs: [i.content for i in rs.items()]
            )
            return [result.id for result in added], notes

        added, notes = aloop.run(race())
        assert sorted(added) == sorted(f"r{i}" for i in range(1, 21))  # each add saw the last
        assert sorted(notes) == sorted(f"note {i}" for i in range(20))
    finally:
        aloop.run(second.close())


def test_concurrent_opens_of_one_caller_keep_the_cap(
    aloop: LoopThread, astore: AsyncMemoryStore, db_url: str, tenant: str
) -> None:
    second = aloop.run(open_async_store(db_url, HashEmbedder()))
    try:
        limits = MemoLimits(max_memos_per_caller=3)
        books = [PostgresMemoBook(astore, limits), PostgresMemoBook(second, limits)]
        alice = Caller(tenant, "alice")

        async def race() -> list[str]:
            return list(await asyncio.gather(*(books[i % 2].open(owner(alice)) for i in range(10))))

        handles = aloop.run(race())
        assert aloop.run(books[0].open_count(owner(alice))) == 3
        outcomes = []
        for handle in handles:
            try:
                aloop.run(books[1].use(handle, owner(alice), len))
                outcomes.append("open")
            except MemoExpired as exc:
                capped = "(closed because more than 3 memos were open" in str(exc)
                outcomes.append("capped" if capped else str(exc))
        assert sorted(outcomes) == ["capped"] * 7 + ["open"] * 3
    finally:
        aloop.run(second.close())


def test_a_memo_row_is_invisible_to_another_tenant(
    pg: Callable[..., Book], tenant: str, other_tenant: str
) -> None:
    book = pg()
    book.open(Caller(tenant, "alice"))
    store = book.book.store  # type: ignore[attr-defined]

    def count(who: str | None) -> int:
        with as_tenant(store, who) as conn:
            query = sa.text("SELECT count(*) FROM mcp_memos")  # no tenant filter on purpose
            return int(conn.execute(query).scalar_one())

    assert count(tenant) == 1
    assert count(other_tenant) == 0
    assert count(None) == 0


def test_an_open_sweeps_rows_abandoned_long_ago(pg: Callable[..., Book], tenant: str) -> None:
    clock = Clock(0.0)
    book = pg(MemoLimits(idle_s=60), clock, retention_s=100)
    alice, bob = Caller(tenant, "alice"), Caller(tenant, "bob")
    gone = book.open(alice)
    clock.now = 50
    kept = book.open(Caller(tenant, "carol"))
    clock.now = 100
    book.use(kept, Caller(tenant, "carol"), len)
    clock.now = 161  # gone: last used 161 s ago (> 60 + 100); kept: 61 s ago
    book.open(bob)  # another caller's open sweeps the tenant
    assert {r["user_id"] for r in _rows(book, tenant)} == {"bob", "carol"}
    with pytest.raises(MemoNotFound):  # forgotten: no longer "ended"
        book.notes(gone, alice)
    with pytest.raises(MemoExpired):  # still remembered as ended
        book.notes(kept, Caller(tenant, "carol"))


def test_open_count_of_all_spans_tenants(
    aloop: LoopThread, private_db_url: str, tenant: str, other_tenant: str
) -> None:
    store = aloop.run(open_async_store(private_db_url, HashEmbedder()))
    try:
        clock = Clock(0.0)
        book = Book(PostgresMemoBook(store, MemoLimits(idle_s=60), clock), aloop)
        book.open(Caller(tenant, "alice"))
        book.open(Caller(other_tenant, "alice"))
        clock.now = 30
        book.open(Caller(other_tenant, "bob"))
        assert book.count() == 3
        clock.now = 61  # the first two are idle now, though nothing has ended them yet
        assert book.count() == 1
        assert book.count(Caller(other_tenant, "bob")) == 1
    finally:
        aloop.run(store.close())
