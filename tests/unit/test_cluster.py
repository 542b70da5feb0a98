"""CLUSTER: each scope's memories stored together, nothing else changed, bounded lock wait.

Here the tests that need no database, model or other process; the others are in
tests/db/test_cluster_db.py."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.memory.store.checks import check_index_memory, check_lock_wait
from harness.memory.store.ops.layout import cluster_op, layout_op


@given(st.one_of(st.floats(allow_nan=True), st.integers(-10, 10_000), st.booleans(), st.text()))
def test_lock_wait_accepts_only_a_positive_bounded_number_of_seconds(value: object) -> None:
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and not math.isnan(value)
        and 0 < value <= 3600
    )
    if ok:
        assert isinstance(value, int | float)
        assert check_lock_wait(value) == max(1, round(value * 1000))
    else:
        with pytest.raises(InvalidInput) as caught:
            check_lock_wait(value)  # type: ignore[arg-type]
        assert caught.value.field == "lock_wait_s"


@given(st.one_of(st.none(), st.integers(-5, 2_000_000), st.floats(), st.booleans()))
def test_index_memory_is_none_or_whole_megabytes_in_range(value: object) -> None:
    ok = value is None or (
        isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1_048_576
    )
    if ok:
        assert check_index_memory(value) == value  # type: ignore[arg-type]
    else:
        with pytest.raises(InvalidInput) as caught:
            check_index_memory(value)  # type: ignore[arg-type]
        assert caught.value.field == "index_memory_mb"


class _OneRow:
    """A result holding one layout row (what ``scope_pages`` returns)."""

    def mappings(self) -> _OneRow:
        return self

    def one(self) -> dict[str, int]:
        return {"rows": 10, "pages": 4}


def _sql_of(op: object) -> list[str]:
    """Drive an operation without a database; the SQL of every step, in order."""
    from sqlalchemy.dialects import postgresql

    steps: list[str] = []
    gen: Any = op
    try:
        step = next(gen)
        while True:
            statement = step[0] if isinstance(step, tuple) else step
            steps.append(
                str(
                    statement.compile(
                        dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}
                    )
                )
            )
            step = gen.send(_OneRow())
    except StopIteration:
        return steps


def test_whole_table_scans_and_the_rewrite_run_without_the_statement_timeout() -> None:
    read = _sql_of(layout_op())
    assert "statement_timeout" in read[0] and "'0'" in read[0]
    assert "lock_timeout" not in read[0] and "FROM memories" in read[1]
    rewrite = _sql_of(cluster_op(250, 64))
    settings, first_scan = rewrite[0], rewrite[1]
    assert "'statement_timeout', '0'" in settings
    assert "'lock_timeout', '250ms'" in settings and "'maintenance_work_mem', '64MB'" in settings
    assert "FROM memories" in first_scan  # measured under those settings
    assert rewrite[2] == "CLUSTER memories USING ix_memories_readable"
    assert rewrite[3] == "ANALYZE memories" and "FROM memories" in rewrite[4]
    assert "maintenance_work_mem" not in _sql_of(cluster_op(250, None))[0]
