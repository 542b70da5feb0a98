"""Several HTTP MCP server processes behind one listening socket, and their supervisor.

One server process answers on one core: its event loop runs the MCP/HTTP stack and recall's
Python one request at a time (BENCHMARKS.md section 14). Workers are spawned processes that
accept from the socket the supervisor bound, each with its own store, model and event loop;
they share RecallSet memos through the database, so a caller's next request may land on any
of them. The supervisor prints the start line once every worker is ready, starts a new worker
when one dies (unless it died before it was ready, or workers keep dying: then the server
stops with an error), and on SIGINT/SIGTERM stops them all: each drains its calls in flight as a single server does.

Workers live in their own process group, so a terminal's Ctrl-C reaches the supervisor alone
and each worker is stopped exactly once; a worker whose supervisor disappears (killed) stops
itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType

from harness.logs import configure_logging
from harness.mcp_server.serve_config import ServeConfig
from harness.settings import Settings
from harness.shutdown import exit_on_signals, signal_main_thread

__all__ = ["WorkerSpec", "run_workers", "worker_main"]

log = logging.getLogger(__name__)

#: Workers that die after they were ready are replaced, unless more than this many per
#: worker died within :data:`CRASH_WINDOW_S`: then they would only die again.
MAX_DEATHS_PER_WORKER = 3
CRASH_WINDOW_S = 60.0
#: How long stopping workers get before they are killed: their drain grace and uvicorn's
#: shutdown bound fit well inside it.
STOP_TIMEOUT_S = 10.0
POLL_S = 0.1


@dataclass(frozen=True)
class WorkerSpec:
    """What every worker serves with (pickled into each spawned process)."""

    url: str
    settings: Settings
    config: ServeConfig
    public_url: str | None


def worker_main(spec: WorkerSpec, sock: socket.socket, supervisor: Connection) -> None:
    """A worker process: open a store, serve on ``sock``, tell ``supervisor`` when ready.

    Runs in the spawned process; never returns (exits the process once stopped).
    """
    os.setpgrp()  # a terminal's Ctrl-C is for the supervisor, which stops workers itself
    # Log as configured from the first line: workers start side by side, so a plain warning
    # printed before one had configured its logging would land between another's log lines.
    configure_logging(spec.config.log_level, spec.config.log_format)
    logging.captureWarnings(True)
    threading.Thread(
        target=_stop_when_orphaned, args=(supervisor,), name="harness-supervisor-watch", daemon=True
    ).start()
    code = 0
    try:
        # uvicorn re-raises the signal that stopped it; here it unwinds the worker (closing
        # its store) instead of killing the process mid-way.
        with exit_on_signals():
            asyncio.run(_serve_worker(spec, sock, supervisor))
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except Exception:
        log.exception("worker %d failed", os.getpid())
        code = 1
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip the interpreter's teardown (seconds destroying the model): nothing is left to release.
    os._exit(code)


def _stop_when_orphaned(supervisor: Connection) -> None:
    """Stop this worker (as SIGTERM would) when the supervisor's end of the pipe closes."""
    with contextlib.suppress(EOFError, OSError):
        while True:
            supervisor.recv()
    signal_main_thread(signal.SIGTERM)


async def _serve_worker(spec: WorkerSpec, sock: socket.socket, supervisor: Connection) -> None:
    from harness.mcp_server.memo_pg import PostgresMemoBook
    from harness.mcp_server.serving import serve_http
    from harness.memory import AsyncMemoryStore

    store = await AsyncMemoryStore.connect(spec.url, settings=spec.settings)
    try:
        await serve_http(
            store,
            spec.config,
            sock,
            public_url=spec.public_url,
            ready=lambda embedder: supervisor.send(("ready", embedder)),
            memo_book=PostgresMemoBook(store),
        )
    finally:
        await store.close()


@dataclass
class _Worker:
    process: BaseProcess
    pipe: Connection
    ready: bool = False


class _Supervisor:
    def __init__(self, spec: WorkerSpec, sock: socket.socket, count: int):
        self.spec = spec
        self.sock = sock
        self.count = count
        self.context = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []
        self.stop_signal: int | None = None
        self.embedder = "unknown"
        self.deaths: list[float] = []

    def start_one(self) -> _Worker:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(
            target=worker_main,
            args=(self.spec, self.sock, theirs),
            name="harness-mcp-worker",
            daemon=False,
        )
        process.start()
        theirs.close()  # the worker holds its end; ours reads EOF if it dies
        return _Worker(process, ours)

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum

    def read_messages(self) -> None:
        """Mark workers that said they are ready (and keep the embedder mode they report)."""
        for worker in self.workers:
            if worker.ready:
                continue
            with contextlib.suppress(EOFError, OSError):
                while worker.pipe.poll():
                    kind, value = worker.pipe.recv()
                    if kind == "ready":
                        worker.ready = True
                        self.embedder = str(value)

    def replace_dead(self) -> int | None:
        """Start a new worker for each that died; an exit code when the server must stop.

        A worker that dies before it is ready would die again (a bad token file, an
        unreachable database): the server stops with an error instead. So it does when
        workers keep dying.
        """
        for i, worker in enumerate(self.workers):
            code = worker.process.exitcode
            if code is None:
                continue
            worker.pipe.close()
            now = time.monotonic()
            self.deaths = [t for t in self.deaths if now - t < CRASH_WINDOW_S] + [now]
            if not worker.ready:
                log.error(
                    "MCP worker %s exited with code %s before it was ready; stopping the server",
                    worker.process.pid,
                    code,
                )
                return 1
            if len(self.deaths) > MAX_DEATHS_PER_WORKER * self.count:
                log.error(
                    "%d MCP workers died within %.0fs (the last with code %s); stopping the server",
                    len(self.deaths),
                    CRASH_WINDOW_S,
                    code,
                )
                return 1
            log.error(
                "MCP worker %s exited with code %s; starting another", worker.process.pid, code
            )
            self.workers[i] = self.start_one()
        return None

    def stop_all(self) -> None:
        # The listening socket dies with the workers' copies: clients are refused at once
        # instead of waiting in the queue of a socket nobody accepts on any more.
        self.sock.close()
        for worker in self.workers:
            if worker.process.exitcode is None and worker.process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(worker.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for worker in self.workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.exitcode is None:
                log.warning("MCP worker %s did not stop in time; killing it", worker.process.pid)
                worker.process.kill()
                worker.process.join()
            worker.pipe.close()

    def run(self, on_ready: Callable[[str], None]) -> int:
        self.workers = [self.start_one() for _ in range(self.count)]
        announced = False
        try:
            while self.stop_signal is None:
                watched: list[Connection | int] = [w.process.sentinel for w in self.workers]
                watched += [w.pipe for w in self.workers if not w.ready]
                wait(watched, timeout=POLL_S)
                self.read_messages()
                failed = self.replace_dead()
                if failed is not None:
                    return failed
                if not announced and all(w.ready for w in self.workers):
                    on_ready(self.embedder)
                    announced = True
            return 128 + self.stop_signal
        finally:
            self.stop_all()


def run_workers(
    spec: WorkerSpec, sock: socket.socket, count: int, on_ready: Callable[[str], None]
) -> int:
    """Serve with ``count`` worker processes on ``sock`` until SIGINT/SIGTERM; returns the
    exit code (128 + the signal, or 1 when a worker could not start).

    Side effects: spawns processes; configures this process's logging; handles SIGINT/SIGTERM
    in this process while it runs (call from the main thread). ``on_ready`` gets the embedder
    mode once all are ready.
    """
    configure_logging(spec.config.log_level, spec.config.log_format)
    supervisor = _Supervisor(spec, sock, count)
    previous = {
        sig: signal.signal(sig, supervisor.on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        return supervisor.run(on_ready)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
