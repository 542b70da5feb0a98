"""The export file's schema (pure): lines round-trip, every bad line is refused naming its
number and field, a newer version is refused naming both versions, and the first pass checks
the tenant and the keys before anything is written."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.memory.domain.export_check import check_file, target_tenant
from harness.memory.domain.export_format import (
    VERSION,
    ApprovalRecord,
    ExportLineError,
    Header,
    LessonEventRecord,
    LessonScoreRecord,
    MemoryRecord,
    UnsupportedExportVersion,
    dump_line,
    parse_header,
    parse_line,
    read_records,
)
from harness.memory.domain.types import Kind, Origin, Scope, Status

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HEADER = dump_line(Header(tenant="acme", exported_at=T0))

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40
).filter(str.strip)
_ident = st.from_regex(r"[a-z][a-z0-9-]{0,11}", fullmatch=True)
_when = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
_vector = st.lists(st.floats(-1, 1, width=32), min_size=3, max_size=3)


@st.composite
def memories(draw: st.DrawFn) -> MemoryRecord:
    scope = draw(st.sampled_from(list(Scope)))
    return MemoryRecord(
        id=draw(st.uuids()),
        scope=scope,
        scope_id="" if scope is Scope.PLATFORM else draw(_ident),
        kind=draw(st.sampled_from(list(Kind))),
        key=draw(st.none() | _ident),
        content=draw(_text),
        context=draw(st.none() | _text),
        priority=draw(st.integers(-5, 5)),
        status=draw(st.sampled_from(list(Status))),
        origin=draw(st.sampled_from(list(Origin))),
        created_at=draw(_when),
        expires_at=draw(st.none() | _when),
        supersedes=draw(st.none() | st.uuids()),
        embedding=draw(st.none() | _vector),
    )


_records = st.one_of(
    memories(),
    st.builds(
        ApprovalRecord,
        memory_id=st.uuids(),
        decision=st.sampled_from(["approved", "rejected"]),
        actor=_ident,
        reason=st.none() | _text,
        decided_at=_when,
    ),
    st.builds(
        LessonEventRecord,
        memory_id=st.uuids(),
        event=st.sampled_from(["taught", "missed", "retired"]),
        polarity=st.sampled_from([None, "positive", "negative"]),
        task=st.none() | _text,
        at=_when,
        embedding=st.none() | _vector,
    ),
    st.builds(
        LessonScoreRecord,
        memory_id=st.uuids(),
        n=st.integers(0, 100),
        mean=st.floats(-1, 1),
        m2=st.floats(0, 10),
    ),
)


@given(record=_records, line=st.integers(2, 10**6))
def test_a_record_line_parses_back_to_the_same_record_and_line(record: object, line: int) -> None:
    text = dump_line(record)  # type: ignore[arg-type]
    assert "\n" not in text
    again = parse_line(text, line)
    assert again == record
    assert dump_line(again) == text


def test_datetimes_are_written_in_utc_whatever_the_offset() -> None:
    east = datetime(2026, 1, 1, 9, tzinfo=timezone(timedelta(hours=9)))
    header = Header(tenant="acme", exported_at=east)
    assert json.loads(dump_line(header))["exported_at"] == "2026-01-01T00:00:00Z"


def test_a_newer_version_is_refused_naming_both_versions() -> None:
    newer = json.loads(HEADER) | {"version": VERSION + 1, "something_new": True}
    with pytest.raises(UnsupportedExportVersion) as err:
        parse_header(json.dumps(newer))
    assert err.value.found == VERSION + 1 and err.value.supported == VERSION
    assert f"version {VERSION + 1}" in str(err.value) and f"up to {VERSION}" in str(err.value)
    assert err.value.fields == ("version",)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("not json", "line"),
        ("[1, 2]", "line"),
        ('{"type": "galaxy"}', "type"),
        ('{"type": "header", "format": "harness-memory-export", "tenant": "t"}', "type"),
        ('{"type": "approval", "memory_id": "not-a-uuid"}', "memory_id"),
    ],
)
def test_a_bad_line_names_its_number_and_field(line: str, field: str) -> None:
    with pytest.raises(ExportLineError) as err:
        parse_line(line, 7)
    assert err.value.line == 7 and err.value.fields == (field,)
    assert str(err.value).startswith(f"line 7: {field}: ")


def _memory(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "type": "memory",
        "id": str(uuid.uuid4()),
        "scope": "user",
        "scope_id": "alice",
        "kind": "fact",
        "content": "x",
        "status": "active",
        "origin": "api",
        "created_at": "2026-01-01T00:00:00Z",
    }
    return base | kw


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": "rumour"}, "kind"),
        ({"scope": "platform"}, "scope_id"),
        ({"content": ""}, "content"),
        ({"created_at": "2026-01-01T00:00:00"}, "created_at"),
        ({"embedding": [0.1, "x"]}, "embedding.1"),
        ({"colour": "red"}, "colour"),
        ({"content": "nul \x00 here"}, "content"),
    ],
)
def test_a_bad_memory_field_is_named(change: dict[str, object], field: str) -> None:
    with pytest.raises(ExportLineError) as err:
        parse_line(json.dumps(_memory(**change)), 3)
    assert err.value.fields == (field,), str(err.value)


def test_the_header_must_be_line_one_and_a_file_must_have_one() -> None:
    with pytest.raises(ExportLineError, match="line 1: format"):
        list(read_records([json.dumps(_memory())]))
    with pytest.raises(ExportLineError, match="empty file"):
        list(read_records(["", "\n"]))
    with pytest.raises(ExportLineError, match="line 2: type: a second header"):
        list(read_records([HEADER, HEADER]))


def test_blank_lines_are_passed_over_and_numbers_stay_the_files() -> None:
    parsed = list(read_records([HEADER, "\n", json.dumps(_memory())]))
    assert [n for n, _ in parsed] == [1, 3]


def test_another_tenants_file_needs_as_tenant() -> None:
    header = Header(tenant="acme", exported_at=T0)
    assert target_tenant(header, None, None) == "acme"
    assert target_tenant(header, "acme", None) == "acme"
    assert target_tenant(header, "globex", "globex") == "globex"
    with pytest.raises(ExportLineError, match=r"line 1: tenant: .*--as-tenant globex"):
        target_tenant(header, "globex", None)


def test_the_first_pass_finds_a_second_active_memory_of_one_key() -> None:
    a = json.dumps(_memory(key="k"))
    b = json.dumps(_memory(key="k", status="superseded"))
    c = json.dumps(_memory(key="k"))
    assert check_file([HEADER, a, b]).memories == 2
    with pytest.raises(ExportLineError, match=r"^line 4: key: a second active memory"):
        check_file([HEADER, a, b, c])


def test_the_first_pass_reads_the_lines_once_and_streams() -> None:
    seen = []

    def lines():  # type: ignore[no-untyped-def]
        yield HEADER
        for _ in range(1000):
            seen.append(1)
            yield json.dumps(_memory())

    checked = check_file(lines(), as_tenant="globex")
    assert (checked.tenant, checked.lines, checked.memories) == ("globex", 1001, 1000)
    assert len(seen) == 1000
