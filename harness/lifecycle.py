"""Shutdown on SIGTERM/SIGINT for long-running commands: unwind, so that ``finally`` blocks
close the store and release the embedded server (``atexit`` does not run on a fatal signal)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["exit_on_signals"]

log = logging.getLogger(__name__)

HANDLED = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def exit_on_signals(
    last_resort: Callable[[], object] | None = None, grace_s: float = 15.0
) -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise ``SystemExit(128 + signal)``.

    Servers that catch the signals themselves (uvicorn) restore these handlers when they stop
    and re-raise the signal, which then unwinds here. Python drops an exception raised while
    it runs a weakref callback or a finaliser, so a signal can be lost: if the process is still
    inside the block ``grace_s`` after the first signal, a watchdog thread calls
    ``last_resort`` (release what must not leak) and ends the process. Outside the main thread
    this does nothing (Python delivers signals to the main thread only).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    leaving = threading.Event()

    def watchdog(code: int) -> None:
        if leaving.wait(grace_s):
            return
        log.warning("still running %.0fs after the signal; releasing and exiting", grace_s)
        try:
            if last_resort is not None:
                last_resort()
        finally:
            os._exit(code)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        threading.Thread(
            target=watchdog, args=(128 + signum,), name="harness-exit-watchdog", daemon=True
        ).start()
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in HANDLED}
    try:
        yield
    finally:
        leaving.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
