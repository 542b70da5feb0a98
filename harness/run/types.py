"""Values and protocols of a run: its input, limits, verdicts, outcome, model and judge."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import Field, StrictBool, StrictStr, field_validator

from harness.errors import InvalidInput
from harness.memory.domain.learning import Learned, check_verdict_key, misled_as_text
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import CallerFields, FrozenModel, Memory, MemoryCandidate

__all__ = [
    "AsyncModelClient",
    "AsyncOutputJudge",
    "EngineConfig",
    "Message",
    "ModelClient",
    "OutputJudge",
    "RunInput",
    "RunOutcome",
    "Verdict",
]

Message = dict[str, Any]


class ModelClient(Protocol):
    """The agent's model: messages in, text (an answer) or a dict (a RecallSet tool call) out."""

    def __call__(self, messages: list[Message]) -> str | dict[str, Any]: ...


class AsyncModelClient(Protocol):
    """:class:`ModelClient` as a coroutine function (for :meth:`Engine.arun`)."""

    def __call__(self, messages: list[Message]) -> Awaitable[str | dict[str, Any]]: ...


class Verdict(FrozenModel):
    """A judge's decision on one attempt.

    ``key`` (optional) names the check that failed: it becomes the lesson's memory key
    (``lesson.<key>``), so repeated failures of one check update one lesson (identifier rules,
    at most 150 characters: ``InvalidInput`` naming ``Verdict.key`` otherwise). ``misled``
    (optional) lists memory ids the judge says did not apply to this task; an id the run's
    recall did not place is ignored with a logged warning.
    """

    accepted: StrictBool
    feedback: StrictStr | None = None
    id: StrictStr = Field(default_factory=lambda: f"v-{uuid.uuid4().hex[:12]}")
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


class OutputJudge(Protocol):
    """Decides whether an output is acceptable for an input."""

    def __call__(self, input: str, output: str) -> Verdict: ...


class AsyncOutputJudge(Protocol):
    """:class:`OutputJudge` as a coroutine function (for :meth:`Engine.arun`)."""

    def __call__(self, input: str, output: str) -> Awaitable[Verdict]: ...


class RunInput(CallerFields):
    """One run's identity (from the caller's verified context) and its input.

    Identity as flat keywords (``tenant``, ``user_id``, ``workflow_id``, ``session_id``) or
    ``RunInput.for_caller(caller, input=...)``; ``.caller`` gives the :class:`Caller`.
    """

    input: StrictStr = Field(min_length=1, max_length=100_000)
    #: The archived conversation this run answers in, and the turn it answers (optional):
    #: memories the run's extractor writes keep them as their source.
    conversation_id: StrictStr | None = Field(
        default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$"
    )
    turn_id: StrictStr | None = Field(
        default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$"
    )


#: (lowest, highest) accepted value of each EngineConfig field.
_LIMITS: dict[str, tuple[int, int]] = {
    "budget_chars": (0, 1_000_000),
    "max_items": (0, 10_000),
    "max_item_chars": (1, 1_000_000),
    "max_tool_calls_per_attempt": (0, 1_000),
    "recallset_max_items": (1, 100_000),
}


@dataclass(frozen=True)
class EngineConfig:
    """Recall limits for the first call, and guards against runaway tool use.

    Raises:
        InvalidInput: a field is not an integer within its range (names the field).
    """

    budget_chars: int = 2000
    max_items: int = 20
    max_item_chars: int = 500
    max_tool_calls_per_attempt: int = 16
    recallset_max_items: int = 50

    def __post_init__(self) -> None:
        for name, (low, high) in _LIMITS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidInput(
                    f"{name}: must be an integer, not {type(value).__name__}", fields=(name,)
                )
            if not low <= value <= high:
                raise InvalidInput(f"{name}: {value} is outside {low}..{high}", fields=(name,))


@dataclass
class RunOutcome:
    """What a run produced. ``rejected_candidates`` and ``write_errors`` are never silent."""

    run_id: str
    output: str | None
    attempts: int
    verdicts: list[Verdict]
    memories_written: list[Memory] = field(default_factory=list)
    recall: RecallResult | None = None
    rejected_candidates: list[tuple[MemoryCandidate, str]] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)
    #: What the run taught its lessons (each outcome); None when learning failed.
    learned: Learned | None = None

    @property
    def accepted(self) -> bool:
        """True when the final verdict accepted the output."""
        return bool(self.verdicts) and self.verdicts[-1].accepted
