"""An append-only, fsynced spool of cleanups that could not reach the database."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CleanupSpool"]


class CleanupSpool:
    """JSON lines under an exclusive ``flock``; survives process restarts and crashes.

    Draining hands every entry to a callback, then truncates; the callback must be
    idempotent (a crash between the two replays entries, never loses them).
    """

    def __init__(self, path: Path):
        self.path = path

    @contextmanager
    def _locked(self) -> Iterator[int]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def append(self, entry: dict[str, Any]) -> None:
        """Append one entry and fsync before returning."""
        line = (json.dumps(entry, sort_keys=True) + "\n").encode()
        with self._locked() as fd:
            os.write(fd, line)
            os.fsync(fd)

    def _read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for raw in self.path.read_text(encoding="utf-8").splitlines():
            if raw.strip():
                try:
                    out.append(json.loads(raw))
                except json.JSONDecodeError:
                    continue  # a torn last line from a crash mid-write; the rest is intact
        return out

    def entries(self) -> list[dict[str, Any]]:
        """Every spooled entry, oldest first."""
        with self._locked():
            return self._read()

    def drain(self, sink: Callable[[list[dict[str, Any]]], None]) -> int:
        """Hand all entries to ``sink``; truncate only when it returns. Returns how many."""
        with self._locked() as fd:
            entries = self._read()
            if not entries:
                return 0
            sink(entries)
            os.ftruncate(fd, 0)
            os.fsync(fd)
            return len(entries)
