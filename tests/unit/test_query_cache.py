"""The query-vector LRU: same vector as the model, bounded, counted.

Here the tests that need no database, model or other process; the others are in
tests/db/test_query_cache_db.py."""

from __future__ import annotations

from harness.memory.embedding.query_cache import QueryVectorCache


def test_lru_keeps_the_most_recent_and_counts() -> None:
    cache = QueryVectorCache(size=2)
    cache.put("m", "a", [0.5, 0.25])
    cache.put("m", "b", [1.0, 0.0])
    assert cache.get("m", "a") == [0.5, 0.25]  # refreshes "a"
    cache.put("m", "c", [0.0, 1.0])
    assert cache.get("m", "b") is None  # least recently used went
    assert cache.get("other-model", "a") is None  # the model is part of the key
    assert (cache.hits, cache.misses) == (1, 2)
    off = QueryVectorCache(size=0)
    off.put("m", "a", [1.0])
    assert off.get("m", "a") is None
