"""A public store method as data: a plan of effects, run by either facade.

Each public method of the store is written once (:mod:`.methods`) as a generator that checks
its arguments, then yields effects and receives their results. The sync facade performs each
effect in place, the asyncio facade awaits it; neither adds logic of its own. An effect that
fails is thrown back into the plan, so a plan's own ``try`` decides what a failure means (the
one recall-degradation boundary is such a ``try``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from harness.memory.store.executors import Op

__all__ = [
    "Admits",
    "Effect",
    "Embed",
    "Plan",
    "QueryVector",
    "Read",
    "Request",
    "Transaction",
    "embedded",
    "in_transaction",
    "method_signature",
    "query_vector",
    "read",
    "request",
]

T = TypeVar("T")

#: Whose rows a transaction admits: one tenant's, none (metadata only), or every tenant's
#: (maintenance); ``owner`` is every tenant's as the login itself (schema changes).
Admits = Literal["tenant", "none", "everyone", "owner"]


@dataclass(frozen=True, slots=True)
class Transaction:
    """Run ``op`` in one transaction on the primary, driver errors translated under
    ``action``. With a tenant, the commit's WAL position is noted for that tenant's reads
    (read replicas); a maintenance transaction notes it for every tenant."""

    action: str
    op: Op[Any]
    tenant: str | None = None
    admits: Admits = "tenant"


@dataclass(frozen=True, slots=True)
class Read:
    """Run the read ``make_op()`` on a replica that has replayed the tenant's writes, else on
    the primary (see :mod:`..read_routing`)."""

    action: str
    tenant: str | None
    make_op: Callable[[], Op[Any]]


@dataclass(frozen=True, slots=True)
class Embed:
    """Call ``fn`` (the model) before any connection is taken: in place, or in a worker
    thread under asyncio."""

    fn: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class QueryVector:
    """The query's vector from the model, batched with concurrent queries (a thread batcher
    or an asyncio one)."""

    query: str


@dataclass(frozen=True, slots=True)
class Request:
    """Run ``op`` on one connection without an outer transaction block; ``op`` returns
    ``(value, commit, tenants)``: commit (noting ``tenants``' positions) or roll back."""

    action: str
    op: Op[tuple[Any, bool, frozenset[str]]]


Effect = Transaction | Read | Embed | QueryVector | Request

#: A public method's body: yields effects, receives their results, returns the method's value.
Plan = Generator[Effect, Any, T]


# Typed requests for the plans: each yields one effect and returns its result as the type the
# effect promises (the executors send results untyped).


def in_transaction(
    action: str, op: Op[T], tenant: str | None = None, admits: Admits = "tenant"
) -> Plan[T]:
    """:class:`Transaction` of ``op``, its value typed."""
    return (yield Transaction(action, op, tenant, admits))  # type: ignore[no-any-return]


def read(action: str, tenant: str | None, make_op: Callable[[], Op[T]]) -> Plan[T]:
    """:class:`Read` of ``make_op()``, its value typed."""
    return (yield Read(action, tenant, make_op))  # type: ignore[no-any-return]


def embedded(fn: Callable[[], T]) -> Plan[T]:
    """:class:`Embed` of ``fn``, its value typed."""
    return (yield Embed(fn))  # type: ignore[no-any-return]


def query_vector(query: str) -> Plan[list[float] | None]:
    """:class:`QueryVector` of ``query``."""
    return (yield QueryVector(query))  # type: ignore[no-any-return]


def request(action: str, op: Op[tuple[T, bool, frozenset[str]]]) -> Plan[T]:
    """:class:`Request` of ``op``, its value typed."""
    return (yield Request(action, op))  # type: ignore[no-any-return]


def method_signature(plan: Callable[..., Any], *, bound: bool) -> inspect.Signature:
    """The signature a facade's method shows for ``plan``: ``self`` first (in place of the
    plan's store argument when ``bound``), and the plan's value as the return annotation."""
    sig = inspect.signature(plan)
    params = list(sig.parameters.values())
    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = [this, *params[1:]] if bound else [this, *params]
    ret = sig.return_annotation
    if isinstance(ret, str) and ret.startswith("Plan[") and ret.endswith("]"):
        ret = ret[len("Plan[") : -1]
    return sig.replace(parameters=params, return_annotation=ret)
