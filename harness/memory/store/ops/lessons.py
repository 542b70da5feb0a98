"""Lessons that learn, as store operations: after a run's final verdict (``learn``), the
lesson's record (``lesson_events``), and the retirement queue (``retirement_proposals``,
``retire``, ``restore``). The rules are pure (:mod:`harness.memory.domain.learning`); this
module reads what they need, and records what they decide in one transaction."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from harness.errors import ConflictingState, MemoryNotFound, MemoryRejected
from harness.fingerprint import fingerprint
from harness.identifiers import check_identifier
from harness.memory.domain.learning import (
    FeedbackSeen,
    KnownLesson,
    Learned,
    LearningConfig,
    LessonRecord,
    LessonReport,
    RetirementProposal,
    classify,
    cosine,
    retirement_reason,
)
from harness.memory.domain.lessons import lessons_from_verdicts
from harness.memory.domain.types import Kind, Memory, MemoryCandidate, Scope, Status
from harness.memory.embedding.embedder import Embedder
from harness.memory.store import sql
from harness.memory.store.base import StoreBase
from harness.memory.store.checks import as_uuid, check_reason, validate_candidates
from harness.memory.store.executors import Op
from harness.memory.store.ops import memories as memory_ops
from harness.memory.store.plans import Plan, embedded, in_transaction, read
from harness.memory.store.rows import memory_from_row

__all__ = [
    "learn",
    "lesson_events",
    "restore",
    "retire",
    "retirement_proposals",
]

log = logging.getLogger(__name__)

_TEACHINGS = frozenset({"taught", "missed", "repeated"})


def learn(store: StoreBase, report: LessonReport | Mapping[str, Any]) -> Plan[Learned]:
    """Record what a finished run teaches its lessons (SPEC section 6a), in one transaction:
    each concrete rejection feedback reinforces the active lesson it restates (``repeated`` or
    ``missed``; the task becomes another context) or is written as a new lesson (through the
    guard); lessons the judge says misled get the task as a negative context; every other
    placed lesson is ``clear`` (accepted) or ``recalled``.

    Idempotent per run only in that a lesson gets one outcome per call: call it once, after
    the final verdict. ``Verdict.misled`` ids the run did not place (or of another tenant) are
    ignored with a warning, never an error.

    Raises:
        InvalidInput: a malformed report (e.g. a bad ``Verdict.key``); nothing written.
        StoreUnavailable / StoreError: the database failed; nothing written.
    """
    rep = report if isinstance(report, LessonReport) else LessonReport.model_validate(report)
    config = store.retriever.config.learning
    cands, rejected = _guarded_lessons(store, rep)
    task = _guarded_task(store, rep)
    texts = [task or ""] + [c.content for _, c in cands]
    vectors = yield from embedded(lambda: _embed(store.embedder, texts))
    if task is None and vectors is not None:
        vectors = [[], *vectors[1:]]  # a refused task is neither kept nor matched
    op = _learn_op(rep, task, cands, vectors, store.embedder, config, store.clock.now())
    learned: Learned = yield from in_transaction("learn", op, rep.tenant)
    return learned.model_copy(update={"rejected": tuple(rejected)})


def _guarded_lessons(
    store: StoreBase, rep: LessonReport
) -> tuple[list[tuple[int, MemoryCandidate]], list[tuple[MemoryCandidate, str]]]:
    """Each distinct concrete rejection feedback as a lesson candidate that passed the guard
    (with its verdict's index), and the guard's refusals (reported, never raised)."""
    out: list[tuple[int, MemoryCandidate]] = []
    rejected: list[tuple[MemoryCandidate, str]] = []
    for index, cand in lessons_from_verdicts(
        rep.verdicts,
        tenant=rep.tenant,
        user_id=rep.user_id,
        workflow_id=rep.workflow_id,
        task_input=rep.task,
        run_id=rep.run_id,
    ):
        try:
            guarded = validate_candidates([cand], store.settings, store.guard, single=True)
            out.append((index, guarded[0]))
        except MemoryRejected as exc:
            log.warning("lesson refused by the guard: %s", exc)
            rejected.append((cand, exc.reason))
    return out, rejected


def _guarded_task(store: StoreBase, rep: LessonReport) -> str | None:
    """The task as a lesson's context keeps it (the guard reads it as it reads every context),
    or None when the guard refuses it: the outcomes are recorded without the task's text."""
    task = rep.task[:4000]
    probe = MemoryCandidate(
        tenant=rep.tenant,
        scope=Scope.USER,
        scope_id=rep.user_id,
        kind=Kind.LESSON,
        content=task,
    )
    try:
        store.guard.check(probe)
    except MemoryRejected as exc:
        log.warning("run %s: the task is not kept as a lesson context: %s", rep.run_id, exc)
        return None
    return task


def _lesson_scope(rep: LessonReport) -> tuple[Scope, str]:
    """Where a run's lessons live: its workflow when it has one, else its user."""
    if rep.workflow_id:
        return Scope.WORKFLOW, rep.workflow_id
    return Scope.USER, rep.user_id


def _embed(embedder: Embedder | None, texts: list[str]) -> list[list[float]] | None:
    if embedder is None:
        return None
    try:
        return embedder.embed(texts)
    except Exception as exc:  # the model failing must not lose the run's record
        log.warning("embedding failed (%s); learning by keys and wording only", exc)
        return None


def _vector(raw: Any) -> list[float] | None:
    return None if raw is None else [float(x) for x in raw]


def _learn_op(
    rep: LessonReport,
    task: str | None,
    cands: list[tuple[int, MemoryCandidate]],
    vectors: list[list[float]] | None,
    embedder: Embedder | None,
    config: LearningConfig,
    now: datetime,
) -> Op[Learned]:
    tenant = rep.tenant
    scope, scope_id = _lesson_scope(rep)
    # One learner per lesson scope at a time: two runs restating one rule make one lesson.
    yield sql.lock_names([f"{tenant}\x1f{scope.value}\x1f{scope_id}\x1flessons"])
    placed = set(rep.placed)
    rows = (
        (
            yield sql.lessons_for_learning(
                tenant, scope, scope_id, sorted(placed), rep.user_id if rep.workflow_id else None
            )
        )
        .mappings()
        .all()
    )
    wordings: dict[uuid.UUID, list[list[float]]] = {}
    if rows and vectors is not None:
        found = yield sql.wordings_of(tenant, [r["id"] for r in rows])
        for memory_id, vec in found.all():
            wordings.setdefault(memory_id, []).append(_vector(vec) or [])
    known = [
        KnownLesson(
            id=r["id"],
            key=r["memory_key"],
            fingerprint=r["fingerprint"],
            vector=_vector(r["embedding"]),
            placed=r["id"] in placed,
            in_lesson_scope=r["scope"] == scope.value and r["scope_id"] == scope_id,
            wordings=tuple(wordings.get(r["id"], ())),
        )
        for r in rows
    ]
    placed_lessons = {k.id for k in known if k.placed}
    misled_ids, ignored = _misled_ids(rep, placed_lessons)
    task_vector = vectors[0] if vectors and vectors[0] else None
    feedback = [
        FeedbackSeen(
            verdict_id=cand.source.verdict_id or "",
            text=rep.verdicts[i].feedback or "",
            key=cand.key if rep.verdicts[i].key is not None else None,
            fingerprint=fingerprint(cand.content),
            vector=vectors[1 + n] if vectors else None,
            names_misled=any(_as_id(raw) in misled_ids for raw in rep.verdicts[i].misled),
        )
        for n, (i, cand) in enumerate(cands)
    ]
    actions = classify(
        feedback=feedback,
        lessons=known,
        misled_ids=misled_ids,
        accepted=rep.accepted,
        config=config,
    )
    by_feedback = {i: cand for i, cand in cands}
    written: list[Memory] = []
    events: list[dict[str, Any]] = []
    outcomes: list[tuple[uuid.UUID, str, str]] = []
    for action in actions:
        lesson_id = action.lesson_id
        if action.new_lesson:
            assert action.feedback_index is not None
            index = cands[action.feedback_index][0]
            cand = by_feedback[index]
            pairs: tuple[list[list[float] | None], list[list[float] | None]] | None = None
            if vectors is not None:
                pairs = ([vectors[1 + action.feedback_index]], [task_vector])
            (memory,) = yield from memory_ops.write_validated([cand], pairs, tenant, embedder, now)
            written.append(memory)
            lesson_id = memory.id
        assert lesson_id is not None
        with_task = action.polarity is not None or action.new_lesson
        events.append(
            {
                "tenant": tenant,
                "memory_id": lesson_id,
                "event": action.outcome.value,
                "polarity": action.polarity,
                "run_id": rep.run_id,
                "verdict_id": action.verdict_id,
                "actor": None,
                "task": task if with_task else None,
                "feedback": action.feedback,
                # A new lesson's first context is its own row's context vector.
                "embedding": task_vector if action.polarity and not action.new_lesson else None,
                # A reinforcing wording is compared with the next feedback (the first is the
                # lesson's content).
                "feedback_embedding": (
                    vectors[1 + action.feedback_index]
                    if vectors is not None
                    and action.feedback_index is not None
                    and not action.new_lesson
                    and action.polarity != "negative"
                    else None
                ),
                "at": now,
            }
        )
        outcomes.append((lesson_id, action.outcome.value, action.why))
    if events:
        yield sql.insert_events(), events
    # Each lesson of the caller's scopes learns its own scale: how similar it is to a task of
    # theirs that did not need it (the tasks that taught it are left out).
    needed = {a for a, outcome, _ in outcomes if outcome in _TEACHINGS}
    scores = [
        {"tenant": tenant, "memory_id": k.id, "n": 1, "mean": sim, "m2": 0.0}
        for k in known
        if k.id not in needed and (sim := cosine(task_vector, k.vector)) is not None
    ]
    if scores:
        yield sql.add_scores(), scores
    return Learned(written=tuple(written), outcomes=tuple(outcomes), ignored_misled=ignored)


def _as_id(raw: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        return None


def _misled_ids(
    rep: LessonReport, placed_lessons: set[uuid.UUID]
) -> tuple[list[uuid.UUID], tuple[str, ...]]:
    """``Verdict.misled`` ids the run placed (in order, once each); the others are ignored
    with a warning (not placed, not a lesson, another tenant's, or not an id at all)."""
    out: list[uuid.UUID] = []
    ignored: list[str] = []
    for verdict in rep.verdicts:
        for raw in verdict.misled:
            mid = _as_id(raw)
            if mid is not None and mid in placed_lessons:
                if mid not in out:
                    out.append(mid)
            else:
                ignored.append(str(raw))
    if ignored:
        log.warning(
            "run %s: Verdict.misled names %d id(s) its recall did not place as lessons; "
            "ignored: %s",
            rep.run_id,
            len(ignored),
            ", ".join(ignored[:5]),
        )
    return out, tuple(ignored)


# --- the record and the retirement queue -----------------------------------------------------


def lesson_events(
    store: StoreBase, memory_id: uuid.UUID | str, *, tenant: str
) -> Plan[list[dict[str, Any]]]:
    """Everything that happened to one of the tenant's lessons, oldest first: each teaching
    (task, the feedback's wording), each later run's outcome, each retirement decision (who,
    why). Empty for another tenant's id. Read-only."""
    mid = as_uuid(memory_id)
    tenant = check_identifier(tenant, "tenant")

    def op() -> Op[list[dict[str, Any]]]:
        return [dict(r) for r in (yield sql.events_of(tenant, mid)).mappings().all()]

    return (yield from read("lesson events", tenant, op))


def retirement_proposals(store: StoreBase, *, tenant: str) -> Plan[list[RetirementProposal]]:
    """The tenant's active lessons that should be retired (they kept misleading or not
    helping, or nothing happened to them for ``fade_after_days``), oldest first, with why.
    Read-only: nothing changes until an admin retires one."""
    tenant = check_identifier(tenant, "tenant")
    config = store.retriever.config.learning
    now = store.clock.now()

    def op() -> Op[list[RetirementProposal]]:
        out = []
        for row in (yield sql.lesson_stats(tenant)).mappings().all():
            record = LessonRecord(
                taught=int(row["taught"] or 0),
                clear=int(row["clear"] or 0),
                repeated=int(row["repeated"] or 0),
                misled=int(row["misled"] or 0),
                last_seen=row["last_seen"] or row["created_at"],
            )
            reason = retirement_reason(record, now, config)
            if reason is not None:
                out.append(
                    RetirementProposal(
                        memory=memory_from_row(row),
                        reason=reason,
                        taught=record.taught + int(row["missed"] or 0) + record.repeated,
                        clear=record.clear,
                        repeated=record.repeated,
                        misled=record.misled,
                        last_seen=record.last_seen,
                    )
                )
        return out

    return (yield from read("retirement proposals", tenant, op))


def retire(
    store: StoreBase,
    memory_id: uuid.UUID | str,
    approver: str,
    reason: str | None = None,
    *,
    tenant: str,
) -> Plan[Memory]:
    """Retire one of the tenant's active lessons (status ``retired``: never recalled, kept,
    reversible with :meth:`restore`); the decision is recorded with who and why.

    Raises:
        MemoryNotFound: no such memory for the tenant. ConflictingState: not an active lesson.
    """
    return (yield from _turn(store, memory_id, approver, reason, tenant, retiring=True))


def restore(
    store: StoreBase,
    memory_id: uuid.UUID | str,
    approver: str,
    reason: str | None = None,
    *,
    tenant: str,
) -> Plan[Memory]:
    """Bring a retired lesson back (status ``active``), recorded with who and why.

    Raises:
        MemoryNotFound: no such memory for the tenant. ConflictingState: it is not retired,
            or its key has an active item again.
    """
    return (yield from _turn(store, memory_id, approver, reason, tenant, retiring=False))


def _turn(
    store: StoreBase,
    memory_id: uuid.UUID | str,
    approver: str,
    reason: str | None,
    tenant: str,
    *,
    retiring: bool,
) -> Plan[Memory]:
    mid = as_uuid(memory_id)
    tenant = check_identifier(tenant, "tenant")
    approver = check_identifier(approver, "approver")
    why = check_reason(reason) if reason is not None else None
    op = _turn_op(tenant, mid, approver, why, store.clock.now(), retiring=retiring)
    return (yield from in_transaction("retire" if retiring else "restore", op, tenant))


def _turn_op(
    tenant: str,
    mid: uuid.UUID,
    approver: str,
    reason: str | None,
    now: datetime,
    *,
    retiring: bool,
) -> Op[Memory]:
    row = (yield sql.by_id(tenant, mid, for_update=True)).mappings().first()
    if row is None:
        raise MemoryNotFound(f"tenant {tenant!r} has no memory with id {mid}")
    want = Status.ACTIVE if retiring else Status.RETIRED
    if row["kind"] != Kind.LESSON.value or row["status"] != want.value:
        raise ConflictingState(
            f"memory {mid} is {row['status']} ({row['kind']}); only {want.value} lessons can be "
            + ("retired" if retiring else "restored")
        )
    if not retiring and row["memory_key"] is not None:
        scope = Scope(row["scope"])
        yield sql.lock_key(tenant, scope, row["scope_id"], row["memory_key"])
        active = (
            (yield sql.active_for_key(tenant, scope, row["scope_id"], row["memory_key"]))
            .mappings()
            .first()
        )
        if active is not None:
            raise ConflictingState(
                f"memory {mid}'s key {row['memory_key']!r} has an active item ({active['id']})"
            )
    status = Status.RETIRED if retiring else Status.ACTIVE
    yield sql.set_status(tenant, mid, {"status": status.value})
    yield (
        sql.insert_events(),
        [
            {
                "tenant": tenant,
                "memory_id": mid,
                "event": "retired" if retiring else "restored",
                "polarity": None,
                "run_id": None,
                "verdict_id": None,
                "actor": approver,
                "task": None,
                "feedback": reason,
                "embedding": None,
                "feedback_embedding": None,
                "at": now,
            }
        ],
    )
    return memory_from_row((yield sql.by_id(tenant, mid)).mappings().one())
