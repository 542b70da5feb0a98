"""The read-replica rules without a database: the read-URL list, WAL positions, and the router
(read-your-writes positions, turn-taking, pauses that double, one probe after a pause)."""

from __future__ import annotations

import asyncio
import itertools
from urllib.parse import quote

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from sqlalchemy import exc as sa_exc

from harness.errors import InvalidInput
from harness.memory.store.read_routing import _replica_fault, read_router
from harness.memory.store.replicas import ReadRouter, lsn_int, lsn_text, parse_read_urls
from harness.settings import Settings
from tests.support.facades import KINDS, open_facade
from tests.support.stores import UNREACHABLE_URL

names = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=8)
secrets = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=10)


@st.composite
def read_urls(draw: st.DrawFn) -> str:
    user, password, host, db = draw(names), draw(secrets), draw(names), draw(names)
    port = draw(st.integers(1, 65535))
    scheme = draw(st.sampled_from(["postgresql", "postgres", "postgresql+psycopg"]))
    auth = f"{quote(user, safe='')}:{quote(password, safe='')}" if password else user
    return f"{scheme}://{auth}@{host}:{port}/{db}"


@given(st.lists(read_urls(), min_size=1, max_size=4), st.sampled_from([",", ", ", " ,", ",\n"]))
def test_read_urls_split_on_commas_normalise_and_drop_repeats(urls: list[str], sep: str) -> None:
    parsed = parse_read_urls(sep.join(urls) + sep.strip())
    expected = list(dict.fromkeys(parse_read_urls(u)[0] for u in urls))
    assert list(parsed) == expected
    assert all(u.startswith("postgresql+psycopg://") for u in parsed)


def test_a_comma_inside_one_url_stays_in_it() -> None:
    (url,) = parse_read_urls("postgresql://u:p%2C@r1/db?host=r1&host=r2")
    assert "host=r1&host=r2" in url and "p%2C" in url
    assert parse_read_urls(None) == () and parse_read_urls("  ") == ()


@pytest.mark.parametrize(
    "value", ["host=db dbname=harness", "mysql://u@h/db", "postgresql+asyncpg://u@h/db", ","]
)
@pytest.mark.parametrize("kind", KINDS)
def test_unusable_read_urls_are_invalid_input_before_anything_starts(kind: str, value: str) -> None:
    """The primary is unreachable: the error comes before any connection is tried."""
    with asyncio.Runner() as runner, pytest.raises(InvalidInput) as err:
        open_facade(kind, UNREACHABLE_URL, None, runner, database_read_url=value)
    assert err.value.fields == ("HARNESS_DATABASE_READ_URL",)
    assert "HARNESS_DATABASE_READ_URL" in str(err.value)


@given(st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 64) - 1))
def test_wal_positions_round_trip_and_order_like_the_wal(a: int, b: int) -> None:
    assert lsn_int(lsn_text(a)) == a
    hi_lo = [tuple(int(x, 16) for x in lsn_text(v).split("/")) for v in (a, b)]
    assert (a < b) == (hi_lo[0] < hi_lo[1])


def test_malformed_wal_positions_are_refused() -> None:
    for text in ("", "16", "G/1", "1/2/3", "123456789/0"):
        with pytest.raises(ValueError, match="not a WAL position"):
            lsn_int(text)


# --- the router ----------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.at = 100.0

    def __call__(self) -> float:
        return self.at


def router(count: int = 2, **kw: object) -> tuple[ReadRouter, Clock]:
    clock = Clock()
    urls = [f"postgresql+psycopg://u:pw@r{i}/db" for i in range(count)]
    return ReadRouter(urls, now=clock, **kw), clock  # type: ignore[arg-type]


notes = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d", None]), st.none() | st.integers(0, 1000)),
    max_size=40,
)


@given(notes, st.integers(1, 3))
def test_a_read_never_needs_less_than_its_tenants_writes(
    sequence: list[tuple[str | None, int | None]], max_tenants: int
) -> None:
    """Whatever was written, in whatever order, and however many tenants were forgotten: a
    tenant's read needs at least every position noted for it or for all tenants, or the
    primary (unknown position) -- never less, so it can never read older than its writes."""
    r, _ = router(max_tenants=max_tenants)
    noted: dict[str | None, int] = {}
    unknown: set[str | None] = set()
    for tenant, lsn in sequence:
        r.note_write([tenant], lsn)
        if lsn is None:
            unknown.add(tenant)
        else:
            unknown.clear()  # a later known position covers every earlier commit
            noted[tenant] = max(noted.get(tenant, 0), lsn)
        for who in ("a", "b", "c", "d"):
            needed = r.needed(who)
            if who in unknown or None in unknown:
                assert needed is None
            elif needed is not None:
                assert needed >= max(noted.get(who, 0), noted.get(None, 0))


def test_positions_are_per_tenant_and_a_batch_shares_its_position() -> None:
    r, _ = router()
    r.note_write(["a"], 500)
    assert (r.needed("a"), r.needed("b")) == (500, 0)
    r.share_position("a", {"a", "b"})
    assert r.needed("b") == 500
    r.note_write([None], 700)
    assert (r.needed("a"), r.needed("c")) == (700, 700)


def test_healthy_replicas_take_turns() -> None:
    r, _ = router(3)
    assert [r.choose(0) for _ in range(4)] == [(0, 0), (1, 0), (2, 0), (0, 0)]


def test_an_unknown_position_reads_the_primary() -> None:
    r, _ = router()
    r.note_write(["a"], None)
    assert r.choose(r.needed("a")) is None
    assert r.snapshot().fallbacks == {"unknown": 1}


@given(st.integers(1, 12), st.floats(0.01, 5), st.floats(0.01, 100))
def test_a_failing_replica_pauses_twice_as_long_each_time_up_to_the_maximum(
    failures: int, retry: float, cap: float
) -> None:
    r, _ = router(1, retry_s=retry, retry_max_s=cap)
    pauses = [r.failed(0, OSError("gone")) for _ in range(failures)]
    assert pauses[0] == min(retry, cap)
    for before, after in itertools.pairwise(pauses):
        assert after == min(before * 2, cap) or after == cap
    assert all(p <= cap for p in pauses)


def test_a_paused_replica_is_skipped_then_probed_by_one_read() -> None:
    r, clock = router(2, retry_s=1.0)
    r.failed(0, OSError("gone"))
    assert [r.choose(0) for _ in range(3)] == [(1, 0), (1, 0), (1, 0)]
    r.failed(1, OSError("gone too"))
    assert r.choose(0) is None  # both paused: the primary
    clock.at += 1.5  # replica 0's pause (1 s) is over; replica 1's too (1 s)
    first = r.choose(0)
    second = r.choose(0)
    assert first is not None and second is not None and first[0] != second[0]
    assert r.choose(0) is None  # each is being probed by one read; the rest use the primary
    r.served(first[0], 42)
    assert r.choose(0) == (first[0], 42)
    state = r.snapshot()
    assert state.replicas[first[0]].up and not state.replicas[second[0]].up
    assert state.fallbacks == {"error": 2, "down": 2}
    assert all("pw" not in s.url for s in state.replicas)


def test_a_lagging_replica_stays_up_and_remembers_how_far_it_got() -> None:
    r, _ = router(1)
    r.lagged(0, 300)
    state = r.snapshot()
    assert state.replicas[0].up and state.fallbacks == {"lag": 1} and state.primary_reads == 1
    assert r.choose(0) == (0, 300)


def test_a_recovery_conflict_reads_the_primary_once_and_keeps_the_replica_up() -> None:
    r, _ = router(1)
    conflict = sa_exc.OperationalError("SELECT 1", {}, psycopg.errors.SerializationFailure("x"))
    _replica_fault(r, 0, conflict)
    state = r.snapshot()
    assert state.replicas[0].up and state.fallbacks == {"conflict": 1}
    assert r.choose(0) == (0, 0)
    _replica_fault(r, 0, sa_exc.OperationalError("SELECT 1", {}, psycopg.OperationalError("gone")))
    state = r.snapshot()
    assert not state.replicas[0].up and state.fallbacks == {"conflict": 1, "error": 1}


def test_the_wait_stays_under_the_statement_timeout() -> None:
    settings = Settings.from_env(replica_wait_ms=5000, statement_timeout_ms=2000)
    assert read_router(settings, ()).wait_ms == 1000
    assert read_router(Settings.from_env(replica_wait_ms=80), ()).wait_ms == 80


class RouterHealth(RuleBasedStateMachine):
    """Any sequence of failures, answers, lag and time: a read is handed a replica only when it
    is up, or paused long enough and not already being probed; the primary only when no
    replica qualifies."""

    def __init__(self) -> None:
        super().__init__()
        self.router, self.clock = router(3, retry_s=1.0, retry_max_s=8.0)
        self.failures = [0, 0, 0]
        self.down_until = [0.0, 0.0, 0.0]

    def _eligible(self, index: int) -> bool:
        return self.failures[index] == 0 or self.down_until[index] <= self.clock.at

    @rule(index=st.integers(0, 2))
    def fail(self, index: int) -> None:
        pause = self.router.failed(index, OSError("gone"))
        self.failures[index] += 1
        assert pause == min(2.0 ** (self.failures[index] - 1), 8.0)
        self.down_until[index] = self.clock.at + pause

    @rule(index=st.integers(0, 2), lagging=st.booleans())
    def answer(self, index: int, lagging: bool) -> None:
        if lagging:
            self.router.lagged(index, 0)
        else:
            self.router.served(index, 0)
        self.failures[index] = 0

    @rule(seconds=st.floats(0, 20))
    def wait(self, seconds: float) -> None:
        self.clock.at += seconds

    @rule()
    def read(self) -> None:
        chosen = self.router.choose(0)
        if chosen is None:
            assert not any(self._eligible(i) for i in range(3))
            return
        index = chosen[0]
        assert self._eligible(index)
        if self.failures[index]:  # a probe: the others keep away until it answers
            self.down_until[index] = self.clock.at + min(2.0 ** (self.failures[index] - 1), 8.0)

    @invariant()
    def health_matches(self) -> None:
        assert [s.up for s in self.router.snapshot().replicas] == [f == 0 for f in self.failures]


TestRouterHealth = RouterHealth.TestCase
