"""Pure parts of the console: page cursors, the per-day chart layout, sessions, admins."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.clock import FixedClock
from harness.console.backend import format_cursor, parse_cursor, parse_memory_id
from harness.console.chart import ORIGIN_COLOURS, layout_chart
from harness.console.present import relevance_label, when
from harness.console.sessions import SessionStore
from harness.console.tokens import Admin
from harness.errors import InvalidInput, MemoryNotFound
from harness.memory.domain.recall import RecalledItem
from harness.memory.domain.types import Memory

aware = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


@given(aware, st.uuids())
def test_cursor_round_trips(at: datetime, ident: uuid.UUID) -> None:
    assert parse_cursor(format_cursor((at, ident)), "before") == (at, ident)


@given(st.text(max_size=60))
def test_any_other_text_is_a_clear_cursor_error_or_a_valid_cursor(raw: str) -> None:
    errors: list[InvalidInput] = []
    parsed = None
    try:
        parsed = parse_cursor(raw, "after")
    except InvalidInput as exc:
        errors.append(exc)
    if errors:
        assert errors[0].fields == ("after",) and "is not a page cursor" in str(errors[0])
    else:
        assert parsed is None or (parsed[0].tzinfo is not None and isinstance(parsed[1], uuid.UUID))


def test_naive_cursor_timestamps_are_refused() -> None:
    with pytest.raises(InvalidInput, match="before"):
        parse_cursor(f"2026-01-01T00:00:00~{uuid.uuid4()}", "before")


@pytest.mark.parametrize("raw", ["", "x", "1' or 1=1 --", "123"])
def test_malformed_ids_are_not_found(raw: str) -> None:
    with pytest.raises(MemoryNotFound):
        parse_memory_id(raw)


day_counts = st.dictionaries(
    st.integers(0, 29),
    st.dictionaries(st.sampled_from(sorted(ORIGIN_COLOURS)), st.integers(1, 500), min_size=1),
)


@given(day_counts)
def test_chart_stacks_each_day_and_scales_to_the_busiest(counts: dict[int, dict[str, int]]) -> None:
    days = [date(2026, 10, 1) + timedelta(days=i) for i in range(30)]
    rows = [
        {"day": datetime.combine(days[d], datetime.min.time()), "origin": o, "n": n}
        for d, per in counts.items()
        for o, n in per.items()
    ]
    rows.append({"day": date(2020, 1, 1), "origin": "api", "n": 10**6})  # outside: ignored
    chart = layout_chart(days, rows, width=600, height=120)
    totals = {d: sum(per.values()) for d, per in counts.items()}
    assert chart.max_total == max(totals.values(), default=0)
    assert len(chart.bars) == sum(len(per) for per in counts.values())
    for d, total in totals.items():
        bars = [b for b in chart.bars if b.label.startswith(days[d].isoformat())]
        stacked = sum(b.height for b in bars)
        assert stacked == pytest.approx(120 * total / chart.max_total)
        assert all(b.y >= -1e-9 and b.y + b.height <= 120 + 1e-9 for b in bars)
        assert all(days[d].isoformat() in b.label for b in bars)
    assert (chart.first_day, chart.last_day) == ("2026-10-01", "2026-10-30")


def test_sessions_expire_and_close() -> None:
    clock = FixedClock(datetime(2026, 11, 1, tzinfo=UTC))
    sessions = SessionStore(timedelta(hours=1), clock)
    s = sessions.open("hash")
    assert sessions.get(s.sid) is s and s.csrf and s.sid != s.csrf
    clock.at += timedelta(minutes=59)
    assert sessions.get(s.sid) is s
    clock.at += timedelta(minutes=2)
    assert sessions.get(s.sid) is None
    t = sessions.open("hash")
    sessions.close(t.sid)
    assert sessions.get(t.sid) is None and sessions.get(None) is None


def test_sessions_are_unguessable_and_distinct() -> None:
    sessions = SessionStore()
    ids = {sessions.open("h").sid for _ in range(50)}
    assert len(ids) == 50 and all(len(i) >= 40 for i in ids)


@pytest.mark.parametrize(("name", "tenants"), [(" ", ("a",)), ("alice", ()), ("alice", ("",))])
def test_admins_need_a_name_and_tenants(name: str, tenants: tuple[str, ...]) -> None:
    with pytest.raises(InvalidInput):
        Admin(name, tenants)


# --- how values are worded (issue 35: always-on items, dates, empty signals) -------------------


def _item(kind: str, scope: str, relevance: float) -> RecalledItem:
    memory = Memory(
        id=uuid.uuid4(),
        tenant="t",
        scope=scope,
        scope_id="" if scope == "platform" else "s",
        kind=kind,
        key=None,
        content="c",
        context=None,
        priority=0,
        status="active",
        source={"origin": "api"},
        created_at=datetime(2026, 3, 2, tzinfo=UTC),
        expires_at=None,
        supersedes=None,
        superseded_by=None,
        fingerprint="f",
    )
    return RecalledItem(memory, "text", relevance)


@pytest.mark.parametrize(
    ("kind", "scope", "relevance", "label"),
    [
        ("constraint", "platform", 0.0, "always: constraint"),
        ("preference", "user", 0.0, "always: preference"),
        ("lesson", "workflow", 0.0, "always: workflow scope"),
        ("fact", "session", 0.0, "always: session scope"),
        ("lesson", "user", 0.4321, "0.432"),
    ],
)
def test_an_item_included_whatever_the_query_says_so_instead_of_relevance_zero(
    kind: str, scope: str, relevance: float, label: str
) -> None:
    assert relevance_label(_item(kind, scope, relevance)) == label


@given(aware)
def test_dates_read_to_the_second_in_utc_without_microseconds(at: datetime) -> None:
    shown = when(at.astimezone(timezone(timedelta(hours=5))))
    assert shown == at.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert "T" not in shown.removesuffix(" UTC") and "." not in shown and "+" not in shown
    assert when(at, seconds=False) == at.strftime("%Y-%m-%d %H:%M UTC")
    assert when(None) == "—"
