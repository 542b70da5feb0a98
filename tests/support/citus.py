"""The test suite on a Citus cluster (``make test-citus``): databases made on every node, the
store's tables distributed, and a worker stopped and started again.

``HARNESS_TEST_CITUS_URL`` names the coordinator (its ``harness`` database has the workers
registered, as ``../shared/citus/cluster.sh`` leaves it); ``HARNESS_TEST_CITUS_BIN`` and
``HARNESS_TEST_CITUS_DIR`` (the cluster's binaries and data folder) let a test stop a worker.
Without the URL the suite runs on plain PostgreSQL and the tests marked ``cluster`` are not
collected.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from harness.memory.store.db import normalize_url

__all__ = [
    "CITUS_URL_ENV",
    "Worker",
    "citus_url",
    "create_citus_database",
    "shard_worker",
    "start_worker",
    "stop_worker",
    "workers",
]

CITUS_URL_ENV = "HARNESS_TEST_CITUS_URL"


def citus_url() -> str | None:
    """The coordinator's URL when the suite runs on a cluster, else None."""
    url = os.environ.get(CITUS_URL_ENV)
    return normalize_url(url) if url else None


@dataclass(frozen=True)
class Worker:
    host: str
    port: int

    def url(self, coordinator_url: str, database: str, user: str = "postgres") -> str:
        return (
            make_url(coordinator_url)
            .set(host=self.host, port=self.port, database=database, username=user)
            .render_as_string(hide_password=False)
        )


def workers(coordinator_url: str) -> list[Worker]:
    """The workers registered with the coordinator (the database of ``coordinator_url``)."""
    engine = sa.create_engine(coordinator_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport"
                )
            ).all()
    finally:
        engine.dispose()
    return [Worker(str(host), int(port)) for host, port in rows]


def create_citus_database(coordinator_url: str, name: str) -> str:
    """An empty database ``name`` on the coordinator and every worker, each with the citus and
    vector extensions, the workers registered in it; returns its coordinator URL."""
    nodes = workers(coordinator_url)
    coordinator = make_url(coordinator_url)
    admin_urls = [coordinator.set(database="postgres").render_as_string(hide_password=False)]
    admin_urls += [w.url(coordinator_url, "postgres") for w in nodes]
    for admin_url in admin_urls:
        admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        db = sa.create_engine(make_url(admin_url).set(database=name), isolation_level="AUTOCOMMIT")
        with db.connect() as conn:
            conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS citus"))
            conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
        db.dispose()
    url = coordinator.set(database=name).render_as_string(hide_password=False)
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(
            sa.text("SELECT citus_set_coordinator_host(:h, :p)"),
            {"h": coordinator.host, "p": coordinator.port},
        )
        for w in nodes:
            conn.execute(sa.text("SELECT citus_add_node(:h, :p)"), {"h": w.host, "p": w.port})
    engine.dispose()
    return url


def shard_worker(url: str, table: str, tenant: str) -> Worker:
    """The worker holding ``tenant``'s shard of ``table``."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            host, port = conn.execute(
                sa.text(
                    "SELECT nodename, nodeport FROM citus_shards WHERE shardid = "
                    "get_shard_id_for_distribution_column(CAST(:t AS regclass), CAST(:tenant AS text))"
                ),
                {"t": table, "tenant": tenant},
            ).one()
    finally:
        engine.dispose()
    return Worker(str(host), int(port))


def _pg_ctl(worker: Worker, *args: str) -> None:
    bindir = Path(os.environ["HARNESS_TEST_CITUS_BIN"])
    data = Path(os.environ["HARNESS_TEST_CITUS_DIR"]) / f"n{worker.port}"
    command = [str(bindir / "pg_ctl"), "-D", str(data), *args]
    if os.geteuid() == 0:  # the servers run as pgcluster (cluster.sh)
        command = ["su", "pgcluster", "-s", "/bin/sh", "-c", " ".join(f"'{c}'" for c in command)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


def stop_worker(worker: Worker) -> None:
    """Stop the worker now (``fast``: its sessions, the coordinator's among them, are ended at
    once; unlike ``immediate`` its restart needs no crash recovery, which on a busy machine
    spends a minute syncing the data folder)."""
    _pg_ctl(worker, "-m", "fast", "-w", "-t", "120", "stop")


def start_worker(worker: Worker) -> None:
    """Start the worker again and wait until it accepts connections."""
    data = Path(os.environ["HARNESS_TEST_CITUS_DIR"]) / f"n{worker.port}"
    _pg_ctl(worker, "-l", str(data / "log"), "-w", "-t", "300", "start")
