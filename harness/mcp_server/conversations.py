"""Conversation recall over MCP: the agent's tools on the caller's own archive, and the keyed
``POST /v1/conversations/{id}`` a chat gateway posts each finished turn's conversation to.

Identity always comes from the verified caller (the token), never from a tool's arguments: a
conversation id of another user or tenant is "not found". The ingest path is the trusted one:
it takes the tenant and user from the body, behind the ingest key.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from harness.errors import (
    EmbeddingModelMismatch,
    HarnessError,
    InvalidInput,
    MemoryNotFound,
    StoreError,
)
from harness.identifiers import identifier_problem
from harness.mcp_server.ingest import IngestHandler
from harness.memory import AsyncMemoryStore
from harness.memory.domain.caller import Caller
from harness.memory.domain.conversations import (
    NO_CONVERSATIONS,
    NOTHING_RELEVANT,
    check_conversation_id,
    render_turns,
)
from harness.memory.domain.idempotency import IdempotencyOutcome

__all__ = [
    "CONVERSATIONS_UNAVAILABLE",
    "MAX_CONVERSATION_BODY",
    "RECALL_CONVERSATIONS_DESCRIPTION",
    "ConversationIngestHandler",
    "register_conversation_tools",
]

log = logging.getLogger(__name__)

CONVERSATIONS_UNAVAILABLE = "Conversation memory is unavailable right now; continue without it."

RECALL_CONVERSATIONS_DESCRIPTION = """Search the current user's own earlier conversations
with this assistant. Use it when the user refers to something discussed before ("last time",
"earlier", "what did we decide", "the numbers we used", "who was going to"). Use short queries
built around identifiers and key nouns ("K-2 machine ticket", "N-11 upgrade decision"), not
the user's whole sentence; search again with other words if the first try misses.
Returns dated passages from past chats, verbatim, each hit turn (marked *) with the turns
around it and the conversation's id (read more of it with read_conversation). Quote them; do
not invent details. It says so when nothing relevant is stored."""


#: The largest conversation body taken (2,000 turns of about 4,000 characters).
MAX_CONVERSATION_BODY = 8_000_000


def _answer(text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def register_conversation_tools(
    server: MCPServer,
    store: AsyncMemoryStore,
    caller: Callable[[], Caller],
    *,
    k: int = 3,
    neighbours: int = 1,
    output_chars: int = 4000,
    timeout_s: float = 10.0,
) -> None:
    """Add ``recall_my_conversations``, ``read_conversation``, ``find_in_conversation`` and
    ``list_my_conversations`` to ``server``, each on ``caller()``'s own archive. A store
    failure or a call past ``timeout_s`` answers :data:`CONVERSATIONS_UNAVAILABLE` (the
    agent goes on); no IO until a tool is called."""

    async def guarded(tool: str, call: Callable[[Caller], Any]) -> CallToolResult:
        who = caller()
        try:
            with anyio.fail_after(timeout_s):
                text = await call(who)
        except MemoryNotFound as exc:
            return _answer(f"error: {tool}: {exc}", is_error=True)
        except InvalidInput as exc:
            return _answer(f"error: {tool}: {exc}", is_error=True)
        except TimeoutError:
            log.warning("%s timed out after %.1fs", tool, timeout_s)
            return _answer(CONVERSATIONS_UNAVAILABLE, is_error=True)
        except HarnessError as exc:
            log.warning("%s failed: %s", tool, exc)
            return _answer(CONVERSATIONS_UNAVAILABLE, is_error=True)
        return _answer(text[:output_chars])

    @server.tool(name="recall_my_conversations", description=RECALL_CONVERSATIONS_DESCRIPTION)
    async def recall_my_conversations(query: str) -> CallToolResult:
        async def run(who: Caller) -> str:
            result = await store.recall_conversations(
                tenant=who.tenant,
                user_id=who.user_id,
                query=query[:500],
                k=k,
                neighbours=neighbours,
                budget_chars=output_chars,
            )
            if result.degraded:
                raise StoreError("conversation recall degraded")
            if result.passages:
                return result.text
            listed = await store.list_conversations(tenant=who.tenant, user_id=who.user_id, limit=1)
            return NOTHING_RELEVANT if listed else NO_CONVERSATIONS

        return await guarded("recall_my_conversations", run)

    @server.tool(
        name="read_conversation",
        description="Read turns from_seq..to_seq (inclusive, at most 200) of one of your "
        "own earlier conversations, verbatim, by the id recall_my_conversations showed.",
    )
    async def read_conversation(
        id: str, from_seq: int = 0, to_seq: int | None = None
    ) -> CallToolResult:
        async def run(who: Caller) -> str:
            turns = await store.read_conversation(
                tenant=who.tenant,
                user_id=who.user_id,
                conversation_id=check_conversation_id(id, "id"),
                from_seq=from_seq,
                to_seq=to_seq,
            )
            return render_turns(turns) or "No turns in that range."

        return await guarded("read_conversation", run)

    @server.tool(
        name="find_in_conversation",
        description="Find the turns of one of your own earlier conversations that contain "
        "`text` exactly (case-insensitive): an id, a number, a name.",
    )
    async def find_in_conversation(id: str, text: str) -> CallToolResult:
        async def run(who: Caller) -> str:
            turns = await store.find_in_conversation(
                tenant=who.tenant,
                user_id=who.user_id,
                conversation_id=check_conversation_id(id, "id"),
                text=text,
            )
            return render_turns(turns) or f"No turn of {id} contains {text!r}."

        return await guarded("find_in_conversation", run)

    @server.tool(
        name="list_my_conversations",
        description="List your own earlier conversations, most recent first: id, first and "
        "last turn dates, number of turns.",
    )
    async def list_my_conversations(limit: int = 50) -> CallToolResult:
        async def run(who: Caller) -> str:
            rows = await store.list_conversations(
                tenant=who.tenant, user_id=who.user_id, limit=limit
            )
            if not rows:
                return NO_CONVERSATIONS
            return "\n".join(
                f"{r.conversation_id}: {r.started_at:%Y-%m-%d %H:%M} to "
                f"{r.last_at:%Y-%m-%d %H:%M}, {r.turns} turns"
                for r in rows
            )

        return await guarded("list_my_conversations", run)


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


class ConversationIngestHandler(IngestHandler):
    """``POST /v1/conversations/{id}``: the whole conversation so far, ``{"tenant",
    "user_id", "turns": [...]}``, behind the ingest key. Posting again replaces it (and
    embeds only new or changed turns); an ``Idempotency-Key`` replays the first answer, or
    409 for another body. Bad input is a 400 naming the field, with nothing stored."""

    async def __call__(self, request: Request) -> Response:
        cid = request.path_params.get("conversation_id", "")
        body = await self._json_body(request, MAX_CONVERSATION_BODY)
        if isinstance(body, Response):
            return body
        if not isinstance(body, dict):
            return _error(
                400, "body must be an object with tenant, user_id, turns", fields=["body"]
            )
        user_id = body.get("user_id", body.get("user"))
        for name, value in (("tenant", body.get("tenant")), ("user_id", user_id)):
            if (problem := identifier_problem(value)) is not None:
                return _error(400, f"{name}: {problem}", fields=[name])
        key = request.headers.get("idempotency-key")
        if key is not None and (problem := identifier_problem(key)) is not None:
            return _error(400, f"Idempotency-Key: {problem}", fields=["Idempotency-Key"])
        args: dict[str, Any] = {
            "tenant": body["tenant"],
            "user_id": user_id,
            "conversation_id": cid,
            "turns": body.get("turns"),
        }
        try:
            if key is None:
                put = await self.store.put_conversation(**args)
                return JSONResponse(put.summary(), status_code=201)
            digest = hashlib.sha256(
                json.dumps(["conversation", cid, body], sort_keys=True).encode()
            ).hexdigest()
            result = await self.store.put_conversation_once(
                **args, idempotency_key=key, request_sha256=digest
            )
        except InvalidInput as exc:
            return _error(400, str(exc), fields=list(exc.fields))
        except (StoreError, EmbeddingModelMismatch) as exc:
            return _error(503, f"memory store unavailable: {exc}")
        if result.outcome is IdempotencyOutcome.CONFLICT or result.answer is None:
            return _error(409, "Idempotency-Key was used with a different body")
        headers = {"Idempotent-Replayed": "true" if result.replayed else "false"}
        return JSONResponse(result.answer.payload, status_code=result.answer.code, headers=headers)
