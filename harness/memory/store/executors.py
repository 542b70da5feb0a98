"""Operations as data: each store operation is a generator of SQL steps, driven by a facade.

An operation yields statements (or ``(statement, params)`` pairs) and receives each result;
it never touches a connection. :func:`run_sync` drives it on a SQLAlchemy ``Connection``,
:func:`run_async` on an ``AsyncConnection``: one set of SQL, two thin executors, so the sync
and async stores cannot drift. Results arrive buffered on both sides (a ``CursorResult``).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable

__all__ = ["Op", "Step", "run_async", "run_sync"]

T = TypeVar("T")

#: One round trip: a statement, or a statement with its bind parameters.
Step = Executable | tuple[Executable, Any]

#: An operation: yields steps, receives their results, returns its value.
Op = Generator[Step, Any, T]


def _split(step: Step) -> tuple[Executable, Any]:
    return step if isinstance(step, tuple) else (step, None)


def run_sync(conn: Connection, op: Op[T]) -> T:
    """Drive ``op`` on ``conn`` (inside the caller's transaction). Driver errors propagate."""
    try:
        step = next(op)
        while True:
            statement, params = _split(step)
            step = op.send(conn.execute(statement, params))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        op.close()


async def run_async(conn: AsyncConnection, op: Op[T]) -> T:
    """Drive ``op`` on an asyncio connection. Cancellation propagates to the awaited query."""
    try:
        step = next(op)
        while True:
            statement, params = _split(step)
            step = op.send(await conn.execute(statement, params))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        op.close()
