"""The tenant reaches row-level security as a ``SET LOCAL`` literal (so that Citus replays it
on the workers): any valid tenant string round-trips exactly, quotes, backslashes, colons and
percent signs included, and never leaks past its transaction."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.identifiers import identifier_problem
from harness.memory.store import sql

pytestmark = pytest.mark.citus

tenants = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp")),
    min_size=1,
    max_size=40,
).filter(lambda t: identifier_problem(t) is None) | st.sampled_from(
    ["it's", "a\\b", "x:y", ":tenant", "50%", "%(tenant)s", "''", "\\'", "E'x'"]
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tenant=tenants)
def test_any_valid_tenant_round_trips_through_set_local(db_url: str, tenant: str) -> None:
    engine = sa.create_engine(db_url, poolclass=sa.NullPool)
    try:
        with engine.connect() as conn:
            with conn.begin():
                conn.execute(sql.set_tenant(tenant))
                seen = conn.execute(sa.text("SELECT current_setting('harness.tenant')")).scalar()
            after = conn.execute(sa.text("SELECT current_setting('harness.tenant', true)")).scalar()
    finally:
        engine.dispose()
    assert seen == tenant
    assert after in (None, "")  # transaction-local: gone after commit
