"""Pure rules turning a judge's feedback into a lesson candidate."""

from __future__ import annotations

import hashlib
import re

from harness.fingerprint import normalize
from harness.memory.types import Kind, MemoryCandidate, Origin, Scope, Source

__all__ = ["is_concrete_feedback", "lesson_candidate", "lesson_key"]

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
        content=f"A reviewer rejected an earlier answer: {feedback.strip()}",
        context=task_input[:4000],
        priority=1,
        source=Source(origin=Origin.VERDICT, run_id=run_id, verdict_id=verdict_id),
    )
