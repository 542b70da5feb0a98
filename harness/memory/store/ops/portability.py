"""Export and import of one tenant's memory as JSON lines (``docs/export-format.md``).

Export reads a page at a time (keyset order, each page its own read) and hands each line to
the caller's ``write``: the store never holds more than a page. Import makes two passes over
the file: the first checks every line without a connection (:func:`check_file`), the second
writes in one transaction, a batch of lines at a time, so a file either lands whole or not at
all, and a bad line stops it before anything was written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from harness.errors import InvalidInput
from harness.identifiers import check_identifier
from harness.memory.domain.conversations import check_turns
from harness.memory.domain.export_check import CheckedFile, check_file
from harness.memory.domain.export_format import (
    ApprovalRecord,
    ConversationRecord,
    ConversationTurn,
    ExportReport,
    Header,
    ImportReport,
    LessonEventRecord,
    LessonScoreRecord,
    MemoryRecord,
    Record,
    dump_line,
    read_records,
)
from harness.memory.domain.lessons import lesson_content
from harness.memory.domain.types import Scope
from harness.memory.embedding.embedder import Embedder
from harness.memory.store import sql
from harness.memory.store.base import StoreBase
from harness.memory.store.checks import as_scope
from harness.memory.store.executors import Blocking, Op
from harness.memory.store.ops import conversations as conversation_ops
from harness.memory.store.ops import vectors
from harness.memory.store.plans import Plan, embedded, in_transaction, read
from harness.memory.store.portability_rows import (
    approval_record,
    approval_row,
    event_record,
    memory_record,
    memory_row,
    score_record,
    score_row,
)
from harness.memory.store.sql import portability as psql

__all__ = ["ImportSource", "export_memories", "import_memories"]

#: Where an import reads its lines: a file path (opened once per pass), or a function that
#: returns the lines afresh each time it is called.
ImportSource = str | os.PathLike[str] | Callable[[], Iterable[str]]

_PAGE = 1000


# --- export ------------------------------------------------------------------------------------


def export_memories(
    store: StoreBase,
    tenant: str,
    write: Callable[[str], object],
    *,
    scopes: Sequence[tuple[Scope | str, str | None]] = (),
    with_vectors: bool = False,
) -> Plan[ExportReport]:
    """Write the tenant's memory to ``write``, one JSON line (without newline) per call:
    the header, then every memory (all statuses, with its history links, approval, expiry
    and source), the approval trail, lesson events and lesson scores.

    ``scopes``: (scope, scope id or None for every id) pairs to export; empty: all.
    ``with_vectors``: include the vectors (the header names their model), else an import
    re-embeds. Read-only; streams a page of 1000 rows at a time, each page its own read
    (stop writes for a point-in-time copy, or use ``pg_dump``, docs/operations.md).

    Raises:
        InvalidInput: a malformed tenant or scope.
    """
    tenant = check_identifier(tenant, "tenant")
    wanted = _check_scopes(scopes)
    model, dim = (None, None)
    if with_vectors:
        model, dim = yield from in_transaction(
            "read metadata", vectors.stored_model_op(), admits="none"
        )
    now = store.clock.now()
    write(
        dump_line(
            Header(
                tenant=tenant,
                exported_at=now,
                vectors=with_vectors and model is not None,
                model=model if with_vectors else None,
                dim=dim if with_vectors else None,
            )
        )
    )
    counts = {"memories": 0, "approvals": 0, "lesson_events": 0, "lesson_scores": 0}

    after: Any = None
    while True:
        stmt = psql.export_memories_page(tenant, wanted, after, _PAGE, vectors=with_vectors)
        rows = yield from read("export", tenant, partial(_rows, stmt))
        for row in rows:
            write(dump_line(memory_record(row)))
        counts["memories"] += len(rows)
        if len(rows) < _PAGE:
            break
        after = rows[-1]["id"]

    pages: list[tuple[str, Callable[[Any], Any], Callable[[Any], Record], str]] = [
        (
            "approvals",
            lambda after: psql.export_approvals_page(tenant, wanted, after, _PAGE),
            approval_record,
            "id",
        ),
        (
            "lesson_events",
            lambda after: psql.export_events_page(
                tenant, wanted, after, _PAGE, vectors=with_vectors
            ),
            event_record,
            "id",
        ),
        (
            "lesson_scores",
            lambda after: psql.export_scores_page(tenant, wanted, after, _PAGE),
            score_record,
            "memory_id",
        ),
    ]
    for name, statement, to_record, cursor in pages:
        after = None
        while True:
            rows = yield from read("export", tenant, partial(_rows, statement(after)))
            for row in rows:
                write(dump_line(to_record(row)))
            counts[name] += len(rows)
            if len(rows) < _PAGE:
                break
            after = rows[-1][cursor]
    counts["conversations"] = yield from _export_conversations(tenant, wanted, write)
    return ExportReport(**counts)


def _export_conversations(
    tenant: str, wanted: list[tuple[Scope, str | None]], write: Callable[[str], object]
) -> Plan[int]:
    """The archive's conversations of the tenant (of the users a scope filter names), each a
    line with its turns: a page of conversations at a time, then one read per conversation."""
    written = 0
    after: tuple[str, str] | None = None
    while True:
        stmt = psql.export_conversations_page(tenant, wanted, after, _PAGE)
        page = yield from read("export", tenant, partial(_rows, stmt))
        for row in page:
            turns_stmt = psql.export_conversation_turns(
                tenant, row["user_id"], row["conversation_id"]
            )
            turns = yield from read("export", tenant, partial(_rows, turns_stmt))
            if not turns:
                continue
            record = ConversationRecord(
                id=row["conversation_id"],
                user_id=row["user_id"],
                turns=tuple(ConversationTurn(**dict(turn)) for turn in turns),
            )
            write(dump_line(record))
            written += 1
        if len(page) < _PAGE:
            return written
        after = (page[-1]["user_id"], page[-1]["conversation_id"])


def _check_scopes(
    scopes: Sequence[tuple[Scope | str, str | None]],
) -> list[tuple[Scope, str | None]]:
    out: list[tuple[Scope, str | None]] = []
    for scope, scope_id in scopes:
        s = as_scope(scope)
        if scope_id is not None and s is not Scope.PLATFORM:
            scope_id = check_identifier(scope_id, "scope_id")
        out.append((s, "" if s is Scope.PLATFORM else scope_id))
    return out


def _rows(stmt: Any) -> Op[list[Any]]:
    return list((yield stmt).mappings().all())


# --- import ------------------------------------------------------------------------------------


def import_memories(
    store: StoreBase,
    source: ImportSource,
    *,
    tenant: str | None = None,
    as_tenant: str | None = None,
    batch_size: int = 500,
) -> Plan[ImportReport]:
    """Import an export file (``source``: a path, or a function returning its lines).

    First every line is checked (schema version, each field, one active memory per key),
    streaming and before a connection is taken; then all of it is written in one transaction,
    ``batch_size`` lines at a time. A file's vectors are kept when they were built by this
    store's model, else (or when absent) the memories are re-embedded here; a lexical store
    keeps none. The guard does not run again: the file is a store's own export (the mem0
    importer guards foreign text before it becomes a file).

    Idempotent by id: a memory whose id the tenant already has is left as it is; an approval
    or lesson event already recorded (same memory, decision or event, time) is not added
    again, nor a lesson score. Tenant-checked: the records go to the file's tenant; ``tenant``
    refuses a file of another one, ``as_tenant`` imports it under that tenant instead.
    Conversation lines are imported as posts of the whole conversation (the turns replace what
    the user holds under that id; unchanged turns are not embedded again).

    Raises:
        UnsupportedExportVersion: the file is of a newer schema version (both named).
        ExportLineError: a bad line (its number and field named); nothing written.
        ConflictingState / StoreError: the database refused the batch; nothing written.
    """
    if not 1 <= batch_size <= 10_000:
        raise InvalidInput("batch_size: between 1 and 10000", fields=("batch_size",))
    opener = _opener(source)
    checked: CheckedFile = yield from embedded(
        lambda: check_file(opener(), tenant=tenant, as_tenant=as_tenant)
    )
    embedder = store.embedder
    header = checked.header
    keep = (
        embedder is not None
        and header.vectors
        and header.model == embedder.model_name
        and header.dim == embedder.dim
    )
    op = _write_file(store, opener, checked, embedder, keep=keep, batch_size=batch_size)
    counts, skipped = yield from in_transaction("import", op, checked.tenant)
    store.router.share_position(checked.tenant, {checked.tenant})
    return ImportReport(
        tenant=checked.tenant, lines=checked.lines, skipped=tuple(skipped), **counts
    )


def _opener(source: ImportSource) -> Callable[[], Iterable[str]]:
    if callable(source):
        return source
    path = Path(source)

    def lines() -> Iterator[str]:
        with path.open(encoding="utf-8") as f:
            yield from f

    return lines


def _write_file(
    store: StoreBase,
    opener: Callable[[], Iterable[str]],
    checked: CheckedFile,
    embedder: Embedder | None,
    *,
    keep: bool,
    batch_size: int,
) -> Op[tuple[dict[str, int], list[str]]]:
    if embedder is not None:
        # memories' and conversation turns' vectors are this model's
        yield from vectors.claim_model(embedder)
    tenant = checked.tenant
    counts = dict.fromkeys(
        (
            "memories",
            "existing",
            "approvals",
            "lesson_events",
            "lesson_scores",
            "conversations",
            "embedded",
        ),
        0,
    )
    skipped: list[str] = []
    records = read_records(opener())
    yield Blocking(partial(next, records))  # the header, checked by the first pass
    while True:
        # Reading and parsing is file IO: a worker thread's under asyncio.
        chunk = yield Blocking(partial(_take, records, batch_size))
        if not chunk:
            return counts, skipped
        mems = [r for _, r in chunk if isinstance(r, MemoryRecord)]
        if mems:
            rows = [memory_row(tenant, r, keep) for r in mems]
            missing = [i for i, row in enumerate(rows) if row["embedding"] is None]
            if embedder is not None and missing:
                pairs = yield Blocking(
                    partial(
                        vectors.embed_pairs,
                        embedder,
                        [rows[i]["content"] for i in missing],
                        [rows[i]["context"] for i in missing],
                    )
                )
                for i, vec, cvec in zip(missing, *pairs, strict=True):
                    rows[i]["embedding"], rows[i]["context_embedding"] = vec, cvec
            inserted = len((yield psql.import_memories(rows)).all())
            counts["memories"] += inserted
            counts["existing"] += len(rows) - inserted
            counts["embedded"] += len(missing) if embedder is not None else 0
        approvals = [approval_row(tenant, r) for _, r in chunk if isinstance(r, ApprovalRecord)]
        if approvals:
            counts["approvals"] += len((yield psql.import_approvals(approvals)).all())
        events = [r for _, r in chunk if isinstance(r, LessonEventRecord)]
        if events:
            event_rows = yield from _event_rows(tenant, events, embedder, keep)
            result = yield psql.import_events(event_rows)
            counts["lesson_events"] += len(result.all())
        scores = [score_row(tenant, r) for _, r in chunk if isinstance(r, LessonScoreRecord)]
        if scores:
            counts["lesson_scores"] += len((yield psql.import_scores(scores)).all())
        for _, r in chunk:
            if isinstance(r, ConversationRecord):
                yield from _import_conversation(store, tenant, r, embedder)
                counts["conversations"] += 1


def _import_conversation(
    store: StoreBase, tenant: str, record: ConversationRecord, embedder: Embedder | None
) -> Op[None]:
    """The conversation as a post of it: its turns replace what the tenant's user holds under
    its id (unchanged turns are kept with their vectors, the others embedded here)."""
    turns = check_turns(record.id, [turn.model_dump() for turn in record.turns])
    vectors: dict[str, list[float]] | None = {} if embedder is not None else None
    yield from conversation_ops.put_op(store, tenant, record.user_id, record.id, turns, vectors)


def _take(records: Iterator[tuple[int, Header | Record]], n: int) -> list[tuple[int, Record]]:
    """The next ``n`` records (the header, line 1, is passed over)."""
    return [(number, r) for number, r in islice(records, n) if not isinstance(r, Header)]


def _event_rows(
    tenant: str, events: list[LessonEventRecord], embedder: Embedder | None, keep: bool
) -> Op[list[dict[str, Any]]]:
    rows = [
        {
            "tenant": tenant,
            "memory_id": r.memory_id,
            "event": r.event,
            "polarity": r.polarity,
            "run_id": r.run_id,
            "verdict_id": r.verdict_id,
            "actor": r.actor,
            "task": r.task,
            "feedback": r.feedback,
            "at": r.at,
            "embedding": r.embedding if keep else None,
            "feedback_embedding": r.feedback_embedding if keep else None,
        }
        for r in events
    ]
    if embedder is None or keep:
        return rows
    # The texts reembed gives vectors: a context's task, a missed or repeated lesson's wording.
    tasks = [r.task if r.event in sql.CONTEXT_EVENTS else None for r in events]
    wordings = [
        lesson_content(r.feedback) if r.event in sql.WORDING_EVENTS and r.feedback else None
        for r in events
    ]
    texts = [t for t in tasks + wordings if t is not None]
    if texts:
        vecs = iter((yield Blocking(partial(embedder.embed, texts))))
        for row, t in zip(rows, tasks, strict=True):
            row["embedding"] = next(vecs) if t is not None else None
        for row, w in zip(rows, wordings, strict=True):
            row["feedback_embedding"] = next(vecs) if w is not None else None
    return rows
