"""Server logging: plain text lines, or JSON lines for log shippers; a command's connect."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime

from harness.errors import StoreUnavailable

__all__ = ["JsonLinesFormatter", "configure_logging", "connect_or_fail"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record: ``ts`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
    and ``exc`` with the traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str, fmt: str) -> None:
    """Route every logger (uvicorn's included) to one stderr handler at ``level``.

    Side effect: replaces the root logger's handlers. Idempotent.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLinesFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


class _FailOnOutage(logging.Filter):
    """With migrations off the store only warns "schema revision not checked" when the server
    is down, and degrades until it is back: right for a service, not for a command. This
    filter raises the warning's error instead, out of ``connect``, before the model loads."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        for arg in args:
            if isinstance(arg, StoreUnavailable):
                raise arg
        return True


@contextlib.contextmanager
def connect_or_fail() -> Iterator[None]:
    """Around a command's ``MemoryStore.connect``: an unreachable server raises
    :class:`StoreUnavailable` (for the command's one error line) even with migrations off, and
    the warnings raised on the way (no embedding model, ...) are shown only if it connects."""
    logger = logging.getLogger("harness.memory.store.sync")
    outage = _FailOnOutage()
    logger.addFilter(outage)
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield
    finally:
        logger.removeFilter(outage)
    for w in caught:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno)
