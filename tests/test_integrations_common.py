"""MemoryRun, the runtime-neutral part of every integration: recall once, RecallSet tool calls
that never raise, writes only after the verdict, for the right scope and tenant."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import ConflictingState, InvalidInput
from harness.integrations.common import MemoryRun, recallset_tool_specs
from harness.memory import AsyncMemoryStore, Kind, Scope
from harness.recallset import TOOL_DEFINITIONS
from harness.run.engine import Verdict
from harness.run.extract import RuleExtractor
from tests.conftest import unreachable_store
from tests.integration_support import (  # noqa: F401 (fixtures)
    LESSON_FEEDBACK,
    astore,
    count_memories,
    runner,
    workflow_lesson,
)


def test_recall_happens_once_per_run_and_later_writes_do_not_change_it(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,  # noqa: F811
) -> None:
    async def scenario() -> tuple[str, str]:
        await astore.write(workflow_lesson(tenant, "Always cite the source document."))
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        first = await run.instructions("Summarise the report")
        await astore.write(workflow_lesson(tenant, "Never use bullet points in summaries."))
        second = await run.instructions("something else entirely")
        return first, second

    first, second = runner.run(scenario())
    assert "Always cite the source document." in first
    assert second == first  # the second call did not read the store again


def test_remember_writes_the_rejection_lesson_for_the_workflow_with_the_task_as_context(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,  # noqa: F811
) -> None:
    async def scenario() -> Any:
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        await run.instructions("Summarise the quarterly report")
        run.call_tool("recallset_add", {"content": "draft idea", "mark": "keep"})
        assert count_memories(db_url, tenant) == 0  # nothing before the verdict
        return await run.remember(
            "a long answer", Verdict(accepted=False, feedback=LESSON_FEEDBACK)
        )

    outcome = runner.run(scenario())
    [lesson] = outcome.memories_written
    assert (lesson.scope, lesson.scope_id, lesson.kind) == (Scope.WORKFLOW, "wf-1", Kind.LESSON)
    assert LESSON_FEEDBACK in lesson.content
    assert lesson.context == "Summarise the quarterly report"
    assert lesson.source.verdict_id == outcome.verdicts[0].id
    assert count_memories(db_url, tenant) == 1  # the RecallSet note never reached the store


def test_without_a_workflow_the_lesson_belongs_to_the_user(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,  # noqa: F811
) -> None:
    run = MemoryRun(astore, tenant=tenant, user_id="bob", input="Write the weekly digest")
    outcome = runner.run(run.remember("x", Verdict(accepted=False, feedback=LESSON_FEEDBACK)))
    [lesson] = outcome.memories_written
    assert (lesson.scope, lesson.scope_id) == (Scope.USER, "bob")


def test_generic_feedback_and_repeated_feedback_do_not_make_extra_lessons(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,  # noqa: F811
) -> None:
    run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1", input="task")
    verdicts = [
        Verdict(accepted=False, feedback="wrong"),
        Verdict(accepted=False, feedback=LESSON_FEEDBACK),
        Verdict(accepted=False, feedback=LESSON_FEEDBACK.upper()),
    ]
    outcome = runner.run(run.remember("x", verdicts))
    assert len(outcome.memories_written) == 1
    assert outcome.attempts == 3
    assert count_memories(db_url, tenant) == 1


def test_an_accepted_run_writes_the_extractors_candidates(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,  # noqa: F811
) -> None:
    run = MemoryRun(
        astore,
        tenant=tenant,
        user_id="alice",
        input="From now on answer in French.",
        extractor=RuleExtractor(),
    )
    outcome = runner.run(run.remember("D'accord.", Verdict(accepted=True)))
    [pref] = outcome.memories_written
    assert (pref.scope, pref.scope_id, pref.kind) == (Scope.USER, "alice", Kind.PREFERENCE)
    assert "French" in pref.content


def test_a_guard_refusal_is_reported_not_raised_and_not_stored(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,
    db_url: str,  # noqa: F811
) -> None:
    feedback = "Never print the key sk-live-0123456789abcdefghijklmnopqrstuv in the output again"
    run = MemoryRun(astore, tenant=tenant, user_id="alice", input="task")
    outcome = runner.run(run.remember("x", Verdict(accepted=False, feedback=feedback)))
    assert outcome.memories_written == []
    assert len(outcome.rejected_candidates) == 1
    assert count_memories(db_url, tenant) == 0


def test_another_tenants_memory_never_reaches_the_instructions(
    astore: AsyncMemoryStore,  # noqa: F811
    runner: asyncio.Runner,  # noqa: F811
    tenant: str,
    other_tenant: str,
) -> None:
    async def scenario() -> str:
        await astore.write(workflow_lesson(other_tenant, "Secret habit of the other tenant."))
        await astore.write(workflow_lesson(tenant, "Our own lesson about summaries."))
        run = MemoryRun(astore, tenant=tenant, user_id="alice", workflow_id="wf-1")
        return await run.instructions("Secret habit summaries")

    text = runner.run(scenario())
    assert "Our own lesson about summaries." in text
    assert "other tenant" not in text


def test_remember_twice_and_bad_verdicts_are_refused(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,  # noqa: F811
) -> None:
    run = MemoryRun(astore, tenant=tenant, user_id="alice", input="task")
    with pytest.raises(InvalidInput) as bad:
        runner.run(run.remember("x", []))
    assert bad.value.field == "verdict"
    with pytest.raises(InvalidInput):
        runner.run(run.remember("x", "accepted"))  # type: ignore[arg-type]
    runner.run(run.remember("x", Verdict(accepted=True)))
    assert run.finished and len(run.recallset) == 0
    with pytest.raises(ConflictingState):
        runner.run(run.remember("x", Verdict(accepted=True)))
    assert run.call_tool("recallset_overview", {}).is_error


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
    runner: asyncio.Runner,  # noqa: F811
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


def test_remember_sync_refuses_an_async_store_and_a_running_loop(
    astore: AsyncMemoryStore,
    runner: asyncio.Runner,
    tenant: str,  # noqa: F811
) -> None:
    run = MemoryRun(astore, tenant=tenant, user_id="alice", input="task")
    with pytest.raises(InvalidInput) as err:
        run.remember_sync("x", Verdict(accepted=True))
    assert err.value.field == "store"
    sync_store = unreachable_store()
    sync_run = MemoryRun(sync_store, tenant=tenant, user_id="alice", input="task")

    async def inside_a_loop() -> None:
        sync_run.remember_sync("x", Verdict(accepted=True))

    try:
        with pytest.raises(InvalidInput):
            runner.run(inside_a_loop())
    finally:
        sync_store.close()
    assert not run.finished and not sync_run.finished  # nothing happened


@pytest.mark.parametrize(
    ("module", "runtime", "extra"),
    [
        ("harness.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("harness.integrations.openai_agents", "agents", "openai-agents"),
    ],
)
def test_without_the_extra_the_import_error_names_the_extra(
    module: str, runtime: str, extra: str
) -> None:
    import subprocess
    import sys

    code = (
        f"import sys; sys.modules[{runtime!r}] = None\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert f"pip install 'harness-memory[{extra}]'" in done.stdout
