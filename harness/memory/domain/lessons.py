"""Pure rules turning a judge's feedback into a lesson candidate."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol

from harness.fingerprint import fingerprint, normalize
from harness.memory.domain.types import Kind, MemoryCandidate, Origin, Scope, Source

__all__ = [
    "JudgedAttempt",
    "is_concrete_feedback",
    "lesson_candidate",
    "lesson_content",
    "lesson_key",
    "lessons_from_verdicts",
]

_GENERIC = {
    "error",
    "failed",
    "failure",
    "rejected",
    "reject",
    "retry",
    "try again",
    "bad",
    "wrong",
    "no",
    "not good",
    "incorrect",
    "invalid",
    "internal error",
    "timeout",
    "unknown error",
    "please retry",
    "does not meet requirements",
    "not acceptable",
    "fix it",
    "redo",
}
_WORD = re.compile(r"\w+")


def is_concrete_feedback(feedback: str | None) -> bool:
    """True when feedback says something specific: at least four words and not a stock phrase."""
    if not feedback:
        return False
    norm = normalize(feedback).strip(" .!")
    if norm in _GENERIC or norm.startswith(("error:", "exception:", "traceback")):
        return False
    return len(_WORD.findall(norm)) >= 4


def lesson_key(feedback: str) -> str:
    """Stable key of a correction: the same normalised feedback supersedes, never duplicates."""
    digest = hashlib.sha256(normalize(feedback).strip(" .!").encode()).hexdigest()[:16]
    return f"lesson.{digest}"


def lesson_content(feedback: str) -> str:
    """The text of the lesson a feedback teaches (what recall shows, and what is embedded)."""
    return f"A reviewer rejected an earlier answer: {feedback.strip()}"


def lesson_candidate(
    *,
    tenant: str,
    user_id: str,
    workflow_id: str | None,
    feedback: str,
    task_input: str,
    run_id: str,
    verdict_id: str,
) -> MemoryCandidate:
    """The lesson a rejection teaches: scope workflow when there is one, else user.

    The run's input is kept as the lesson's context, so the next similar task finds it.
    """
    scope, scope_id = (Scope.WORKFLOW, workflow_id) if workflow_id else (Scope.USER, user_id)
    return MemoryCandidate(
        tenant=tenant,
        scope=scope,
        scope_id=scope_id,
        kind=Kind.LESSON,
        key=lesson_key(feedback),
        content=lesson_content(feedback),
        context=task_input[:4000],
        priority=1,
        source=Source(origin=Origin.VERDICT, run_id=run_id, verdict_id=verdict_id),
    )


class JudgedAttempt(Protocol):
    """What a lesson needs of a judge's verdict (``harness.run.types.Verdict`` and
    ``harness.memory.domain.learning.Judged`` have it)."""

    @property
    def accepted(self) -> bool: ...
    @property
    def feedback(self) -> str | None: ...
    @property
    def id(self) -> str: ...
    @property
    def key(self) -> str | None: ...


def lessons_from_verdicts(
    verdicts: Sequence[JudgedAttempt],
    *,
    tenant: str,
    user_id: str,
    workflow_id: str | None,
    task_input: str,
    run_id: str,
) -> list[tuple[int, MemoryCandidate]]:
    """One lesson per distinct concrete feedback of a rejecting verdict (SPEC section 6), in
    verdict order, each with its verdict's index; acceptances and generic complaints teach
    nothing. A verdict naming its check (``key``) gives the lesson the key ``lesson.<key>``."""
    lessons: list[tuple[int, MemoryCandidate]] = []
    seen: set[str] = set()
    for index, verdict in enumerate(verdicts):
        feedback = verdict.feedback
        if verdict.accepted or feedback is None or not is_concrete_feedback(feedback):
            continue
        fp = fingerprint(feedback)
        if fp in seen:
            continue
        seen.add(fp)
        cand = lesson_candidate(
            tenant=tenant,
            user_id=user_id,
            workflow_id=workflow_id,
            feedback=feedback,
            task_input=task_input,
            run_id=run_id,
            verdict_id=verdict.id,
        )
        if verdict.key is not None:
            cand = cand.model_copy(update={"key": f"lesson.{verdict.key}"})
        lessons.append((index, cand))
    return lessons
