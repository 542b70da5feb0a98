"""OpenTelemetry spans of this package (``docs/operations.md``), through ``opentelemetry-api``.

Without an SDK installed and configured by the host, every span is a no-op. With one, a
recall, a write, a reembed, an MCP tool call and an ingest request each become a span under
whatever span is current in the host (its agent run, its HTTP request), so a slow run shows
where its milliseconds went. Attributes are tenant-safe: identities only as
:func:`hashed` digests, counts and outcomes, never content, queries or ids in clear.

The store's methods are generators that may be suspended across ``await``: they never make a
span current (no context to restore on another task); they start a span with the caller's
current span as parent, and record their stages as children with measured times.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Iterator, Mapping

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from harness._version import __version__

__all__ = ["Span", "failed", "hashed", "identity", "in_span", "stage", "start"]

_tracer = trace.get_tracer("harness-memory", __version__)

Attributes = Mapping[str, str | bool | int | float]


@functools.lru_cache(maxsize=4096)
def hashed(value: str) -> str:
    """A stable digest of an identity (tenant, user, workflow, session): the first 16 hex of
    its SHA-256. The same tenant gives the same digest in every span; the name is not shown."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def identity(
    tenant: str | None, user_id: str | None = None, *, workflow_id: str | None = None
) -> dict[str, str]:
    """Span attributes naming a caller by digests only."""
    out: dict[str, str] = {}
    if tenant:
        out["harness.tenant_hash"] = hashed(tenant)
    if user_id:
        out["harness.user_hash"] = hashed(user_id)
    if workflow_id:
        out["harness.workflow_hash"] = hashed(workflow_id)
    return out


def start(name: str, attributes: Attributes | None = None) -> Span:
    """Start (and do not make current) a span under the current one; the caller ends it."""
    return _tracer.start_span(name, attributes=attributes)


def stage(
    parent: Span, name: str, start_ns: int, end_ns: int, attributes: Attributes | None = None
) -> None:
    """Record a finished child of ``parent`` that ran from ``start_ns`` to ``end_ns``
    (``time.time_ns()``)."""
    if not parent.is_recording():
        return
    ctx = trace.set_span_in_context(parent)
    child = _tracer.start_span(name, context=ctx, attributes=attributes, start_time=start_ns)
    child.end(end_time=end_ns)


def failed(span: Span, exc: BaseException) -> None:
    """Mark ``span`` failed with the error's type (its message may quote stored text)."""
    if span.is_recording():
        span.set_attribute("error.type", type(exc).__name__)
        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))


@contextlib.contextmanager
def in_span(name: str, attributes: Attributes | None = None) -> Iterator[Span]:
    """A current span around a block of ordinary (not generator) code, e.g. a request
    handler: the store's spans inside it become its children. An error marks it failed."""
    with _tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as exc:
            failed(span, exc)
            raise
