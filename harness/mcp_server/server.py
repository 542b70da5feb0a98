"""The MCP server: recall for any MCP-speaking agent, RecallSet tools, a keyed ingest path."""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from harness import metrics, tracing
from harness._version import __version__
from harness.errors import HarnessError, InvalidInput
from harness.mcp_server.conversations import (
    ConversationIngestHandler,
    register_conversation_tools,
)
from harness.mcp_server.identity import TokenFileVerifier
from harness.mcp_server.ingest import IngestHandler
from harness.mcp_server.memo_book import LocalMemoBook, MemoBook
from harness.mcp_server.memos import (
    MemoExpired,
    MemoLimits,
    MemoNotFound,
    MemoOwner,
    RecallSets,
    token_key,
)
from harness.memory import AsyncMemoryStore
from harness.memory.domain.caller import Caller
from harness.memory.domain.recall import RecallResult
from harness.memory.domain.types import RecallRequest
from harness.recallset import RecallSetTools

__all__ = [
    "BUSY",
    "STOPPING",
    "UNAVAILABLE",
    "Drain",
    "McpLimits",
    "RecallLoad",
    "answer",
    "build_server",
    "text_of",
]

log = logging.getLogger(__name__)

UNAVAILABLE = "Memory is unavailable right now; continue without it."
BUSY = "Memory is busy right now; continue without it, or ask again in a moment."
STOPPING = "Memory is shutting down; continue without it."
NOTHING = "Nothing relevant is stored for this query."
HEADER = "Stored memories (scope kind | origin | date):\n"

RECALL_DESCRIPTION = """Recall what earlier sessions stored about this user and project:
preferences, conventions, lessons from past rejections, facts and decisions.
Call it before answering when the user refers to earlier work ("last time", "as before",
"what did we decide", "the numbers we used", "my usual format") or when a stored convention
could change your answer. Query with a few identifying words (names, ids, topics), not a full
sentence; if the first try misses, query again with other words. Each line shows the memory's
scope (session, workflow, user, platform), kind and date; a platform constraint always
applies. The answer says so explicitly when nothing relevant is stored."""


@dataclass
class RecallLoad:
    """What the server turned away: recalls answered "busy" without running."""

    shed: int = 0


def answer(text: str, *, is_error: bool = False) -> CallToolResult:
    """A tool result of one text block; ``is_error`` when the text reports a failure."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def text_of(result: CallToolResult) -> str:
    """The text blocks of a tool result, joined."""
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def bad_arguments(tool: str, exc: ValidationError) -> str:
    """One line naming each rejected argument and why (pydantic's own text spans lines and
    ends with a link to its documentation): ``error: TOOL: mark: Input should be ...``."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        parts.append(f"{where}: {' '.join(str(err['msg']).split())}")
    return f"error: {tool}: {'; '.join(parts)}"


def invalid(exc: InvalidInput) -> str:
    """An input error as one line naming each field (``query: must not contain NUL``)."""
    if not exc.details:
        return str(exc)
    return "; ".join(f"{field}: {' '.join(message.split())}" for field, message in exc.details)


class _Server(MCPServer):
    """The SDK's server, answering arguments that fail validation in one line."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            with tracing.in_span("harness.mcp.tool", {"harness.tool": name}):
                return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            # the cause stays the ValidationError: the SDK logs its field names, not the values
            raise ToolError(bad_arguments(name, cause)) from cause


class Drain:
    """The recalls in flight, so a stopping server can end them at once.

    :meth:`drain` (from the server's shutdown) refuses new recalls, lets running ones finish
    for ``grace_s``, then cancels the rest (their queries with them); each such call answers
    :data:`STOPPING` as a tool error, so no client is left waiting on a closing server.
    """

    def __init__(self) -> None:
        self.stopping = False
        self._scopes: set[anyio.CancelScope] = set()

    @property
    def in_flight(self) -> int:
        """Recalls running or waiting for a slot."""
        return len(self._scopes)

    def track(self, scope: anyio.CancelScope) -> None:
        """Count ``scope`` in flight until :meth:`untrack`; cancel it at once when stopping."""
        self._scopes.add(scope)
        if self.stopping:
            scope.cancel()

    def untrack(self, scope: anyio.CancelScope) -> None:
        self._scopes.discard(scope)

    async def drain(self, grace_s: float) -> None:
        """Refuse new recalls; after ``grace_s`` cancel those still in flight. Idempotent."""
        self.stopping = True
        with anyio.move_on_after(grace_s):
            while self._scopes:
                await anyio.sleep(0.01)
        for scope in list(self._scopes):
            scope.cancel()


@dataclass(frozen=True)
class McpLimits:
    """Per-server limits: recalls running at once and waiting for a slot (more, or a wait
    past ``queue_timeout_s``, answer "busy" at once instead of queueing without limit), the
    per-call timeout, the output cap (whole items), and how long recalls in flight may finish
    once the server is stopping."""

    max_concurrent_recalls: int = 4
    max_waiting_recalls: int = 16
    queue_timeout_s: float = 2.0
    timeout_s: float = 10.0
    output_chars: int = 4000
    max_items: int = 20
    max_item_chars: int = 1000
    drain_grace_s: float = 0.3


def build_server(
    store: AsyncMemoryStore,
    *,
    identity: Caller | None = None,
    verifier: TokenFileVerifier | None = None,
    public_url: str | None = None,
    ingest_key: str | None = None,
    limits: McpLimits | None = None,
    memo_limits: MemoLimits | None = None,
    memo_book: MemoBook | None = None,
    drain: Drain | None = None,
) -> MCPServer:
    """An MCPServer over ``store``.

    Identity comes from ``identity`` (stdio: the launch configuration) or, over HTTP, from the
    bearer token checked by ``verifier`` (``public_url`` is then this server's base URL).
    RecallSet memos are kept by ``memo_book`` (default: in this process, with ``memo_limits``),
    bound to the caller; several worker processes share a PostgreSQL one. ``drain``
    (the server's shutdown holds it) ends the recalls in flight when the server stops.
    Store calls run on the event loop the server is served on (the store's own loop); a
    recall past ``limits.timeout_s`` is cancelled, its query with it.
    Agents cannot write long-term memory here; ``ingest_key`` enables ``POST /v1/memories``
    for trusted services. No IO until a tool is called.
    """
    if (identity is None) == (verifier is None):
        raise ValueError("give exactly one of identity (stdio) or verifier (HTTP)")
    lim = limits or McpLimits()
    auth = None
    if verifier is not None:
        base = (public_url or "http://127.0.0.1:8765").rstrip("/")
        auth = AuthSettings(
            issuer_url=base,
            # Plain bearer tokens, no OAuth: without a resource URL the 401 carries no
            # resource_metadata pointer, so clients do not go looking for an authorization
            # server that does not exist.
            resource_server_url=None,
            required_scopes=["memory:recall"],
            # Our tokens are opaque, minted for this server alone and checked by lookup.
            validate_token_resource=False,
        )
    server: MCPServer = _Server(
        "harness-memory",
        version=__version__,
        instructions="Long-term memory for this user and project. Use recall_memories before "
        "answering questions about earlier work, recall_my_conversations to search this user's "
        "own earlier conversations verbatim; use the recallset_* tools as a scratchpad "
        "for the current task (recallset_open gives a memo handle; memos are never stored "
        "long-term).",
        token_verifier=verifier,
        auth=auth,
    )
    recall_slots = anyio.Semaphore(lim.max_concurrent_recalls)
    memos = memo_book or LocalMemoBook(RecallSets(memo_limits))
    load = RecallLoad()
    drain = drain or Drain()

    def verified() -> AccessToken:
        token = get_access_token()
        if token is None:  # the auth middleware refuses such requests before they get here
            raise PermissionError("no verified caller")
        return token

    def caller() -> Caller:
        if identity is not None:
            return identity
        return TokenFileVerifier.identity_of(verified())

    def owner() -> MemoOwner:
        """Whose memos a call reaches: the caller's, opened with this very token."""
        if identity is not None:
            return MemoOwner.local(identity)
        token = verified()
        # AccessToken.token is the token file's digest of the bearer token (identity.py)
        return MemoOwner(TokenFileVerifier.identity_of(token), token_key(token.token))

    waiting = 0

    async def take_slot() -> bool:
        """A recall slot, or False when too many wait already or the wait runs too long."""
        nonlocal waiting
        if waiting >= lim.max_waiting_recalls and recall_slots.value == 0:
            load.shed += 1
            return False
        waiting += 1
        try:
            with anyio.move_on_after(lim.queue_timeout_s):
                await recall_slots.acquire()
                return True
        finally:
            waiting -= 1
        load.shed += 1
        return False

    async def open_memo(tool: str) -> str | None:
        """A new memo's handle, or None (logged) when the memo store is unreachable."""
        try:
            handle = await memos.open(owner())
        except HarnessError as exc:  # the shared memo table is unreachable
            log.warning("%s failed: %s", tool, exc)
            return None
        metrics.memo_event("opened")
        return handle

    async def on_memo(tool: str, memo: str, args: dict[str, Any]) -> CallToolResult:
        call = {"name": tool, "arguments": args}
        try:
            result = await memos.use(memo, owner(), lambda rs: RecallSetTools(rs).answer(call))
        except (MemoNotFound, MemoExpired) as exc:
            metrics.memo_event("expired" if isinstance(exc, MemoExpired) else "not_found")
            return answer(f"error: {tool}: {exc}", is_error=True)
        except HarnessError as exc:  # the shared memo table is unreachable
            log.warning("%s failed: %s", tool, exc)
            return answer(UNAVAILABLE, is_error=True)
        return answer(result.text, is_error=result.is_error)

    @server.tool(name="recall_memories", description=RECALL_DESCRIPTION)
    async def recall_memories(query: str) -> CallToolResult:
        who = caller()
        try:
            request = RecallRequest(
                tenant=who.tenant,
                user_id=who.user_id,
                workflow_id=who.workflow_id,
                query=query[:2000],
                budget_chars=lim.output_chars - len(HEADER),
                max_items=lim.max_items,
                max_item_chars=lim.max_item_chars,
            )
        except InvalidInput as exc:  # the query is the only part the client sends
            return answer(f"error: recall_memories: {invalid(exc)}", is_error=True)
        result: RecallResult | None = None
        # Cancelling the coroutine (timeout, or a stopping server) cancels its query on the
        # server and returns the connection to the pool: it leaves no work behind.
        with anyio.CancelScope() as stop_scope:
            drain.track(stop_scope)
            try:
                if not await take_slot():
                    return answer(BUSY, is_error=True)
                try:
                    with anyio.fail_after(lim.timeout_s):
                        result = await store.recall(request)
                finally:
                    recall_slots.release()
            except TimeoutError:
                log.warning("recall timed out after %.1fs", lim.timeout_s)
                return answer(UNAVAILABLE, is_error=True)
            finally:
                drain.untrack(stop_scope)
        if result is None:  # cancelled by a stopping server
            return answer(STOPPING, is_error=True)
        if result.degraded:
            return answer(UNAVAILABLE, is_error=True)
        if not result.items:
            return answer(NOTHING)
        return answer(HEADER + result.text)

    @server.tool(
        name="recallset_open",
        description="Open a new scratchpad memo for this task (never stored long-term) and "
        "return its handle. Pass the handle as `memo` to every other recallset_* tool. "
        f"A memo holds up to {memos.limits.max_items} notes and expires after "
        f"{memos.limits.idle_s / 60:.0f} minutes without use.",
    )
    async def recallset_open() -> CallToolResult:
        handle = await open_memo("recallset_open")
        if handle is None:
            return answer(UNAVAILABLE, is_error=True)
        return answer(json.dumps({"memo": handle}))

    @server.tool(
        name="recallset_add",
        description="Save a note in a scratchpad memo (never stored long-term). Without "
        "`memo`, opens a new memo; the answer carries its handle: pass it to later calls. "
        "Same text again returns the existing note.",
    )
    async def recallset_add(
        content: str,
        memo: str | None = None,
        mark: Literal["keep", "check", "discard"] = "check",
        priority: int = 0,
        title: str | None = None,
    ) -> CallToolResult:
        args: dict[str, Any] = {"content": content, "mark": mark, "priority": priority}
        if title is not None:
            args["title"] = title
        if len(content) > memos.limits.max_note_chars:
            return answer(
                f"error: recallset_add: content: at most {memos.limits.max_note_chars} "
                f"characters, got {len(content)}; save a shorter note",
                is_error=True,
            )
        opened = memo is None
        if memo is None:
            memo = await open_memo("recallset_add")
            if memo is None:
                return answer(UNAVAILABLE, is_error=True)
        result = await on_memo("recallset_add", memo, args)
        if result.is_error:
            if opened:  # nothing was saved: do not leave an empty memo behind
                with contextlib.suppress(HarnessError):
                    await memos.discard(memo, owner())
            return result
        body = json.loads(text_of(result))
        return answer(json.dumps({"memo": memo, **body}))

    @server.tool(name="recallset_mark", description="Mark a note of a memo keep, check or discard.")
    async def recallset_mark(
        memo: str, id: str, mark: Literal["keep", "check", "discard"]
    ) -> CallToolResult:
        return await on_memo("recallset_mark", memo, {"id": id, "mark": mark})

    @server.tool(name="recallset_read", description="Read one note of a memo in full.")
    async def recallset_read(memo: str, id: str) -> CallToolResult:
        return await on_memo("recallset_read", memo, {"id": id})

    @server.tool(
        name="recallset_overview",
        description="List the notes of a memo: ids, marks, titles (no bodies).",
    )
    async def recallset_overview(memo: str) -> CallToolResult:
        return await on_memo("recallset_overview", memo, {})

    register_conversation_tools(
        server, store, caller, output_chars=lim.output_chars, timeout_s=lim.timeout_s
    )

    if ingest_key:
        conversation_handler = ConversationIngestHandler(store, ingest_key)

        async def ingest_conversation(request: Request) -> Response:
            return await conversation_handler(request)

        server.custom_route("/v1/conversations/{conversation_id}", methods=["POST"])(
            ingest_conversation
        )
        handler = IngestHandler(store, ingest_key)

        async def ingest(request: Request) -> Response:
            # A plain function: Starlette would treat a callable object as a raw ASGI app.
            with tracing.in_span("harness.ingest") as span:
                response = await handler(request)
                span.set_attribute("http.response.status_code", response.status_code)
            metrics.ingest_answered(response.status_code)
            return response

        server.custom_route("/v1/memories", methods=["POST"])(ingest)

    server.memo_book = memos  # type: ignore[attr-defined]
    server.recall_load = load  # type: ignore[attr-defined]
    server.drain = drain  # type: ignore[attr-defined]
    return server
