"""Engine: recall before the first call, writes only after the final verdict, RecallSet per run.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_engine.py, tests/system/test_engine_system.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import sqlalchemy as sa

from bench.common import all_tenants
from harness import Engine, RunInput, Verdict
from harness.errors import InvalidInput
from harness.memory import (
    AsyncMemoryStore,
    Kind,
    MemoryStore,
    Scope,
    Status,
)
from harness.memory.domain.lessons import is_concrete_feedback, lesson_key
from harness.recallset import RecallSet
from harness.run.extract import RuleExtractor
from tests.unit.test_engine import FEEDBACK, Script, run_engine, run_input


def rows(store: MemoryStore, tenant: str) -> int:
    with all_tenants(store) as conn:
        return int(
            conn.execute(
                sa.text("SELECT count(*) FROM memories WHERE tenant=:t"), {"t": tenant}
            ).scalar_one()
        )


def test_no_memory_row_exists_while_the_judge_decides(
    store: MemoryStore, tenant: str, mode: str
) -> None:
    seen: list[int] = []

    def judge(task: str, output: str) -> Verdict:
        seen.append(rows(store, tenant))
        return Verdict(accepted=len(seen) >= 3, feedback=FEEDBACK)

    out = run_engine(
        mode,
        store,
        run_input(tenant, "Remember that the on-call rota lives in the wiki. Summarise week 47"),
        model=Script(),
        judge=judge,
        extractor=RuleExtractor(),
    )
    assert seen == [0, 0, 0]
    assert out.attempts == 3 and out.accepted
    kinds = sorted(m.kind.value for m in out.memories_written)
    assert kinds == ["fact", "lesson"]  # one lesson (same feedback twice), one extracted fact
    assert rows(store, tenant) == 2


def test_feedback_reaches_next_attempt_as_a_message_not_memory(
    store: MemoryStore, tenant: str, mode: str
) -> None:
    model = Script("draft", "revised")
    verdicts = iter([Verdict(accepted=False, feedback=FEEDBACK), Verdict(accepted=True)])
    run_engine(mode, store, run_input(tenant), model=model, judge=lambda i, o: next(verdicts))
    second = model.calls[1]
    assert second[0]["role"] == "system" and FEEDBACK not in second[0]["content"]
    assert second[-1]["role"] == "user" and FEEDBACK in second[-1]["content"]
    assert second[-2] == {"role": "assistant", "content": "draft"}


def test_next_run_first_call_contains_the_lesson(
    store: MemoryStore, tenant: str, mode: str
) -> None:
    verdicts = iter([Verdict(accepted=False, feedback=FEEDBACK), Verdict(accepted=True)])
    first = run_engine(
        mode, store, run_input(tenant), model=Script(), judge=lambda i, o: next(verdicts)
    )
    lesson = first.memories_written[0]
    assert lesson.kind is Kind.LESSON and lesson.scope is Scope.WORKFLOW
    assert lesson.scope_id == "wf-1" and lesson.context == first_input(tenant).input
    assert lesson.source.run_id == first.run_id
    assert lesson.source.verdict_id == first.verdicts[0].id
    model = Script()
    second = run_engine(
        mode,
        store,
        run_input(tenant, "Summarise the incident log for week 48"),
        model=model,
        judge=lambda i, o: Verdict(accepted=True),
    )
    system = model.calls[0][0]
    assert system["role"] == "system"
    assert system["content"] == second.recall.text  # type: ignore[union-attr]
    assert FEEDBACK in system["content"] and "workflow lesson" in system["content"]
    assert len(model.calls) == 1


def first_input(tenant: str) -> RunInput:
    return run_input(tenant)


def test_same_feedback_three_runs_one_lesson_taught_three_times(
    store: MemoryStore, tenant: str, mode: str
) -> None:
    for _ in range(3):
        verdicts = iter([Verdict(accepted=False, feedback=FEEDBACK + "  "), Verdict(accepted=True)])
        run_engine(
            mode, store, run_input(tenant), model=Script(), judge=lambda i, o, v=verdicts: next(v)
        )
    hist = store.history(tenant, Scope.WORKFLOW, "wf-1", lesson_key(FEEDBACK))
    # One rule, one lesson: the later teachings reinforce it, and its record keeps each one.
    assert [h.status for h in hist] == [Status.ACTIVE]
    events = store.lesson_events(hist[0].id, tenant=tenant)
    teachings = [e for e in events if e["event"] in ("taught", "missed", "repeated")]
    assert len(teachings) == 3 and teachings[0]["event"] == "taught"
    assert all(e["feedback"].strip() == FEEDBACK for e in teachings)


def test_generic_feedback_teaches_nothing(store: MemoryStore, tenant: str, mode: str) -> None:
    verdicts = iter(
        [
            Verdict(accepted=False, feedback="error"),
            Verdict(accepted=False, feedback=None),
            Verdict(accepted=True),
        ]
    )
    out = run_engine(
        mode, store, run_input(tenant), model=Script(), judge=lambda i, o: next(verdicts)
    )
    assert out.memories_written == [] and rows(store, tenant) == 0
    assert not is_concrete_feedback("Rejected.")
    assert is_concrete_feedback("Missing the comparison table for plans")


def test_recallset_tools_and_cleared_after_a_run_that_raised(
    store: MemoryStore, tenant: str, mode: str
) -> None:
    made: list[RecallSet] = []

    def factory(cap: int) -> RecallSet:
        made.append(RecallSet(max_items=cap))
        return made[-1]

    model = Script(
        {"name": "recallset_add", "arguments": {"content": "check the VPN log"}},
        {"name": "recallset_overview", "arguments": {}},
        "answer",
    )
    run_engine(
        mode,
        store,
        run_input(tenant),
        model=model,
        judge=lambda i, o: Verdict(accepted=True),
        recallset_factory=factory,
    )
    tool_results = [m for m in model.calls[-1] if m["role"] == "tool"]
    assert json.loads(tool_results[0]["content"])["status"] == "added"
    assert "check the VPN log" in tool_results[1]["content"]
    assert len(made[0]) == 0  # cleared at run end

    def exploding(messages: list[dict[str, Any]]) -> str | dict[str, Any]:
        if len(made[-1]) == 0:
            return {"name": "recallset_add", "arguments": {"content": "half-done"}}
        raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError, match="model crashed"):
        run_engine(
            mode,
            store,
            run_input(tenant),
            model=exploding,
            judge=lambda i, o: Verdict(accepted=True),
            recallset_factory=factory,
        )
    assert len(made[-1]) == 0
    runs = store.runs.list(tenant)
    assert sorted(r["status"] for r in runs) == ["accepted", "failed"]  # same fixed clock


def test_rule_extractor_and_platform_candidates_wait(
    store: MemoryStore, tenant: str, mode: str
) -> None:
    text = (
        "From now on, answer in British English. I prefer tables over prose. "
        "Company-wide policy: never include customer e-mail addresses. "
        "For this session: keep it short. Summarise week 47."
    )
    out = run_engine(
        mode,
        store,
        run_input(tenant, text),
        model=Script(),
        judge=lambda i, o: Verdict(accepted=True),
        extractor=RuleExtractor(),
    )
    got = {(m.scope.value, m.kind.value, m.status.value, m.content) for m in out.memories_written}
    assert got == {
        ("user", "preference", "active", "Answer in British English."),
        ("user", "preference", "active", "I prefer tables over prose."),
        ("platform", "constraint", "pending_approval", "Never include customer e-mail addresses."),
        ("session", "preference", "active", "Keep it short."),
    }
    assert all(m.source.run_id == out.run_id for m in out.memories_written)


def test_guard_rejection_is_reported_not_silent(store: MemoryStore, tenant: str, mode: str) -> None:
    out = run_engine(
        mode,
        store,
        run_input(tenant, "Remember that the admin password is Tr0ub4dor&3."),
        model=Script(),
        judge=lambda i, o: Verdict(accepted=True),
        extractor=RuleExtractor(),
    )
    assert out.memories_written == []
    assert [reason for _, reason in out.rejected_candidates] == [
        "assigns a password or secret value"
    ]


def test_run_refuses_asynchronous_parts_and_names_them(store: MemoryStore, tenant: str) -> None:
    async def amodel(messages: list[dict[str, Any]]) -> str:
        return "answer"

    with pytest.raises(InvalidInput, match="arun") as err:
        Engine(model=amodel, judge=lambda i, o: Verdict(accepted=True), store=store).run(
            run_input(tenant)
        )
    assert err.value.fields == ("model",)
    runs = store.runs.list(tenant)
    assert [r["status"] for r in runs] == ["failed"]  # recorded, not lost

    async def main() -> None:
        astore = await AsyncMemoryStore.connect(
            store.url, embedder=None, migrate=False, check_model=False
        )
        try:
            engine = Engine(model=Script(), judge=lambda i, o: Verdict(accepted=True), store=astore)
            with pytest.raises(InvalidInput, match="arun"):
                engine.run(run_input(tenant))
        finally:
            await astore.close()

    asyncio.run(main())


def test_arun_over_a_blocking_store_and_plain_callables(store: MemoryStore, tenant: str) -> None:
    verdicts = iter([Verdict(accepted=False, feedback=FEEDBACK), Verdict(accepted=True)])
    engine = Engine(model=Script(), judge=lambda i, o: next(verdicts), store=store)
    out = asyncio.run(engine.arun(run_input(tenant)))
    assert out.accepted and [m.kind for m in out.memories_written] == [Kind.LESSON]
    assert [r["status"] for r in store.runs.list(tenant)] == ["accepted"]


def test_cancelled_arun_records_a_failed_run_and_writes_nothing(
    store: MemoryStore, tenant: str
) -> None:
    async def main() -> None:
        astore = await AsyncMemoryStore.connect(
            store.url, embedder=None, clock=store.clock, migrate=False, check_model=False
        )
        called = asyncio.Event()

        async def stuck_model(messages: list[dict[str, Any]]) -> str:
            called.set()
            await asyncio.Event().wait()  # never answers
            return "unreachable"

        async def judge(i: str, o: str) -> Verdict:
            return Verdict(accepted=False, feedback=FEEDBACK)

        try:
            engine = Engine(model=stuck_model, judge=judge, store=astore)
            task = asyncio.create_task(engine.arun(run_input(tenant)))
            await called.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await astore.close()

    asyncio.run(main())
    assert [r["status"] for r in store.runs.list(tenant)] == ["failed"]
    assert rows(store, tenant) == 0
