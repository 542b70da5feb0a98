"""Concurrent query embeddings share model calls; each caller gets its own query's vector."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.memory.embedding.query_batch import BlockingQueryBatcher, QueryBatcher


class Model:
    """Vectors derived from the text; records each batch; optionally slow or failing."""

    def __init__(self, delay_s: float = 0.0, fail_on: str | None = None):
        self.delay_s = delay_s
        self.fail_on = fail_on
        self.batches: list[list[str]] = []
        self.threads: set[int] = set()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.threads.add(threading.get_ident())
        self.batches.append(list(texts))
        time.sleep(self.delay_s)
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("model failed")
        return [[float(len(t)), float(sum(map(ord, t)))] for t in texts]


def expected(text: str) -> list[float]:
    return [float(len(text)), float(sum(map(ord, text)))]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=40))
def test_every_caller_gets_its_own_querys_vector(queries: list[str]) -> None:
    model = Model()
    batcher = QueryBatcher(model.embed, max_batch=8)

    async def go() -> list[list[float] | None]:
        return list(await asyncio.gather(*(batcher.vector(q) for q in queries)))

    assert asyncio.run(go()) == [expected(q) for q in queries]
    embedded = [t for batch in model.batches for t in batch]
    assert sorted(embedded) == sorted(set(queries))  # each distinct query embedded once
    assert all(len(batch) <= 8 for batch in model.batches)


def test_queries_arriving_during_a_model_call_go_together_in_the_next() -> None:
    model = Model(delay_s=0.2)
    batcher = QueryBatcher(model.embed)

    async def go() -> None:
        first = asyncio.create_task(batcher.vector("first"))
        await asyncio.sleep(0.05)  # the model is busy with "first" now
        rest = [asyncio.create_task(batcher.vector(f"q{i}")) for i in range(6)]
        await asyncio.gather(first, *rest)

    asyncio.run(go())
    assert model.batches == [["first"], [f"q{i}" for i in range(6)]]
    assert threading.get_ident() not in model.threads  # never on the loop's thread


def test_a_failed_model_call_answers_none_to_its_batch_only() -> None:
    model = Model(delay_s=0.1, fail_on="bad")
    batcher = QueryBatcher(model.embed)

    async def go() -> list[list[float] | None]:
        first = asyncio.create_task(batcher.vector("ok"))
        await asyncio.sleep(0.03)
        second = [asyncio.create_task(batcher.vector(q)) for q in ("bad", "other")]
        await asyncio.sleep(0.2)
        third = asyncio.create_task(batcher.vector("later"))
        return list(await asyncio.gather(first, *second, third))

    assert asyncio.run(go()) == [expected("ok"), None, None, expected("later")]


def test_a_cancelled_caller_does_not_cancel_the_others() -> None:
    model = Model(delay_s=0.2)
    batcher = QueryBatcher(model.embed)

    async def go() -> list[float] | None:
        impatient = asyncio.create_task(batcher.vector("same"))
        patient = asyncio.create_task(batcher.vector("same"))
        await asyncio.sleep(0.05)
        impatient.cancel()
        with pytest.raises(asyncio.CancelledError):
            await impatient
        return await patient

    assert asyncio.run(go()) == expected("same")
    assert model.batches == [["same"]]


# --- the same rules for callers on threads (MemoryStore) -------------------------------------


def _until_busy(model: Model) -> None:
    """Wait until the model has started its first call (a fixed sleep is flaky on a busy box)."""
    deadline = time.monotonic() + 10
    while not model.batches and time.monotonic() < deadline:
        time.sleep(0.005)
    assert model.batches, "the first caller never reached the model"


def _on_threads(batcher: BlockingQueryBatcher, queries: list[str]) -> list[list[float] | None]:
    answers: list[list[float] | None] = [None] * len(queries)
    start = threading.Barrier(len(queries))

    def ask(i: int) -> None:
        start.wait()
        answers[i] = batcher.vector(queries[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(queries))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads), "a caller never got its vector"
    return answers


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=24))
def test_every_thread_gets_its_own_querys_vector(queries: list[str]) -> None:
    model = Model(delay_s=0.001)
    batcher = BlockingQueryBatcher(model.embed, max_batch=4)
    assert _on_threads(batcher, queries) == [expected(q) for q in queries]
    embedded = [t for batch in model.batches for t in batch]
    assert sorted(set(embedded)) == sorted(set(queries))
    # a query is embedded again only if it was asked after its first batch had answered
    assert len(embedded) <= len(queries)
    assert all(len(batch) <= 4 for batch in model.batches)
    assert batcher.queries == len(embedded) and batcher.calls == len(model.batches)


def test_threads_arriving_during_a_model_call_go_together_in_the_next() -> None:
    model = Model(delay_s=0.5)
    batcher = BlockingQueryBatcher(model.embed)
    first = threading.Thread(target=batcher.vector, args=("first",))
    first.start()
    _until_busy(model)
    answers = _on_threads(batcher, [f"q{i}" for i in range(6)])
    first.join(timeout=5)
    assert answers == [expected(f"q{i}") for i in range(6)]
    assert model.batches[0] == ["first"]
    assert sorted(model.batches[1]) == [f"q{i}" for i in range(6)]
    assert len(model.batches) == 2


def test_an_idle_batcher_runs_the_model_on_the_callers_thread_at_once() -> None:
    model = Model()
    batcher = BlockingQueryBatcher(model.embed)
    assert batcher.vector("alone") == expected("alone")
    assert model.threads == {threading.get_ident()}
    assert batcher.vector("again") == expected("again")  # stood down after the first call
    assert model.batches == [["alone"], ["again"]]


def test_a_failed_model_call_answers_none_to_its_batch_only_on_threads() -> None:
    model = Model(delay_s=0.4, fail_on="bad")
    batcher = BlockingQueryBatcher(model.embed)
    results: dict[str, list[float] | None] = {}

    def ask(q: str) -> None:
        results[q] = batcher.vector(q)

    first = threading.Thread(target=ask, args=("ok",))
    first.start()
    _until_busy(model)
    second = [threading.Thread(target=ask, args=(q,)) for q in ("bad", "other")]
    for t in second:
        t.start()
    for t in [first, *second]:
        t.join(timeout=5)
    ask("later")
    assert results == {"ok": expected("ok"), "bad": None, "other": None, "later": expected("later")}
