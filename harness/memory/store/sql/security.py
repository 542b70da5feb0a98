"""Statements of row-level security: the application role and the per-transaction tenant.

Every tenant table has a policy admitting only rows whose ``tenant`` equals the transaction's
``harness.tenant`` setting (or every row while ``harness.all_tenants`` is on, which only the
store's explicit maintenance transactions set). See ``migrations/versions/0003``.

The settings are ``SET LOCAL`` commands, not ``set_config(..., true)`` calls: on a Citus
coordinator a connection with ``citus.propagate_set_commands = 'local'`` (set at connect, see
:data:`CITUS_PROPAGATE`) replays its ``SET LOCAL`` commands on every worker connection of the
transaction, so the shards' policies see the same tenant; a function call is not replayed.
``SET`` takes no bind parameter, so the tenant is rendered as a quoted literal by the driver's
own literal processor at execution (``literal_execute``), never by string formatting here.
"""

from __future__ import annotations

from sqlalchemy import TextClause, bindparam, text

__all__ = [
    "ALL_TENANTS_SETTING",
    "APP_ROLE",
    "APP_ROLE_ASSUME",
    "APP_ROLE_PROBE",
    "CITUS_PROPAGATE",
    "RLS_TABLES",
    "TENANT_SETTING",
    "all_tenants",
    "current_role",
    "reset_local_role",
    "set_local_role",
    "set_tenant",
]

#: The role the application's statements run as: not the owner of any table, no BYPASSRLS.
APP_ROLE = "harness_app"
TENANT_SETTING = "harness.tenant"
ALL_TENANTS_SETTING = "harness.all_tenants"
#: Every table holding tenant rows (all of them carry a ``tenant`` column).
RLS_TABLES = (
    "memories",
    "memory_approvals",
    "runs",
    "cleanup_tasks",
    "ingest_requests",
    "mcp_memos",
    "lesson_events",
    "lesson_scores",
    "conversations",
    "conversation_turns",
    "conversation_settings",
)


def set_tenant(tenant: str) -> TextClause:
    """Admit only ``tenant``'s rows until the transaction ends (on every shard it touches)."""
    return text(f"SET LOCAL {TENANT_SETTING} = :tenant").bindparams(
        bindparam("tenant", value=tenant, literal_execute=True)
    )


def all_tenants() -> TextClause:
    """Admit every tenant's rows until the transaction ends (explicit maintenance only)."""
    return text(f"SET LOCAL {ALL_TENANTS_SETTING} = 'on'")


def current_role() -> TextClause:
    return text("SELECT current_user")


def reset_local_role() -> TextClause:
    """Back to the session user until the transaction ends (owner-only DDL)."""
    return text("SET LOCAL ROLE NONE")


def set_local_role(role: str) -> TextClause:
    """Back to ``role`` for the rest of the transaction (after :func:`reset_local_role`)."""
    return text("SELECT set_config('role', :role, true)").bindparams(role=role)


#: DBAPI-level probe run once per new pooled connection (before SQLAlchemy wraps it): whether
#: to assume the application role, and whether this database is a Citus one.
APP_ROLE_PROBE = (
    "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %(role)s "
    "AND pg_has_role(session_user, oid, 'MEMBER')) AND current_user <> %(role)s, "
    "EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"
)
#: DBAPI-level, on a Citus database only: replay each transaction's ``SET LOCAL`` commands
#: (tenant, HNSW settings) on the workers it reaches.
CITUS_PROPAGATE = "SET citus.propagate_set_commands = 'local'"
#: DBAPI-level: run the session's statements as the application role.
APP_ROLE_ASSUME = f"SET ROLE {APP_ROLE}"
