"""A primary and a streaming hot-standby replica, from the embedded server's own binaries.

``initdb`` a primary (trust auth on loopback, replication allowed: initdb's default pg_hba.conf
already has the ``replication`` lines), ``pg_basebackup -R`` it into a second data folder and
start that as a hot standby on another port. The replica can be stopped and started again, and
its replay paused, so tests can make it lag or vanish on purpose.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tests.support.pg_tcp import _bin_dir, server_port

SUPERUSER = "postgres"
DATABASE = "harness"


def _run_as() -> dict[str, Any]:
    """postgres refuses to run as root: run its binaries as the pgserver package's user."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam("pgserver")
    return {"user": user.pw_uid, "group": user.pw_gid}


@dataclass
class _Node:
    data: Path
    socket_dir: Path
    port: int
    log: Path

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"


@dataclass
class ReplicatedServer:
    """A running primary with one streaming replica (see :func:`primary_with_replica`)."""

    primary: _Node
    replica: _Node
    _bin: Path
    _as: dict[str, Any]

    @property
    def primary_url(self) -> str:
        return self.primary.url()

    @property
    def replica_url(self) -> str:
        return self.replica.url()

    def _pg_ctl(self, node: _Node, *args: str, check: bool = True) -> None:
        subprocess.run(
            [str(self._bin / "pg_ctl"), "-D", str(node.data), *args],
            check=check,
            capture_output=True,
            timeout=120,
            **self._as,
        )

    def _start(self, node: _Node) -> None:
        self._pg_ctl(
            node,
            "-w",
            "-l",
            str(node.log),
            "-o",
            f"-p {node.port} -k {node.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        )

    def stop_replica(self) -> None:
        """Stop the replica at once (its sessions are cut, new connections refused)."""
        self._pg_ctl(self.replica, "-m", "immediate", "stop")

    def start_replica(self) -> None:
        """Start the replica again and wait until it accepts connections."""
        self._start(self.replica)

    def on_replica(self, statement: str) -> Any:
        """Run one statement on the replica as the superuser; its first value."""
        return _scalar(self.replica_url, statement)

    def on_primary(self, statement: str, database: str = DATABASE) -> Any:
        """Run one statement on the primary as the superuser (autocommit); its first value."""
        return _scalar(self.primary.url(database), statement)

    def pause_replay(self) -> None:
        """The replica keeps receiving WAL but stops applying it: it lags from now on."""
        self.on_replica("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.on_replica("SELECT pg_wal_replay_resume()")

    def wait_caught_up(self, timeout_s: float = 60.0) -> None:
        """Until the replica has replayed everything the primary wrote so far.

        The flush position, not the insert one: when the last record ends at a page boundary
        the insert position already points past the next page's header, which nothing replays
        until the primary writes again. The bound is generous for a loaded CI machine.
        """
        target = self.on_primary("SELECT pg_current_wal_flush_lsn()::text")
        deadline = time.monotonic() + timeout_s
        while not self.on_replica(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"replica did not replay {target} in {timeout_s}s")
            time.sleep(0.01)


def _scalar(url: str, statement: str) -> Any:
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            result = conn.execute(sa.text(statement))
            return result.scalar() if result.returns_rows else None
    finally:
        engine.dispose()


@contextmanager
def primary_with_replica(*, prepare: Any = None) -> Iterator[ReplicatedServer]:
    """Start a primary, run ``prepare(primary_url)`` (e.g. migrations), clone it with
    ``pg_basebackup -R`` and start the clone as a hot standby. Both stop and vanish after."""
    bin_dir = _bin_dir()
    run_as = _run_as()
    root = Path(tempfile.mkdtemp(prefix="harness-replica-"))
    root.chmod(0o755)
    nodes = []
    for name in ("primary", "replica"):
        sock = root / f"{name}-sock"
        sock.mkdir()
        if run_as:
            os.chown(root, run_as["user"], run_as["group"])
            os.chown(sock, run_as["user"], run_as["group"])
        nodes.append(_Node(root / name, sock, server_port(), root / f"{name}.log"))
    primary, replica = nodes
    server = ReplicatedServer(primary, replica, bin_dir, run_as)
    run = dict(check=True, capture_output=True, timeout=120, **run_as)
    try:
        subprocess.run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(primary.data),
                "-U",
                SUPERUSER,
                "--auth",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            **run,
        )
        with (primary.data / "postgresql.conf").open("a") as conf:
            conf.write("wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n")
        server._start(primary)
        server.on_primary(f"CREATE DATABASE {DATABASE}", database="postgres")
        if prepare is not None:
            prepare(server.primary_url)
        subprocess.run(
            [
                str(bin_dir / "pg_basebackup"),
                "-h",
                "127.0.0.1",
                "-p",
                str(primary.port),
                "-U",
                SUPERUSER,
                "-D",
                str(replica.data),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ],
            **run,
        )
        server._start(replica)
        yield server
    finally:
        for node in (replica, primary):
            if node.data.exists():
                server._pg_ctl(node, "-m", "immediate", "stop", check=False)
        shutil.rmtree(root, ignore_errors=True)
