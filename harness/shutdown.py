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

__all__ = ["exit_on_signals", "in_swallowing_frame", "signal_main_thread"]

log = logging.getLogger(__name__)

HANDLED = (signal.SIGTERM, signal.SIGINT)
#: How soon a signal that arrived inside a weakref callback or a finaliser is sent again.
RESIGNAL_S = 0.02


def signal_main_thread(signum: int) -> None:
    """Deliver ``signum`` to the main thread itself. ``os.kill`` on the process lets the
    kernel pick any thread; Python then runs the handler only at the main thread's next
    bytecode, which a long sleep or wait can hold back."""
    main = threading.main_thread().ident
    assert main is not None  # a running process always has its main thread's ident
    signal.pthread_kill(main, signum)


def in_swallowing_frame(frame: FrameType | None) -> bool:
    """True when ``frame`` (where a signal interrupted the main thread) runs inside code whose
    exceptions Python prints and drops: the standard library's weakref callbacks (weak
    containers, ``weakref.finalize``) or a ``__del__`` finaliser, at any depth."""
    while frame is not None:
        code = frame.f_code
        if os.path.basename(code.co_filename) == "weakref.py" or code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def exit_on_signals(
    last_resort: Callable[[], object] | None = None, grace_s: float = 15.0
) -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise ``SystemExit(128 + signal)``.

    Servers that catch the signals themselves (uvicorn) restore these handlers when they stop
    and re-raise the signal, which then unwinds here. Python drops an exception raised while
    it runs a weakref callback or a finaliser: a signal that arrives inside one is sent again
    shortly instead of raising there; and if the process is still inside the block ``grace_s``
    after the first signal, a watchdog thread calls ``last_resort`` (release what must not
    leak) and ends the process. Outside the main thread
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

    watching = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if not watching.is_set():
            watching.set()
            threading.Thread(
                target=watchdog, args=(128 + signum,), name="harness-exit-watchdog", daemon=True
            ).start()
        if in_swallowing_frame(frame):
            # Raised here, the exit would be printed as "Exception ignored" and dropped: ask
            # again once the main thread is past the callback (the watchdog still bounds it).
            threading.Timer(RESIGNAL_S, signal_main_thread, (signum,)).start()
            return
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in HANDLED}
    try:
        yield
    finally:
        leaving.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
