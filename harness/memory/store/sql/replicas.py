"""Statements of read replicas: where the primary's WAL ends, and waiting for a replica to
replay up to a point (read-your-writes). Both run on any role: the functions are public."""

from __future__ import annotations

from sqlalchemy import TextClause, text

__all__ = ["REPLAY_POLL_MS", "commit_lsn", "in_recovery", "replay_reached"]

#: How often the server re-reads its replay position while a read waits for it.
REPLAY_POLL_MS = 5


def commit_lsn() -> TextClause:
    """The end of the WAL inserted so far; run right after a commit it covers that commit
    (the insert position, not the flushed one, so asynchronous commit is covered too)."""
    return text("SELECT pg_current_wal_insert_lsn()::text")


def in_recovery() -> TextClause:
    """Whether the server is a standby."""
    return text("SELECT pg_is_in_recovery()")


def replay_reached(lsn: str, wait_ms: int) -> TextClause:
    """The replica's replay position once it reaches ``lsn``, or the last one seen after
    ``wait_ms``: one round trip, polling on the server (a recursive query that sleeps between
    reads of ``pg_last_wal_replay_lsn()``). A server that is not a standby answers
    ``FFFFFFFF/FFFFFFFF`` (its data is its own: nothing to wait for)."""
    steps = -(-wait_ms // REPLAY_POLL_MS)
    return text(
        """
        WITH RECURSIVE poll(n, replayed) AS (
            SELECT 0, CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
                           ELSE 'FFFFFFFF/FFFFFFFF'::pg_lsn END
            UNION ALL
            SELECT poll.n + 1, pg_last_wal_replay_lsn()
            FROM poll, LATERAL (SELECT pg_sleep(:pause)) AS pause
            WHERE (poll.replayed IS NULL OR poll.replayed < CAST(:lsn AS pg_lsn))
              AND poll.n < :steps
        )
        SELECT coalesce(max(replayed), '0/0'::pg_lsn)::text FROM poll
        """
    ).bindparams(lsn=lsn, steps=steps, pause=REPLAY_POLL_MS / 1000)
