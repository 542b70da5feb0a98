"""Extractors: propose memory candidates from a completed run (rule-based and LLM-backed)."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Literal, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import InvalidInput
from harness.memory.domain.caller import Caller
from harness.memory.domain.conversations import check_conversation_id
from harness.memory.domain.types import Kind, MemoryCandidate, Origin, Scope, Source
from harness.settings import Settings

__all__ = ["ExtractionContext", "Extractor", "OpenAIExtractor", "RuleExtractor"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExtractionContext(Caller):
    """The caller a run was for (scope ids come from here, never from the model's output),
    and the run's id: a :class:`Caller` plus ``run_id``.

    ``ExtractionContext.for_caller(caller, run_id)``, or the fields in order (tenant, user_id,
    workflow_id, session_id, run_id). Raises ``InvalidInput`` naming a bad field.
    """

    run_id: str = ""
    #: The archived conversation (and its turn) the run answered, when it has one: the
    #: candidates keep them as their source (``Source.conversation_id`` / ``turn_id``).
    conversation_id: str | None = None
    turn_id: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.run_id, str) or not self.run_id:
            raise InvalidInput("run_id: must be a non-empty string", fields=("run_id",))
        if self.conversation_id is not None:
            check_conversation_id(self.conversation_id)
        if self.turn_id is not None and self.conversation_id is None:
            raise InvalidInput("turn_id: needs a conversation_id", fields=("turn_id",))

    @classmethod
    def for_caller(
        cls,
        caller: Caller,
        run_id: str,
        *,
        conversation_id: str | None = None,
        turn_id: str | None = None,
    ) -> ExtractionContext:
        """The context of run ``run_id`` made for ``caller`` (in that archived conversation
        and turn, when given)."""
        return cls(
            caller.tenant,
            caller.user_id,
            caller.workflow_id,
            caller.session_id,
            run_id,
            conversation_id,
            turn_id,
        )

    @property
    def caller(self) -> Caller:
        """The identity alone."""
        return Caller(self.tenant, self.user_id, self.workflow_id, self.session_id)


class Extractor(Protocol):
    """Reads a completed run's input and output and proposes candidates for the next runs."""

    def extract(
        self, user_input: str, output: str, ctx: ExtractionContext
    ) -> list[MemoryCandidate]: ...


def _scope_id(scope: Scope, ctx: ExtractionContext) -> str | None:
    return {
        Scope.USER: ctx.user_id,
        Scope.WORKFLOW: ctx.workflow_id,
        Scope.SESSION: ctx.session_id,
        Scope.PLATFORM: None,
    }[scope]


def _candidate(
    ctx: ExtractionContext,
    scope: Scope,
    kind: Kind,
    content: str,
    key: str | None = None,
    priority: int = 0,
) -> MemoryCandidate | None:
    scope_id = _scope_id(scope, ctx)
    if scope is not Scope.PLATFORM and not scope_id:
        return None
    try:
        return MemoryCandidate(
            tenant=ctx.tenant,
            scope=scope,
            scope_id=scope_id,
            kind=kind,
            key=key,
            content=content,
            priority=priority,
            source=Source(
                origin=Origin.COMPLETION,
                run_id=ctx.run_id,
                conversation_id=ctx.conversation_id,
                turn_id=ctx.turn_id,
            ),
        )
    except InvalidInput as exc:
        log.warning("extractor proposed an invalid candidate, dropped: %s", exc)
        return None


_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_RULES: tuple[tuple[re.Pattern[str], Scope, Kind], ...] = (
    (
        re.compile(r"^\s*(?:company|platform|team)[- ]wide policy\s*[:,-]\s*(?P<x>.+)", re.I),
        Scope.PLATFORM,
        Kind.CONSTRAINT,
    ),
    (
        re.compile(r"^\s*for this workflow\s*[:,-]?\s*(?P<x>.+)", re.I),
        Scope.WORKFLOW,
        Kind.PREFERENCE,
    ),
    (
        re.compile(r"^\s*for this (?:session|conversation)\s*[:,-]?\s*(?P<x>.+)", re.I),
        Scope.SESSION,
        Kind.PREFERENCE,
    ),
    (re.compile(r"^\s*from now on\s*[:,-]?\s*(?P<x>.+)", re.I), Scope.USER, Kind.PREFERENCE),
    (
        re.compile(r"^\s*(?:please\s+)?remember(?:\s+that)?\s*[:,-]?\s*(?P<x>.+)", re.I),
        Scope.USER,
        Kind.FACT,
    ),
    (
        re.compile(r"^\s*(?P<x>i (?:prefer|like|want|would like|always want)\b.+)", re.I),
        Scope.USER,
        Kind.PREFERENCE,
    ),
)


class RuleExtractor:
    """Deterministic: explicit "remember ...", "from now on ...", preference phrases and
    "company-wide policy: ..." statements in the user's input become candidates."""

    def extract(
        self, user_input: str, output: str, ctx: ExtractionContext
    ) -> list[MemoryCandidate]:
        out: list[MemoryCandidate] = []
        for match in _SENTENCE.finditer(user_input):
            sentence = match.group(0).strip()
            for pattern, scope, kind in _RULES:
                found = pattern.match(sentence)
                if found:
                    text = found.group("x").strip().rstrip(".!?").strip()
                    if text:
                        cand = _candidate(ctx, scope, kind, text[0].upper() + text[1:] + ".")
                        if cand:
                            out.append(cand)
                    break
        return out


class _Proposed(BaseModel):
    model_config = ConfigDict(extra="ignore")
    scope: Literal["session", "workflow", "user", "platform"]
    kind: Literal["constraint", "preference", "lesson", "fact", "decision"]
    content: str = Field(min_length=1, max_length=2000)
    key: str | None = Field(default=None, max_length=200)
    priority: int = Field(default=0, ge=-10, le=10)


class _Proposal(BaseModel):
    model_config = ConfigDict(extra="ignore")
    candidates: list[_Proposed] = Field(default_factory=list, max_length=20)


SYSTEM_PROMPT = """You extract durable memory from one completed agent run.
Return JSON only: {"candidates": [{"scope": "session|workflow|user|platform",
"kind": "constraint|preference|lesson|fact|decision", "content": "...", "key": null,
"priority": 0}]}.
Propose only what should change a later run's decision: stated preferences, explicit
"remember"/"from now on" requests, conventions the workflow must keep. Never include
secrets, credentials or personal data beyond preferences. Return {"candidates": []} when
nothing qualifies."""


class OpenAIExtractor:
    """An OpenAI-compatible chat-completions extractor. Malformed output: no candidates, a warning."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 20.0,
        client: httpx.Client | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._client = client or httpx.Client(timeout=timeout_s)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> OpenAIExtractor:
        """Built from ``HARNESS_LLM_BASE_URL``, ``_MODEL``, ``_API_KEY`` and ``_TIMEOUT_S``.

        Raises:
            InvalidInput: naming the variable, when the base URL or the model is unset.
        """
        s = settings or Settings.from_env()
        for name, value in (
            ("HARNESS_LLM_BASE_URL", s.llm_base_url),
            ("HARNESS_LLM_MODEL", s.llm_model),
        ):
            if not value:
                raise InvalidInput(f"{name} is not set", fields=(name,))
        assert s.llm_base_url is not None and s.llm_model is not None
        return cls(
            s.llm_base_url,
            s.llm_model,
            api_key=s.llm_api_key.get_secret_value() if s.llm_api_key else None,
            timeout_s=s.llm_timeout_s,
        )

    def extract(
        self, user_input: str, output: str, ctx: ExtractionContext
    ) -> list[MemoryCandidate]:
        body = {
            "model": self.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": json.dumps({"input": user_input, "output": output})},
            ],
        }
        try:
            resp = self._client.post(
                f"{self.base_url}/chat/completions", json=body, headers=self._headers
            )
            resp.raise_for_status()
            content = resp.json()["choices"][0]["message"]["content"]
            proposal = _Proposal.model_validate_json(content)
        except (
            httpx.HTTPError,
            KeyError,
            IndexError,
            TypeError,
            ValueError,
            ValidationError,
        ) as exc:
            log.warning(
                "extractor returned nothing usable (%s: %s); no candidates", type(exc).__name__, exc
            )
            return []
        out = []
        for p in proposal.candidates:
            cand = _candidate(ctx, Scope(p.scope), Kind(p.kind), p.content, p.key, p.priority)
            if cand:
                out.append(cand)
        return out

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()
