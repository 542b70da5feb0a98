"""Engine: recall before the first call, writes only after the final verdict, RecallSet per run."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import sqlalchemy as sa

from harness import Engine, RunInput, RunOutcome, Verdict
from harness.errors import InvalidInput
from harness.mcp_server.identity import Identity
from harness.memory import (
    AsyncMemoryStore,
    Caller,
    Kind,
    MemoryStore,
    RecallRequest,
    Scope,
    Status,
)
from harness.recallset import RecallSet
from harness.run.engine import EngineConfig
from harness.run.extract import ExtractionContext, OpenAIExtractor, RuleExtractor
from harness.run.lessons import is_concrete_feedback, lesson_key

from .conftest import unreachable_store

FEEDBACK = "The summary must start with a three-line TL;DR and name every incident id."


def rows(store: MemoryStore, tenant: str) -> int:
    with store.maintenance("test") as conn:
        return int(
            conn.execute(
                sa.text("SELECT count(*) FROM memories WHERE tenant=:t"), {"t": tenant}
            ).scalar_one()
        )


class Script:
    """A model that records every call and answers from a list."""

    def __init__(self, *answers: str | dict[str, Any]):
        self.answers = list(answers)
        self.calls: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> str | dict[str, Any]:
        self.calls.append(messages)
        return self.answers.pop(0) if self.answers else "final answer"


def _async(fn: Any) -> Any:
    """``fn`` as a coroutine function that yields to the loop before answering."""

    async def call(*args: Any) -> Any:
        await asyncio.sleep(0)
        return fn(*args)

    return call


@pytest.fixture(params=["run", "arun"])
def mode(request: pytest.FixtureRequest) -> str:
    """``run``: the blocking engine on MemoryStore; ``arun``: the asyncio engine on an
    AsyncMemoryStore over the same database, with coroutine model and judge."""
    return str(request.param)


def run_engine(mode: str, store: MemoryStore, run: RunInput, **engine: Any) -> RunOutcome:
    """One run of an engine built from ``engine`` keywords, blocking or on asyncio."""
    if mode == "run":
        return Engine(store=store, **engine).run(run)

    async def main() -> RunOutcome:
        astore = await AsyncMemoryStore.connect(
            store.url,
            embedder=store.embedder,
            clock=store.clock,
            settings=store.settings,
            migrate=False,
            check_model=False,
        )
        try:
            engine["model"] = _async(engine["model"])
            engine["judge"] = _async(engine["judge"])
            return await Engine(store=astore, **engine).arun(run)
        finally:
            await astore.close()

    return asyncio.run(main())


def run_input(tenant: str, text: str = "Summarise the incident log for week 47") -> RunInput:
    return RunInput(
        tenant=tenant, user_id="alice", workflow_id="wf-1", session_id="s-1", input=text
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


def test_same_feedback_three_runs_one_active_lesson_history_three(
    store: MemoryStore, tenant: str, mode: str
) -> None:
    for _ in range(3):
        verdicts = iter([Verdict(accepted=False, feedback=FEEDBACK + "  "), Verdict(accepted=True)])
        run_engine(
            mode, store, run_input(tenant), model=Script(), judge=lambda i, o, v=verdicts: next(v)
        )
    hist = store.history(tenant, Scope.WORKFLOW, "wf-1", lesson_key(FEEDBACK))
    assert len(hist) == 3
    assert [h.status for h in hist].count(Status.ACTIVE) == 1


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


def test_store_outage_does_not_fail_the_run(
    caplog: pytest.LogCaptureFixture, tenant: str, mode: str
) -> None:
    down = unreachable_store()
    verdicts = iter([Verdict(accepted=False, feedback=FEEDBACK), Verdict(accepted=True)])
    with caplog.at_level(logging.WARNING):
        out = run_engine(
            mode, down, run_input(tenant), model=Script(), judge=lambda i, o: next(verdicts)
        )
    down.close()
    assert out.accepted and out.output == "final answer"
    assert out.recall is not None and out.recall.degraded and out.recall.text == ""
    assert out.memories_written == [] and len(out.write_errors) == 1  # reported, not silent
    assert "recall failed" in caplog.text and "memory write failed" in caplog.text


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


def test_bad_engine_and_run_input_are_typed() -> None:
    with pytest.raises(InvalidInput, match="max_attempts"):
        Engine(
            model=Script(),
            judge=lambda i, o: Verdict(accepted=True),
            store=None,  # type: ignore[arg-type]
            max_attempts=0,
        )
    with pytest.raises(InvalidInput, match="input"):
        RunInput(tenant="t", user_id="u", input="")


# --- the OpenAI-compatible extractor against a local server -----------------------------------


class FakeLLM(BaseHTTPRequestHandler):
    replies: list[tuple[int, str, float]] = []
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        FakeLLM.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        status, content, delay = FakeLLM.replies.pop(0)
        if delay:
            threading.Event().wait(delay)
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(payload.encode())
        except BrokenPipeError:
            pass  # the client timed out first, as the slow case intends

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def llm_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeLLM)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeLLM.requests.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


CTX = ExtractionContext("acme", "alice", "wf-1", "s-1", "run-1")


def test_openai_extractor_parses_and_scopes_from_context(llm_url: str) -> None:
    content = json.dumps(
        {
            "candidates": [
                {"scope": "user", "kind": "preference", "content": "Prefers metric units"},
                {
                    "scope": "platform",
                    "kind": "constraint",
                    "content": "Cite sources",
                    "priority": 2,
                },
                {
                    "scope": "workflow",
                    "kind": "lesson",
                    "content": "Tables need headers",
                    "tenant": "evil",
                    "scope_id": "bob",
                },
            ]
        }
    )
    FakeLLM.replies = [(200, content, 0)]
    ext = OpenAIExtractor(llm_url, "test-model", api_key="k-123", timeout_s=5)
    cands = ext.extract("input", "output", CTX)
    ext.close()
    assert [(c.scope.value, c.scope_id, c.tenant) for c in cands] == [
        ("user", "alice", "acme"),
        ("platform", None, "acme"),
        ("workflow", "wf-1", "acme"),
    ]
    assert all(c.source.origin.value == "completion" and c.source.run_id == "run-1" for c in cands)
    req = FakeLLM.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer k-123"
    assert req["body"]["model"] == "test-model"
    assert req["body"]["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize(
    "reply",
    [
        (200, "not json at all", 0),
        (200, json.dumps({"candidates": [{"scope": "galaxy", "kind": "fact", "content": "x"}]}), 0),
        (500, "{}", 0),
        (200, json.dumps({"candidates": [{"scope": "user", "kind": "fact", "content": "x"}]}), 2.0),
    ],
)
def test_openai_extractor_malformed_or_slow_gives_nothing(
    llm_url: str, reply: tuple[int, str, float], caplog: pytest.LogCaptureFixture
) -> None:
    FakeLLM.replies = [reply]
    ext = OpenAIExtractor(llm_url, "m", timeout_s=0.5)
    with caplog.at_level(logging.WARNING):
        assert ext.extract("in", "out", CTX) == []
    ext.close()
    assert "no candidates" in caplog.text


def test_engine_with_llm_extractor_writes_pending_platform(
    llm_url: str, store: MemoryStore, tenant: str, mode: str
) -> None:
    FakeLLM.replies = [
        (
            200,
            json.dumps(
                {
                    "candidates": [
                        {
                            "scope": "platform",
                            "kind": "constraint",
                            "content": "Never quote prices in USD",
                        },
                        {"scope": "user", "kind": "preference", "content": "Likes bullet points"},
                    ]
                }
            ),
            0,
        )
    ]
    out = run_engine(
        mode,
        store,
        run_input(tenant),
        model=Script(),
        judge=lambda i, o: Verdict(accepted=True),
        extractor=OpenAIExtractor(llm_url, "m"),
        config=EngineConfig(budget_chars=500),
    )
    statuses = {m.content: m.status for m in out.memories_written}
    assert statuses == {
        "Never quote prices in USD": Status.PENDING_APPROVAL,
        "Likes bullet points": Status.ACTIVE,
    }
    assert [m.content for m in store.pending(tenant)] == ["Never quote prices in USD"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("budget_chars", -5),
        ("budget_chars", 1_000_001),
        ("max_items", -1),
        ("max_item_chars", 0),
        ("max_tool_calls_per_attempt", -1),
        ("recallset_max_items", 0),
        ("budget_chars", True),
        ("max_items", 2.5),
        ("max_item_chars", "500"),
    ],
)
def test_engine_config_refuses_bad_limits_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(InvalidInput) as err:
        EngineConfig(**{field: value})
    assert err.value.fields == (field,) and field in str(err.value)


def test_engine_config_accepts_its_bounds() -> None:
    low = EngineConfig(budget_chars=0, max_items=0, max_item_chars=1, max_tool_calls_per_attempt=0)
    assert low.budget_chars == 0 and low.max_item_chars == 1
    with pytest.raises(InvalidInput, match="config"):
        Engine(model=Script(), judge=lambda i, o: Verdict(accepted=True), store=None, config={})  # type: ignore[arg-type]


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


def test_identity_keywords_and_one_caller_type() -> None:
    caller = Caller("acme", "alice", "wf-1", "s-1")
    flat = RunInput(tenant="acme", user_id="alice", workflow_id="wf-1", session_id="s-1", input="x")
    assert flat.caller == caller and RunInput.for_caller(caller, input="x") == flat
    req = RecallRequest.for_caller(caller, query="q", budget_chars=100)
    assert req.tenant == "acme" and req.session_id == "s-1" and req.caller == caller
    assert RecallRequest(tenant="acme", user_id="alice", workflow_id="wf-1", session_id="s-1") == (
        RecallRequest.model_validate({"caller": caller})
    )
    ctx = ExtractionContext.for_caller(caller, "run-1")
    assert ctx == CTX and isinstance(ctx, Caller) and ctx.caller == caller
    with pytest.raises(InvalidInput) as no_run:
        ExtractionContext("acme", "alice")
    assert no_run.value.fields == ("run_id",)
    assert Identity is Caller and Identity("acme", "alice").session_id is None
    with pytest.raises(InvalidInput, match="not both"):
        RecallRequest.model_validate({"caller": caller, "tenant": "other"})
    with pytest.raises(InvalidInput, match="caller"):
        RecallRequest.model_validate({"caller": {"tenant": "acme"}})
    with pytest.raises(InvalidInput) as err:
        Caller("acme", "alice ", None)
    assert err.value.fields == ("user_id",)


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
