"""Unauthenticated ``/healthz`` (the process answers; no database call) and ``/readyz``
(database reachable, schema at head, embedder mode) for load balancers and orchestrators.

The answers never carry URLs or driver messages: anyone who can reach the port may ask.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import anyio
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from harness import metrics
from harness._version import __version__
from harness.errors import HarnessError
from harness.memory import AsyncMemoryStore
from harness.memory.embedding.embedder import FastEmbedder

__all__ = ["Readiness", "add_health_routes", "check_readiness"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Readiness:
    """The ``/readyz`` verdict; ``reason`` says why not when ``ready`` is false."""

    ready: bool
    embedder: str
    schema: str | None = None
    reason: str | None = None

    def as_json(self) -> dict[str, object]:
        """The JSON body, with the package version."""
        body: dict[str, object] = {
            "status": "ready" if self.ready else "not ready",
            "version": __version__,
            "embedder": self.embedder,
            "schema": self.schema,
        }
        if self.reason is not None:
            body["reason"] = self.reason
        return body


def embedder_mode(store: AsyncMemoryStore) -> str:
    """``hybrid (<model>)`` (with ``, int8 queries`` when queries run through the model's int8
    copy and ``, N thread(s) per model call`` when set) or ``lexical-only``."""
    if store.embedder is None:
        return "lexical-only"
    fast = store.embedder if isinstance(store.embedder, FastEmbedder) else None
    threads = fast.threads if fast else None
    int8 = ", int8 queries" if fast and fast.int8_queries else ""
    per_call = f", {threads} thread{'s' if threads != 1 else ''} per model call" if threads else ""
    return f"hybrid ({store.embedder.model_name}{int8}{per_call})"


async def check_readiness(store: AsyncMemoryStore) -> Readiness:
    """One read of the schema revision; never raises on a store failure. Cancelling it
    cancels the query and returns the connection."""
    mode = embedder_mode(store)
    try:
        schema = await store.schema_state()
    except HarnessError as exc:
        log.warning("not ready: %s", exc)
        return Readiness(False, mode, reason="database unreachable")
    revision, head = schema.revision, schema.head
    if revision != head:
        return Readiness(
            False, mode, schema=revision, reason=f"schema at {revision}, expected {head}"
        )
    return Readiness(True, mode, schema=revision)


def add_health_routes(
    server: MCPServer, store: AsyncMemoryStore, *, timeout_s: float = 3.0
) -> None:
    """Serve ``GET /healthz``, ``GET /readyz`` and ``GET /metrics`` (Prometheus' text format;
    labels carry no tenant) without a bearer token from ``server``'s HTTP app.

    ``/readyz`` answers 503 with a reason when the database does not answer within
    ``timeout_s`` (the check is cancelled; its connection returns to the pool).
    """

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "version": __version__})

    async def readyz(request: Request) -> Response:
        verdict = Readiness(False, embedder_mode(store), reason="database did not answer")
        with anyio.move_on_after(timeout_s):
            verdict = await check_readiness(store)
        return JSONResponse(verdict.as_json(), status_code=200 if verdict.ready else 503)

    async def metrics_text(request: Request) -> Response:
        return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)

    server.custom_route("/healthz", methods=["GET"])(healthz)
    server.custom_route("/readyz", methods=["GET"])(readyz)
    server.custom_route("/metrics", methods=["GET"])(metrics_text)
