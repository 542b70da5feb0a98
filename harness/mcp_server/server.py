"""The MCP server: recall for any MCP-speaking agent, RecallSet tools, a keyed ingest path."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request
from starlette.responses import Response

from harness._version import __version__
from harness.mcp_server.identity import Identity, TokenFileVerifier
from harness.mcp_server.ingest import IngestHandler
from harness.mcp_server.sessions import RecallSets
from harness.memory.recall import RecallResult
from harness.memory.store import MemoryStore
from harness.memory.types import RecallRequest
from harness.recallset import RecallSetTools

__all__ = ["UNAVAILABLE", "McpLimits", "build_server"]

log = logging.getLogger(__name__)

UNAVAILABLE = "Memory is unavailable right now; continue without it."
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


@dataclass(frozen=True)
class McpLimits:
    """Per-server limits: concurrent recalls, per-call timeout, output cap (whole items)."""

    max_concurrent_recalls: int = 4
    timeout_s: float = 10.0
    output_chars: int = 4000
    max_items: int = 20
    max_item_chars: int = 1000


def build_server(
    store: MemoryStore,
    *,
    identity: Identity | None = None,
    verifier: TokenFileVerifier | None = None,
    public_url: str | None = None,
    ingest_key: str | None = None,
    limits: McpLimits | None = None,
) -> MCPServer:
    """An MCPServer over ``store``.

    Identity comes from ``identity`` (stdio: the launch configuration) or, over HTTP, from the
    bearer token checked by ``verifier`` (``public_url`` is then this server's base URL).
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
    server: MCPServer = MCPServer(
        "harness-memory",
        version=__version__,
        instructions="Long-term memory for this user and project. Use recall_memories before "
        "answering questions about earlier work; use the recallset_* tools as a scratchpad "
        "for this session only (it is never stored).",
        token_verifier=verifier,
        auth=auth,
    )
    recall_slots = anyio.Semaphore(lim.max_concurrent_recalls)
    recallsets = RecallSets()

    def caller() -> Identity:
        if identity is not None:
            return identity
        token = get_access_token()
        if token is None:  # the auth middleware refuses such requests before they get here
            raise PermissionError("no verified caller")
        return TokenFileVerifier.identity_of(token)

    def session_recallset(ctx: Context) -> RecallSetTools:
        who = caller()
        headers = ctx.headers or {}
        session_id = headers.get("mcp-session-id")
        if session_id:
            return RecallSetTools(recallsets.for_session_id(session_id, who))
        request_ctx = ctx.request_context
        # The per-request ServerSession wraps the connection object that lives as long as
        # the client's session (stdio, handshake-era HTTP, in-process clients).
        connection = getattr(request_ctx.session, "_connection", request_ctx.session)
        return RecallSetTools(recallsets.for_connection(connection, who))

    @server.tool(name="recall_memories", description=RECALL_DESCRIPTION)
    async def recall_memories(query: str) -> str:
        who = caller()
        request = RecallRequest(
            tenant=who.tenant,
            user_id=who.user_id,
            workflow_id=who.workflow_id,
            query=query[:2000],
            budget_chars=lim.output_chars - len(HEADER),
            max_items=lim.max_items,
            max_item_chars=lim.max_item_chars,
        )
        try:
            with anyio.fail_after(lim.timeout_s):
                async with recall_slots:
                    result: RecallResult = await anyio.to_thread.run_sync(
                        store.recall, request, abandon_on_cancel=True
                    )
        except TimeoutError:
            log.warning("recall timed out after %.1fs", lim.timeout_s)
            return UNAVAILABLE
        except Exception as exc:  # the agent must keep working without memory
            log.warning("recall failed: %s", exc)
            return UNAVAILABLE
        if result.degraded:
            return UNAVAILABLE
        if not result.items:
            return NOTHING
        return HEADER + result.text

    @server.tool(
        name="recallset_add",
        description="Save a note for later in this session "
        "(never stored long-term). Same text again returns the existing note.",
    )
    async def recallset_add(
        content: str,
        ctx: Context,
        mark: Literal["keep", "check", "discard"] = "check",
        priority: int = 0,
        title: str | None = None,
    ) -> str:
        args: dict[str, Any] = {"content": content, "mark": mark, "priority": priority}
        if title is not None:
            args["title"] = title
        return session_recallset(ctx).dispatch({"name": "recallset_add", "arguments": args})

    @server.tool(name="recallset_mark", description="Mark a note keep, check or discard.")
    async def recallset_mark(
        id: str, mark: Literal["keep", "check", "discard"], ctx: Context
    ) -> str:
        return session_recallset(ctx).dispatch(
            {"name": "recallset_mark", "arguments": {"id": id, "mark": mark}}
        )

    @server.tool(name="recallset_read", description="Read one note of this session in full.")
    async def recallset_read(id: str, ctx: Context) -> str:
        return session_recallset(ctx).dispatch({"name": "recallset_read", "arguments": {"id": id}})

    @server.tool(
        name="recallset_overview",
        description="List this session's notes: ids, marks, titles (no bodies).",
    )
    async def recallset_overview(ctx: Context) -> str:
        return session_recallset(ctx).dispatch({"name": "recallset_overview", "arguments": {}})

    if ingest_key:
        handler = IngestHandler(store, ingest_key)

        async def ingest(request: Request) -> Response:
            # A plain function: Starlette would treat a callable object as a raw ASGI app.
            return await handler(request)

        server.custom_route("/v1/memories", methods=["POST"])(ingest)

    server.recallsets = recallsets  # type: ignore[attr-defined]
    return server
