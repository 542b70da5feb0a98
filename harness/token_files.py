"""Bearer-token files, shared by the MCP server and the console: tokens are minted here,
stored only as SHA-256 digests in a JSON file written atomically with mode 0600, and the
file is re-read when it changes (a removed token stops working at its next request).

A file that cannot be read or parsed raises :class:`TokenFileUnreadable` naming it: the
commands refuse to start over one, and a running server that finds one (an edit gone wrong)
answers 503 until it is fixed, logging the cause once per change of the file."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from harness.errors import HarnessError

__all__ = [
    "TokenFileUnreadable",
    "WatchedFile",
    "hash_token",
    "mint_token",
    "parse_entries",
    "read_entries",
    "write_entries",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


class TokenFileUnreadable(HarnessError):
    """A bearer-token file exists but cannot be read or parsed; ``path`` names it."""

    def __init__(self, path: Path, problem: str):
        super().__init__(
            f"token file {path} cannot be used: {problem}. Fix or remove it (minting a token "
            "rewrites it only once it reads)"
        )
        self.path = path
        self.problem = problem


def hash_token(token: str) -> str:
    """SHA-256 (hex) of a bearer token; only this is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def mint_token(prefix: str) -> str:
    """A new bearer token: ``prefix`` and 256 random bits, URL-safe."""
    return prefix + secrets.token_urlsafe(32)


def read_entries(path: Path, key: str) -> list[dict[str, Any]]:
    """The list under ``key`` in the JSON file at ``path``; a missing file holds none.

    Raises:
        TokenFileUnreadable: the file cannot be read, is not UTF-8 JSON, or is not an object
            whose ``key`` is a list of objects.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise TokenFileUnreadable(path, exc.strerror or type(exc).__name__) from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise TokenFileUnreadable(path, "it is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise TokenFileUnreadable(path, f"it is not JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise TokenFileUnreadable(path, "it is nested too deeply") from None
    if not isinstance(data, dict):
        raise TokenFileUnreadable(path, f"it holds a JSON {type(data).__name__}, not an object")
    entries = data.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise TokenFileUnreadable(path, f'"{key}" is not a list of objects')
    return list(entries)


def parse_entries(path: Path, key: str, parse: Callable[[dict[str, Any]], T]) -> list[T]:
    """``parse`` applied to each entry of :func:`read_entries`; an entry it cannot take
    (a missing or mistyped field, an identity the identity rule refuses) names its number.

    Raises:
        TokenFileUnreadable: as :func:`read_entries`, or for the first entry ``parse`` refuses.
    """
    parsed = []
    for number, entry in enumerate(read_entries(path, key), start=1):
        try:
            parsed.append(parse(entry))
        except KeyError as exc:
            raise TokenFileUnreadable(path, f"{key} entry {number} has no {exc}") from None
        except (TypeError, ValueError, AttributeError, HarnessError) as exc:
            # InvalidInput is a ValueError; its message names the field, never a token
            raise TokenFileUnreadable(path, f"{key} entry {number}: {exc}") from None
    return parsed


def write_entries(path: Path, key: str, entries: list[dict[str, Any]]) -> None:
    """Replace the file at ``path`` with ``{key: entries}``, atomically and with mode 0600
    (the folder is created when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({key: entries}, indent=2), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)


class WatchedFile(Generic[T]):
    """``load(path)`` cached until the file changes (its modification time, size or inode:
    two writes within one clock tick share a modification time): one ``stat`` per call
    (every request is verified), a re-read only after a change; a missing file is
    loaded too (as ``load`` decides, usually empty). A load that raises
    :class:`TokenFileUnreadable` is cached as well: logged once, raised again at every call
    until the file changes."""

    def __init__(self, path: Path, load: Callable[[Path], T]):
        self.path = path
        self._load = load
        self._value: T | None = None
        self._error: TokenFileUnreadable | None = None
        self._mtime: tuple[int, int, int] | None = None
        self._loaded = False

    def current(self) -> T:
        """The file's value as of its last change.

        Raises:
            TokenFileUnreadable: the file as it is now cannot be used.
        """
        try:
            st = self.path.stat()
            mtime: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:  # missing (usually no tokens yet) or unreachable: load says which
            mtime = None
        if not self._loaded or mtime != self._mtime or mtime is None:
            first = self._error is None or mtime != self._mtime
            self._mtime, self._loaded = mtime, True
            try:
                self._value, self._error = self._load(self.path), None
            except TokenFileUnreadable as exc:
                self._error = exc
                if first:
                    log.error("%s; requests that need it are refused until then", exc)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
