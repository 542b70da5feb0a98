"""Engine: recall before the first call, writes only after the final verdict, RecallSet per run.

Here the tests that need no database, model or other process; the others are in
tests/db/test_engine_db.py, tests/system/test_engine_system.py."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import harness.mcp_server
from harness import Engine, RunInput, RunOutcome, Verdict
from harness.errors import InvalidInput
from harness.memory import (
    AsyncMemoryStore,
    Caller,
    MemoryStore,
    RecallRequest,
)
from harness.run.engine import EngineConfig
from harness.run.extract import ExtractionContext
from tests.support.stores import unreachable_store

FEEDBACK = "The summary must start with a three-line TL;DR and name every incident id."


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


CTX = ExtractionContext("acme", "alice", "wf-1", "s-1", "run-1")


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
    # one identity type: the MCP server and the memo books take Caller itself, no alias
    assert (
        not hasattr(harness.mcp_server, "Identity") and "Identity" not in harness.mcp_server.__all__
    )
    assert Caller("acme", "alice").session_id is None
    with pytest.raises(InvalidInput, match="not both"):
        RecallRequest.model_validate({"caller": caller, "tenant": "other"})
    with pytest.raises(InvalidInput, match="caller"):
        RecallRequest.model_validate({"caller": {"tenant": "acme"}})
    with pytest.raises(InvalidInput) as err:
        Caller("acme", "alice ", None)
    assert err.value.fields == ("user_id",)
