"""Shutdown on SIGTERM/SIGINT for long-running commands: unwind, so that ``finally`` blocks
close the store and release the embedded server (``atexit`` does not run on a fatal signal)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["exit_on_signals"]

HANDLED = (signal.SIGTERM, signal.SIGINT)


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def exit_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise ``SystemExit(128 + signal)``.

    Servers that catch the signals themselves (uvicorn) restore these handlers when they stop
    and re-raise the signal, which then unwinds here. Outside the main thread this does
    nothing (Python delivers signals to the main thread only). Handlers are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_exit) for sig in HANDLED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
