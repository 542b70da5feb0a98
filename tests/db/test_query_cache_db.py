"""The query-vector LRU: same vector as the model, bounded, counted.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_query_cache.py."""

from __future__ import annotations

from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.domain.types import RecallRequest


def test_store_embeds_a_repeated_query_once_with_the_same_answer(
    store: MemoryStore, tenant: str
) -> None:
    store.write(
        MemoryCandidate(
            tenant=tenant, scope="user", scope_id="alice", kind="fact", content="kestrel cluster"
        )
    )
    calls: list[str] = []
    embedder = store.embedder
    assert embedder is not None
    original = embedder.embed

    def counting(texts: list[str]) -> list[list[float]]:
        calls.extend(texts)
        return original(texts)

    embedder.embed = counting  # type: ignore[method-assign]
    try:
        # The cache is under test, not relevance: every candidate passes.
        request = RecallRequest(
            tenant=tenant, user_id="alice", query="which cluster", relevance_threshold=0.0
        )
        first, second = store.recall(request), store.recall(request)
    finally:
        embedder.embed = original  # type: ignore[method-assign]
    assert calls == ["which cluster"]
    assert first.text == second.text and "kestrel" in first.text
    assert store.retriever.query_vectors.hits >= 1


def test_concurrent_recalls_on_threads_share_model_calls(store: MemoryStore, tenant: str) -> None:
    """Six threads recalling at once while the model is busy: fewer model calls than queries,
    each recall still finds what its own query asks for."""
    import threading
    import time

    words = ["kestrel", "osprey", "falcon", "harrier", "merlin", "hobby"]
    for word in words:
        store.write(
            MemoryCandidate(
                tenant=tenant, scope="user", scope_id="alice", kind="fact",
                content=f"the {word} cluster runs the nightly export",
            )
        )  # fmt: skip
    embedder = store.embedder
    assert embedder is not None
    original = embedder.embed
    batches: list[list[str]] = []

    def slow(texts: list[str]) -> list[list[float]]:
        batches.append(list(texts))
        time.sleep(0.3)
        return original(texts)

    embedder.embed = slow  # type: ignore[method-assign]
    texts: dict[str, str] = {}

    def ask(word: str) -> None:
        result = store.recall(
            RecallRequest(tenant=tenant, user_id="alice", query=f"{word} cluster")
        )
        texts[word] = result.text

    try:
        first = threading.Thread(target=ask, args=(words[0],))
        first.start()
        deadline = time.monotonic() + 10
        while not batches and time.monotonic() < deadline:  # the model is busy with it now
            time.sleep(0.005)
        rest = [threading.Thread(target=ask, args=(w,)) for w in words[1:]]
        for t in rest:
            t.start()
        for t in [first, *rest]:
            t.join(timeout=20)
    finally:
        embedder.embed = original  # type: ignore[method-assign]
    assert sorted(q for batch in batches for q in batch) == sorted(f"{w} cluster" for w in words)
    assert len(batches) < len(words)
    for word in words:
        assert f"the {word} cluster" in texts[word]
