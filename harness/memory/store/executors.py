"""Operations as data, and the two thin executors that run them.

An operation (:data:`Op`) yields steps and receives each result; it never touches a connection.
A step is a SQL statement (or ``(statement, params)``), or one of three requests the executor
serves the same way on both sides, except for where it waits:

* :class:`Blocking`: CPU-bound work (the embedding model): called in place by the sync
  executor, in a worker thread by the asyncio one, so the event loop never stalls;
* :class:`OnConnection`: a synchronous function of the connection (Alembic's revision reads);
* :class:`Attempt`: the caller's own code, run inside the transaction with a ``write_many``
  bound to it (idempotent requests).

:func:`run_sync` drives an operation on a SQLAlchemy ``Connection``, :func:`run_async` on an
``AsyncConnection``: one set of SQL, two thin executors, so the sync and async stores cannot
drift. Results arrive buffered on both sides (a ``CursorResult``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable

__all__ = ["Attempt", "Blocking", "OnConnection", "Op", "Step", "run_async", "run_sync"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Blocking(Generic[T]):
    """CPU-bound work inside an operation; the asyncio executor runs it in a worker thread."""

    fn: Callable[[], T]


@dataclass(frozen=True, slots=True)
class OnConnection(Generic[T]):
    """A synchronous function of the (sync) connection, e.g. Alembic's revision read."""

    fn: Callable[[Connection], T]


@dataclass(frozen=True, slots=True)
class Attempt:
    """Call the caller's ``attempt`` with a ``write_many`` that runs ``write_op(candidates)``
    on this operation's connection; the step's result is what ``attempt`` returned (awaited
    when it is a coroutine, on the asyncio side)."""

    attempt: Callable[[Any], Any]
    write_op: Callable[[Sequence[Any]], Op[Any]]


#: One step: a statement, a statement with its bind parameters, or a request to the executor.
Step = Executable | tuple[Executable, Any] | Blocking[Any] | OnConnection[Any] | Attempt

#: An operation: yields steps, receives their results, returns its value.
Op = Generator[Step, Any, T]


def run_sync(conn: Connection, op: Op[T]) -> T:
    """Drive ``op`` on ``conn`` (inside the caller's transaction). Driver errors propagate."""
    try:
        step = next(op)
        while True:
            step = op.send(_perform_sync(conn, step))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        op.close()


def _perform_sync(conn: Connection, step: Step) -> Any:
    if isinstance(step, Blocking):
        return step.fn()
    if isinstance(step, OnConnection):
        return step.fn(conn)
    if isinstance(step, Attempt):
        write_op = step.write_op
        return step.attempt(lambda candidates: run_sync(conn, write_op(candidates)))
    statement, params = step if isinstance(step, tuple) else (step, None)
    return conn.execute(statement, params)


async def run_async(conn: AsyncConnection, op: Op[T]) -> T:
    """Drive ``op`` on an asyncio connection. Cancellation propagates to the awaited query."""
    try:
        step = next(op)
        while True:
            step = op.send(await _perform_async(conn, step))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        op.close()


async def _perform_async(conn: AsyncConnection, step: Step) -> Any:
    if isinstance(step, Blocking):
        return await asyncio.to_thread(step.fn)
    if isinstance(step, OnConnection):
        return await conn.run_sync(step.fn)
    if isinstance(step, Attempt):
        write_op = step.write_op

        async def write_many(candidates: Sequence[Any]) -> Any:
            return await run_async(conn, write_op(candidates))

        answer = step.attempt(write_many)
        return await answer if inspect.isawaitable(answer) else answer
    statement, params = step if isinstance(step, tuple) else (step, None)
    return await conn.execute(statement, params)
