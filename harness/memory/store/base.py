"""What both store facades hold, and every plan of :mod:`.methods` reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.pool import Pool, QueuePool

from harness.clock import Clock
from harness.memory.domain.ranking import RecallConfig
from harness.memory.domain.types import MemoryCandidate
from harness.memory.embedding.embedder import Embedder, EmbedderChoice
from harness.memory.guard import Guard
from harness.memory.store.checks import validate_candidates
from harness.memory.store.ops.retrieval import Retriever
from harness.memory.store.replicas import ReadRouter, ReadRouting
from harness.settings import Settings

__all__ = ["StoreBase"]


class StoreBase:
    """Configuration, the embedding model, the guard, the clock, recall's retriever and the
    read router: the state of a store, without its connections (the facades own those)."""

    def __init__(
        self,
        *,
        settings: Settings,
        embedder: Embedder | None,
        guard: Guard,
        clock: Clock,
        url: str,
        lexical_reason: str | None,
        router: ReadRouter,
        recall: RecallConfig | None = None,
        pool: Pool,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.guard = guard
        self.clock = clock
        self.url = url
        self.lexical_reason = lexical_reason
        #: Where the embedding model came from (None when the caller passed the embedder).
        self.embedder_choice: EmbedderChoice | None = None
        self.retriever = Retriever(recall or RecallConfig(), default_top_n=settings.recall_top_n)
        self.router = router
        self._pool = pool

    @property
    def lexical_only(self) -> bool:
        """True when recall uses full-text search alone."""
        return self.embedder is None

    def check_candidate(self, candidate: MemoryCandidate | Mapping[str, Any]) -> MemoryCandidate:
        """The candidate as :meth:`write` would store it, validated and guarded, without
        writing it (no IO; the same on both facades).

        Raises:
            InvalidInput: bad fields. MemoryRejected: the guard refused it.
        """
        return validate_candidates(
            [candidate], self.settings, self.guard, single=True, now=self.clock.now()
        )[0]

    def connections_in_use(self) -> int:
        """How many of the primary's pooled connections are checked out now (no IO; 0 for a
        pool that keeps none)."""
        return self._pool.checkedout() if isinstance(self._pool, QueuePool) else 0

    def read_routing(self) -> ReadRouting:
        """Where reads went (each replica, the primary, why they fell back) and each replica's
        health. No IO (so not a coroutine on the asyncio store); empty without
        ``HARNESS_DATABASE_READ_URL``."""
        return self.router.snapshot()
