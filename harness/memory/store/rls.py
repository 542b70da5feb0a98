"""Row-level security at the connection edge: which role a pooled connection runs as, and
(on Citus) that its transaction-local settings reach the workers.

A superuser login (the embedded server's) bypasses row-level security, so each new pooled
connection assumes the application role when the login may: every statement the store runs is
then held to the tenant policies. Maintenance that must see every tenant, or change the schema,
says so explicitly (a plan's ``Transaction`` admitting everyone, or the owner).
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from harness.memory.store import sql

__all__ = ["assume_app_role"]

log = logging.getLogger(__name__)


def assume_app_role(dbapi_connection: Any, _connection_record: Any) -> None:
    """SQLAlchemy pool ``connect`` hook: ``SET ROLE harness_app`` when the login may assume it;
    on a Citus coordinator, also replay transaction-local settings on the workers.

    Side effects: the session's current role and, on Citus, ``citus.propagate_set_commands``
    (kept for the connection's lifetime). Without the role (not migrated yet, or an operator's
    login that is the role itself) the role does not change. The worker connections Citus opens
    log in as the current role: on a cluster it needs LOGIN (``harness-memory distribute``
    grants it) and a way to authenticate to the workers (docs/scale-out.md).
    """
    try:
        with dbapi_connection.cursor() as cur:
            cur.execute(sql.APP_ROLE_PROBE, {"role": sql.APP_ROLE})
            row = cur.fetchone()
            if row is not None and row[1]:
                cur.execute(sql.CITUS_PROPAGATE)
            if row is not None and row[0]:
                cur.execute(sql.APP_ROLE_ASSUME)
        dbapi_connection.commit()
    except psycopg.Error as exc:  # e.g. membership without the SET option; policies still apply
        dbapi_connection.rollback()
        log.warning("could not assume role %s: %s", sql.APP_ROLE, exc)
