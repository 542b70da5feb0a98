"""Lessons that learn: the rules deciding what a finished run does to the lessons it touched.

Pure: no database, no model. After the final verdict the store hands :func:`classify` what
the run's recall placed, the judge's verdicts, and the active lessons the feedback may restate
(with their content vectors and the feedback's); it answers what to record (SPEC section 6a):

- a feedback that restates an active lesson of the run's lesson scope (the same
  ``Verdict.key``; else the same fingerprint or a content cosine at or above
  :attr:`LearningConfig.restate_cosine`) **reinforces** it: ``repeated`` when the run's recall
  had placed it, else ``missed`` (the task becomes another positive context);
- a feedback restating nothing is a **new lesson** (taught once, its task its first context);
- a lesson the judge names in ``Verdict.misled``, or that a "does not apply" feedback restates,
  is **misled** (the task becomes a negative context), never reinforced;
- every other placed lesson is **clear** when the final verdict accepted, else ``recalled``.

Recall reads the record back through :func:`standing` (a log-odds term) and
:func:`misled_here` (a gate); the retirement queue through :func:`retirement_reason`.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

import numpy as np
from pydantic import Field, StrictBool, StrictStr, field_validator

from harness.identifiers import identifier_problem
from harness.memory.domain.types import CallerFields, FrozenModel, Memory, MemoryCandidate

__all__ = [
    "DOES_NOT_APPLY",
    "LESSON_KEY_MAX",
    "Action",
    "FeedbackSeen",
    "Judged",
    "KnownLesson",
    "Learned",
    "LearningConfig",
    "LessonRecord",
    "LessonReport",
    "Outcome",
    "RetirementProposal",
    "check_verdict_key",
    "classify",
    "cosine",
    "misled_as_text",
    "misled_here",
    "retirement_reason",
    "stand_out",
    "standing",
]


#: The longest ``Verdict.key`` (it becomes the memory key ``lesson.<key>``, at most 200).
LESSON_KEY_MAX = 150


def check_verdict_key(value: str | None) -> str | None:
    """A judge's check name as given, or ``ValueError`` saying why it cannot be a key (the
    identifier rules: no surrounding spaces or control characters, at most 150 characters)."""
    if value is None:
        return None
    problem = identifier_problem(value, max_length=LESSON_KEY_MAX)
    if problem is not None:
        raise ValueError(problem)
    return value


def misled_as_text(value: Any) -> Any:
    """``Verdict.misled`` as given, ids written as text (UUIDs or strings are both accepted)."""
    if isinstance(value, (list, tuple)):
        return tuple(str(v) if isinstance(v, uuid.UUID) else v for v in value)
    return value


class Judged(FrozenModel):
    """What learning reads of one verdict: accepted or not, the feedback, the check that
    failed (``key``) and the memories the judge says did not apply (``misled``, as given:
    ids the run did not place are ignored with a warning)."""

    accepted: StrictBool
    feedback: StrictStr | None = None
    id: StrictStr = Field(min_length=1, max_length=200)
    key: StrictStr | None = None
    misled: tuple[str, ...] = ()

    @field_validator("key")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        return check_verdict_key(value)

    @field_validator("misled", mode="before")
    @classmethod
    def _ids_as_text(cls, value: Any) -> Any:
        return misled_as_text(value)


class LessonReport(CallerFields):
    """A finished run, for ``store.learn``: who ran it, its id and task, the memories its
    recall placed (``placed``; may be empty when the caller did not recall) and its verdicts
    in order (the last one final)."""

    run_id: StrictStr = Field(min_length=1, max_length=200)
    task: StrictStr = Field(min_length=1, max_length=100_000)
    placed: tuple[uuid.UUID, ...] = ()
    verdicts: tuple[Judged, ...] = ()

    @property
    def accepted(self) -> bool:
        """True when the final verdict accepted."""
        return bool(self.verdicts) and self.verdicts[-1].accepted


class Learned(FrozenModel):
    """What ``store.learn`` recorded: new lessons, each outcome (lesson id, outcome, why),
    guard refusals of feedback (with the reason) and the misled ids it ignored."""

    written: tuple[Memory, ...] = ()
    outcomes: tuple[tuple[uuid.UUID, str, str], ...] = ()
    rejected: tuple[tuple[MemoryCandidate, str], ...] = ()
    ignored_misled: tuple[str, ...] = ()

    def of(self, outcome: str) -> list[uuid.UUID]:
        """The lessons that got ``outcome``."""
        return [lesson for lesson, got, _ in self.outcomes if got == outcome]


class Outcome(StrEnum):
    """What happened to a lesson in one run (a ``lesson_events.event``)."""

    TAUGHT = "taught"
    REPEATED = "repeated"
    MISSED = "missed"
    MISLED = "misled"
    CLEAR = "clear"
    RECALLED = "recalled"


#: Feedback saying a placed lesson was wrong for this task (the judge's words, any casing).
DOES_NOT_APPLY = re.compile(
    r"\b(?:does|do|did)\s*(?:not|n['’]t)\s+apply\b|\bnot\s+applicable\b|\bisn['’]t\s+applicable\b"
    r"|\bdoes\s+not\s+belong\b|\bwrong\s+(?:here|for\s+this)\b|\bnot\s+(?:wanted|needed)\s+here\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class LearningConfig:
    """The thresholds of learning, fitted on ``bench/data/stream.json``'s dev split by
    ``python -m bench.stream fit`` (see BENCHMARKS.md); ``fade_after_days``: a lesson no run
    placed or taught for that long loses ``ln 2`` of log-odds per such period, and is proposed
    for retirement; ``retire_after_misled``: proposed once it misled that often more than it
    was clear; ``min_tasks`` and ``min_spread``: how many of its scope's tasks a lesson must
    have been compared with before :func:`stand_out` answers, and the least spread assumed."""

    restate_cosine: float = 0.63
    misled_cosine: float = 0.56
    fade_after_days: float = 180.0
    retire_after_misled: int = 2
    min_tasks: int = 5
    min_spread: float = 0.03


@dataclass(frozen=True)
class KnownLesson:
    """An active lesson a run's feedback may restate: its identity, key, fingerprint, content
    vector (None without a model), whether the run's recall placed it, whether it lives in the
    run's lesson scope, and the vectors of the feedback wordings it was taught in since."""

    id: uuid.UUID
    key: str | None
    fingerprint: str
    vector: Sequence[float] | None
    placed: bool
    in_lesson_scope: bool
    wordings: tuple[Sequence[float], ...] = ()

    def nearest(self, vector: Sequence[float] | None) -> float | None:
        """The best cosine of ``vector`` to the lesson's content or any wording it was taught in."""
        sims = [cosine(vector, v) for v in (self.vector, *self.wordings)]
        found = [s for s in sims if s is not None]
        return max(found) if found else None


@dataclass(frozen=True)
class FeedbackSeen:
    """One concrete rejection feedback of the run: its verdict, key, fingerprint and vector;
    ``names_misled``: its verdict named placed lessons in ``Verdict.misled`` (a "does not
    apply" feedback is then about them, not a rule of its own)."""

    verdict_id: str
    text: str
    key: str | None
    fingerprint: str
    vector: Sequence[float] | None
    names_misled: bool = False


@dataclass(frozen=True)
class Action:
    """One thing to record: an ``outcome`` for ``lesson_id`` (``TAUGHT`` with
    ``new_lesson=True`` means "write the feedback as a new lesson"), with the verdict and
    feedback that caused it, and whether the run's task becomes a context (``polarity``)."""

    outcome: Outcome
    lesson_id: uuid.UUID | None
    verdict_id: str | None = None
    feedback: str | None = None
    polarity: str | None = None
    new_lesson: bool = False
    feedback_index: int | None = None
    why: str = ""


def cosine(a: Sequence[float] | None, b: Sequence[float] | None) -> float | None:
    """Cosine similarity of two vectors; None when either is missing or zero."""
    if a is None or b is None:
        return None
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norm = float(np.linalg.norm(va) * np.linalg.norm(vb))
    return float(va @ vb) / norm if norm else None


def _restates(fb: FeedbackSeen, lesson: KnownLesson, config: LearningConfig) -> tuple[bool, str]:
    if fb.key is not None and lesson.key == fb.key:
        return True, f"same key {fb.key!r}"
    if fb.fingerprint == lesson.fingerprint:
        return True, "same wording"
    sim = lesson.nearest(fb.vector)
    if sim is not None and sim >= config.restate_cosine:
        return True, f"restates it (cosine {sim:.2f} >= {config.restate_cosine:.2f})"
    return False, ""


def _same_rule(fb: FeedbackSeen, earlier: FeedbackSeen, config: LearningConfig) -> bool:
    if fb.key is not None and fb.key == earlier.key:
        return True
    sim = cosine(fb.vector, earlier.vector)
    return fb.fingerprint == earlier.fingerprint or (
        sim is not None and sim >= config.restate_cosine
    )


def _best(
    fb: FeedbackSeen, lessons: Sequence[KnownLesson], config: LearningConfig
) -> tuple[KnownLesson | None, str]:
    """The lesson ``fb`` restates: a key match first, then the nearest restating one."""
    keyed = [x for x in lessons if fb.key is not None and x.key == fb.key]
    if keyed:
        return keyed[0], f"same key {fb.key!r}"
    found: list[tuple[float, str, KnownLesson, str]] = []
    for lesson in lessons:
        ok, why = _restates(fb, lesson, config)
        if ok:
            sim = lesson.nearest(fb.vector) or 1.0
            found.append((-sim, str(lesson.id), lesson, why))
    if not found:
        return None, ""
    found.sort(key=lambda t: (t[0], t[1]))
    return found[0][2], found[0][3]


def classify(
    *,
    feedback: Sequence[FeedbackSeen],
    lessons: Sequence[KnownLesson],
    misled_ids: Sequence[uuid.UUID],
    accepted: bool,
    config: LearningConfig,
) -> list[Action]:
    """What a finished run records (see the module's rules), in a deterministic order: one
    action per feedback (in verdict order), then one per placed lesson not yet accounted for.
    ``misled_ids`` must already be limited to lessons the run placed. A lesson gets at most
    one outcome per run; a new lesson created by an earlier feedback of the run can be
    restated by a later one (nothing more is recorded for it)."""
    actions: list[Action] = []
    touched: set[uuid.UUID] = set()
    placed = {x.id: x for x in lessons if x.placed}
    for lesson_id in misled_ids:
        if lesson_id in placed and lesson_id not in touched:
            touched.add(lesson_id)
            actions.append(
                Action(Outcome.MISLED, lesson_id, polarity="negative", why="Verdict.misled")
            )
    created: list[FeedbackSeen] = []
    for i, fb in enumerate(feedback):
        if DOES_NOT_APPLY.search(fb.text):
            if fb.names_misled:
                continue  # about the lessons its verdict named (recorded above)
            target = _misled_target(fb, list(placed.values()), config)
            if target is not None:
                if target.id not in touched:
                    touched.add(target.id)
                    actions.append(
                        Action(
                            Outcome.MISLED,
                            target.id,
                            fb.verdict_id,
                            fb.text,
                            polarity="negative",
                            feedback_index=i,
                            why="the feedback says it does not apply",
                        )
                    )
                continue
        lesson, why = _best(fb, [x for x in lessons if x.in_lesson_scope or x.placed], config)
        if lesson is not None:
            if lesson.id in touched:
                continue
            touched.add(lesson.id)
            if lesson.placed:
                actions.append(
                    Action(Outcome.REPEATED, lesson.id, fb.verdict_id, fb.text, None, False, i, why)
                )
            else:
                actions.append(
                    Action(
                        Outcome.MISSED, lesson.id, fb.verdict_id, fb.text, "positive", False, i, why
                    )
                )
            continue
        if any(_same_rule(fb, earlier, config) for earlier in created):
            continue  # restates a lesson this run is already writing
        created.append(fb)
        actions.append(
            Action(
                Outcome.TAUGHT,
                None,
                fb.verdict_id,
                fb.text,
                "positive",
                new_lesson=True,
                feedback_index=i,
                why="restates no active lesson",
            )
        )
    for lesson_id in placed:
        if lesson_id not in touched:
            outcome = Outcome.CLEAR if accepted else Outcome.RECALLED
            actions.append(Action(outcome, lesson_id, why="placed; " + outcome.value))
    return actions


def _misled_target(
    fb: FeedbackSeen, placed: Sequence[KnownLesson], config: LearningConfig
) -> KnownLesson | None:
    """The placed lesson a "does not apply" feedback is about: the key's, else the nearest
    at or above :attr:`LearningConfig.misled_cosine`."""
    for lesson in placed:
        if fb.key is not None and lesson.key == fb.key:
            return lesson
    best: tuple[float, str] | None = None
    target = None
    for lesson in placed:
        sim = lesson.nearest(fb.vector)
        if sim is not None and sim >= config.misled_cosine:
            rank = (-sim, str(lesson.id))
            if best is None or rank < best:
                best, target = rank, lesson
    return target


@dataclass(frozen=True)
class LessonRecord:
    """What later runs did with a lesson: counts by outcome and its last activity."""

    taught: int = 0
    clear: int = 0
    repeated: int = 0
    misled: int = 0
    last_seen: datetime | None = None


class RetirementProposal(FrozenModel):
    """An active lesson proposed for retirement: the lesson, why, and its record."""

    memory: Memory
    reason: str
    taught: int
    clear: int
    repeated: int
    misled: int
    last_seen: datetime | None


def standing(record: LessonRecord, now: datetime, config: LearningConfig) -> float:
    """The log-odds a lesson's record adds to its relevance (never positive): the log of the
    share of its placements that did not go wrong, ``ln((clear+1) / (clear+repeated+misled+1))``,
    and ``-ln 2`` per :attr:`LearningConfig.fade_after_days` since anything last happened to
    it (a never-used lesson fades). Deterministic."""
    bad = record.repeated + record.misled
    value = math.log((record.clear + 1) / (record.clear + bad + 1)) if bad else 0.0
    if record.last_seen is not None and config.fade_after_days > 0:
        idle = (now - record.last_seen) / timedelta(days=config.fade_after_days)
        if idle >= 1:
            value -= math.log(2) * math.floor(idle)
    return value


def stand_out(
    sim: float | None,
    n: int | None,
    mean: float | None,
    m2: float | None,
    config: LearningConfig,
) -> float | None:
    """How far ``sim`` (this task's cosine to a lesson's content) stands above the lesson's
    mean cosine to its scope's earlier tasks, in standard deviations (at least
    :attr:`LearningConfig.min_spread`); None before :attr:`LearningConfig.min_tasks` tasks.
    Each lesson has its own scale: a cosine of 0.25 is nothing for one and a clear match for
    another."""
    if sim is None or n is None or mean is None or m2 is None or n < config.min_tasks:
        return None
    spread = max(math.sqrt(m2 / max(n - 1, 1)), config.min_spread)
    return (sim - mean) / spread


def misled_here(
    negative_sim: float | None, context_sim: float | None, content_sim: float | None
) -> bool:
    """True when the task is at least as close to a task the lesson misled as to anything the
    lesson was taught from (or says): it is left out, even from a narrow scope."""
    if negative_sim is None:
        return False
    positive = max((v for v in (context_sim, content_sim) if v is not None), default=-1.0)
    return negative_sim >= positive


def retirement_reason(record: LessonRecord, now: datetime, config: LearningConfig) -> str | None:
    """Why a lesson should be proposed for retirement, or None: it misled (or was repeated
    without helping) ``retire_after_misled`` times more than it was clear, or nothing has
    happened to it for ``fade_after_days``."""
    bad = record.misled + record.repeated
    if bad - record.clear >= config.retire_after_misled:
        return (
            f"misled {record.misled}, repeated {record.repeated}, clear {record.clear}: "
            "it keeps not helping"
        )
    if (
        record.last_seen is not None
        and config.fade_after_days > 0
        and now - record.last_seen >= timedelta(days=config.fade_after_days)
    ):
        return f"not placed or taught since {record.last_seen.date().isoformat()}"
    return None
