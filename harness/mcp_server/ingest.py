"""``POST /v1/memories``: the keyed, idempotent write path for trusted services.

A store failure answers 503 with a stable ``code`` and no driver text (which named lock
timeouts and pool sizes): ``store_busy`` (a lock or a connection was not free in time, or the
database could not be reached) carries ``Retry-After`` and ``"retryable": true``;
``store_failed`` (misconfiguration, another model's vectors, a database error) does not. The
cause goes to the server log, once per failed request.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from harness.errors import (
    EmbeddingModelMismatch,
    InvalidInput,
    MemoryRejected,
    StoreError,
    StoreMisconfigured,
    StoreUnavailable,
)
from harness.identifiers import identifier_problem
from harness.memory import AsyncMemoryStore, AsyncWriteMany
from harness.memory.domain.idempotency import Answer, IdempotencyOutcome, Idempotent
from harness.memory.domain.types import Memory, MemoryCandidate

__all__ = ["RETRY_AFTER_S", "IngestHandler", "store_failure"]

log = logging.getLogger(__name__)

MAX_BODY = 1_000_000
MAX_BATCH = 500
#: What a 503 for a busy store asks the client to wait before retrying, in seconds: about
#: the lock timeout (2 s by default), the longest a waiting write was held.
RETRY_AFTER_S = 2


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def store_failure(exc: StoreError | EmbeddingModelMismatch) -> JSONResponse:
    """The 503 for a write the store could not take, the cause logged (never in the body)."""
    if isinstance(exc, StoreUnavailable):
        log.warning("ingest answered 503 store_busy (retry in %d s): %s", RETRY_AFTER_S, exc)
        return JSONResponse(
            {
                "error": "the memory store is busy or unreachable; nothing was written, "
                f"retry in {RETRY_AFTER_S} s (with the same Idempotency-Key)",
                "code": "store_busy",
                "retryable": True,
            },
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    misconfigured = isinstance(exc, StoreMisconfigured | EmbeddingModelMismatch)
    log.error("ingest answered 503 store_failed: %s", exc)
    return JSONResponse(
        {
            "error": f"the memory store {'is misconfigured' if misconfigured else 'failed'}; "
            "nothing was written, and a retry "
            "will not help until an operator acts (the server log has the cause)",
            "code": "store_failed",
            "retryable": False,
        },
        status_code=503,
    )


class IngestHandler:
    """A Starlette endpoint. The ingest key is compared in constant time; an
    ``Idempotency-Key`` header makes a retried request answer what the first one did."""

    def __init__(self, store: AsyncMemoryStore, ingest_key: str):
        if len(ingest_key) < 16:
            raise InvalidInput("ingest key: at least 16 characters", fields=("ingest_key",))
        self.store = store
        self._key = ingest_key.encode()

    def _authorised(self, request: Request) -> bool:
        given = request.headers.get("x-ingest-key", "")
        auth = request.headers.get("authorization", "")
        if not given and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        return hmac.compare_digest(given.encode(), self._key)

    async def _json_body(self, request: Request, max_bytes: int) -> Any | Response:
        """The request's JSON body, or the error answer: 401 without the ingest key, 413 over
        ``max_bytes``, 400 when it is not JSON (or nested too deeply)."""
        if not self._authorised(request):
            return _error(401, "missing or wrong ingest key")
        raw = await request.body()
        if len(raw) > max_bytes:
            return _error(413, f"body over {max_bytes} bytes")
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"body is not valid JSON: {exc}", fields=["body"])
        except RecursionError:
            return _error(400, "body is nested too deeply", fields=["body"])

    async def __call__(self, request: Request) -> Response:
        body = await self._json_body(request, MAX_BODY)
        if isinstance(body, Response):
            return body
        items = body if isinstance(body, list) else [body]
        if not items or len(items) > MAX_BATCH or not all(isinstance(i, dict) for i in items):
            return _error(
                400, f"body must be a candidate object or a list of 1-{MAX_BATCH}", fields=["body"]
            )
        candidates: list[MemoryCandidate] = []
        for n, item in enumerate(items):
            try:
                candidates.append(MemoryCandidate(**item))
            except InvalidInput as exc:
                fields = [f"{n}.{f}" if isinstance(body, list) else f for f in exc.fields]
                return _error(400, str(exc), fields=fields)
        key = request.headers.get("idempotency-key")
        if key is not None and (problem := identifier_problem(key)) is not None:
            return _error(400, f"Idempotency-Key: {problem}", fields=["Idempotency-Key"])
        digest = hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()
        try:
            return await self._write(candidates, key, digest)
        except (StoreError, EmbeddingModelMismatch) as exc:
            return store_failure(exc)

    async def _write(
        self, candidates: list[MemoryCandidate], key: str | None, digest: str
    ) -> Response:
        if key is None:
            answer = await self._attempt(candidates, self.store.write_many)
            return JSONResponse(answer.payload, status_code=answer.code)
        tenant = candidates[0].tenant

        async def attempt(write_many: AsyncWriteMany) -> Answer:
            return await self._attempt(candidates, write_many)

        result = await self.store.idempotent(tenant, key, digest, attempt)
        status, payload = _http(result)
        headers = {"Idempotent-Replayed": "true" if result.replayed else "false"}
        return JSONResponse(payload, status_code=status, headers=headers)

    @staticmethod
    async def _attempt(candidates: list[MemoryCandidate], write_many: AsyncWriteMany) -> Answer:
        """The HTTP answer to one write attempt; its code is the response status."""
        try:
            written = await write_many(candidates)
        except MemoryRejected as exc:
            return Answer(422, {"error": exc.reason, "rule": exc.rule, "index": exc.index})
        except InvalidInput as exc:
            return Answer(400, {"error": str(exc), "fields": list(exc.fields)})
        return Answer(201, {"memories": [_summary(m) for m in written]})


def _http(result: Idempotent) -> tuple[int, dict[str, Any]]:
    """The HTTP status and body of an idempotent write's result."""
    if result.outcome is IdempotencyOutcome.CONFLICT or result.answer is None:
        return 409, {"error": "Idempotency-Key was used with a different body"}
    return result.answer.code, result.answer.payload


def _summary(m: Memory) -> dict[str, Any]:
    return {
        "id": str(m.id),
        "status": m.status.value,
        "supersedes": str(m.supersedes) if m.supersedes else None,
    }
