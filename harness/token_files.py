"""Bearer-token files, shared by the MCP server and the console: tokens are minted here,
stored only as SHA-256 digests in a JSON file written atomically with mode 0600, and the
file is re-read when it changes (a removed token stops working at its next request)."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

__all__ = ["WatchedFile", "hash_token", "mint_token", "read_entries", "write_entries"]

T = TypeVar("T")


def hash_token(token: str) -> str:
    """SHA-256 (hex) of a bearer token; only this is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def mint_token(prefix: str) -> str:
    """A new bearer token: ``prefix`` and 256 random bits, URL-safe."""
    return prefix + secrets.token_urlsafe(32)


def read_entries(path: Path, key: str) -> list[dict[str, Any]]:
    """The list under ``key`` in the JSON file at ``path``; a missing file holds none."""
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return list(data.get(key, []))


def write_entries(path: Path, key: str, entries: list[dict[str, Any]]) -> None:
    """Replace the file at ``path`` with ``{key: entries}``, atomically and with mode 0600
    (the folder is created when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({key: entries}, indent=2), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)


class WatchedFile(Generic[T]):
    """``load(path)`` cached until the file's modification time changes: one ``stat`` per
    call (every request is verified), a re-read only after a change; a missing file is
    loaded too (as ``load`` decides, usually empty)."""

    def __init__(self, path: Path, load: Callable[[Path], T]):
        self.path = path
        self._load = load
        self._value: T | None = None
        self._mtime: int | None = None
        self._loaded = False

    def current(self) -> T:
        """The file's value as of its last change."""
        try:
            mtime: int | None = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = None
        if not self._loaded or mtime != self._mtime or mtime is None:
            self._value, self._mtime, self._loaded = self._load(self.path), mtime, True
        return self._value  # type: ignore[return-value]
