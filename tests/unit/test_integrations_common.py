"""MemoryRun, the runtime-neutral part of every integration: recall once, RecallSet tool calls
that never raise, writes only after the verdict, for the right scope and tenant.

Here the tests that need no database, model or other process; the others are in
tests/db/integrations/test_integrations_common_db.py,
tests/system/test_integrations_common_system.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.integrations.common import MemoryRun, recallset_tool_specs
from harness.recallset import TOOL_DEFINITIONS
from harness.run.engine import Verdict
from tests.support.integration_support import LESSON_FEEDBACK
from tests.support.stores import unreachable_store


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("tenant", {"tenant": "", "user_id": "alice"}),
        ("user_id", {"tenant": "acme", "user_id": ""}),
        ("workflow_id", {"tenant": "acme", "user_id": "alice", "workflow_id": ""}),
    ],
)
def test_a_bad_identity_is_refused_naming_the_field(field: str, kwargs: dict[str, Any]) -> None:
    store = unreachable_store()
    with pytest.raises(InvalidInput) as err:
        MemoryRun(store, **kwargs)
    store.close()
    assert field in err.value.fields


def test_an_unreachable_store_degrades_recall_and_reports_the_write_failure(
    runner: asyncio.Runner,
) -> None:
    store = unreachable_store()
    run = MemoryRun(store, tenant="acme", user_id="alice", workflow_id="wf-1", input="task")
    try:
        result = runner.run(run.recall())
        assert result.degraded and result.text == ""
        outcome = runner.run(run.remember("x", Verdict(accepted=False, feedback=LESSON_FEEDBACK)))
    finally:
        store.close()
    assert outcome.memories_written == []
    assert len(outcome.write_errors) == 1  # never a silent loss


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_names = st.sampled_from([d["name"] for d in TOOL_DEFINITIONS]) | st.text(max_size=15)
_keys = st.sampled_from(["content", "mark", "priority", "title", "id", "x"])


@settings(max_examples=200, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            _names,
            st.dictionaries(_keys, _json | st.sampled_from(["keep", "check", "discard", "r1"]))
            | st.text(max_size=30),
        ),
        max_size=12,
    )
)
def test_tool_calls_never_raise_and_errors_are_marked(calls: list[tuple[str, Any]]) -> None:
    store = unreachable_store()
    run = MemoryRun(store, tenant="acme", user_id="alice")
    try:
        for name, args in calls:
            answer = run.call_tool(name, args)
            assert isinstance(answer.text, str)
            if answer.is_error:
                assert answer.text.startswith("error:")
        assert len(run.recallset) <= run.recallset.max_items
    finally:
        store.close()


def test_tool_specs_are_independent_copies() -> None:
    specs = recallset_tool_specs()
    specs[0].parameters["properties"].clear()
    assert recallset_tool_specs()[0].parameters == TOOL_DEFINITIONS[0]["input_schema"]
    assert json.dumps(TOOL_DEFINITIONS)  # still intact and serialisable
