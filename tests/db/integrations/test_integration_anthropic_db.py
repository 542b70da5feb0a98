"""Anthropic memory tool: the SDK's abstract memory tool backed by harness-memory, fed the SDK's
own command objects (and, end to end, its tool runner over a scripted HTTP transport).

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_integration_anthropic.py, tests/system/test_integration_anthropic_system.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anthropic import Anthropic
from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from harness.errors import InvalidInput
from harness.integrations.anthropic_memory import AsyncHarnessMemoryTool, HarnessMemoryTool
from harness.memory import (
    AsyncMemoryStore,
    Kind,
    MemoryCandidate,
    MemoryStore,
    Scope,
)
from harness.run.engine import Verdict
from tests.support.hash_embedder import HashEmbedder
from tests.support.loop_thread import open_async_store
from tests.unit.test_integration_anthropic import ALICE

ROOT = Path(__file__).resolve().parents[3]


def _view(path: str, view_range: list[int] | None = None) -> BetaMemoryTool20250818ViewCommand:
    return BetaMemoryTool20250818ViewCommand(command="view", path=path, view_range=view_range)


def _create(path: str, text: str) -> BetaMemoryTool20250818CreateCommand:
    return BetaMemoryTool20250818CreateCommand(command="create", path=path, file_text=text)


def _tool(store: MemoryStore, tenant: str, **ids: str) -> HarnessMemoryTool:
    return HarnessMemoryTool(store, tenant=tenant, user_id="alice", **ids)


# --- the handler, with the SDK's command objects --------------------------------------------------


def test_commands_are_staged_and_nothing_is_written_before_the_verdict(
    store: MemoryStore, tenant: str
) -> None:
    tool = _tool(store, tenant)
    assert isinstance(tool, BetaAbstractMemoryTool)
    tool.recall("tone of answers")
    path = f"{ALICE}/preference/tone"
    assert tool.execute(_create(path, "Plain words.\n")) == f"File created successfully at: {path}"
    tool.execute(
        BetaMemoryTool20250818InsertCommand(
            command="insert", path=path, insert_line=1, insert_text="No jargon."
        )
    )
    tool.execute(
        BetaMemoryTool20250818StrReplaceCommand(
            command="str_replace", path=path, old_str="Plain", new_str="Simple"
        )
    )
    assert "Simple words." in tool.execute(_view(path)) and "No jargon." in tool.execute(
        _view(path)
    )
    assert f"{ALICE}/preference/tone" in tool.execute(_view("/memories"))
    # mid-run: the store holds nothing, and another run does not see the staged file
    assert store.history(tenant, Scope.USER, "alice", "tone") == []
    with pytest.raises(ToolError, match="does not exist"):
        _tool(store, tenant).execute(_view(path))

    done = tool.remember(Verdict(accepted=True), task_input="tone of answers")
    (memory,) = done.written
    assert (memory.scope, memory.scope_id, memory.kind, memory.key) == (
        Scope.USER,
        "alice",
        Kind.PREFERENCE,
        "tone",
    )
    assert memory.content == "Simple words.\nNo jargon.\n"
    assert memory.source.origin.value == "completion"


def test_a_rejected_run_drops_its_staged_files_and_keeps_the_lesson(
    store: MemoryStore, tenant: str
) -> None:
    tool = _tool(store, tenant, workflow_id="wf-1")
    tool.recall("write the report")
    tool.execute(_create("/memories/workflow/wf-1/decision/format", "Use bullet points."))
    done = tool.remember(
        Verdict(accepted=False, feedback="Every table needs a caption naming its source."),
        task_input="write the report",
    )
    assert [m.kind for m in done.written] == [Kind.LESSON]
    assert store.history(tenant, Scope.WORKFLOW, "wf-1", "format") == []
    with pytest.raises(InvalidInput, match="already remembered"):
        tool.remember(Verdict(accepted=True), task_input="again")
    with pytest.raises(ToolError, match="run is over"):
        tool.call(
            {"command": "create", "path": "/memories/workflow/wf-1/fact/late", "file_text": "x"}
        )


def test_view_serves_recall_and_the_store(store: MemoryStore, tenant: str) -> None:
    store.write(
        MemoryCandidate(
            tenant=tenant,
            scope=Scope.USER,
            scope_id="alice",
            kind=Kind.PREFERENCE,
            key="lang",
            content="Answer in French.",
        )
    )
    store.write(
        MemoryCandidate(
            tenant=tenant,
            scope=Scope.USER,
            scope_id="alice",
            kind=Kind.FACT,
            key="pet",
            content="Alice has a cat named Miso.",
        )
    )
    tool = _tool(store, tenant)
    tool.recall("translate this letter")
    listing = tool.execute(_view("/memories"))
    assert f"{ALICE}/preference/lang" in listing
    assert "Answer in French." in tool.execute(_view(f"{ALICE}/preference/lang"))
    # a file recall left out is read from the store on demand
    assert "Miso" in tool.execute(_view(f"{ALICE}/fact/pet", [1, -1]))
    with pytest.raises(ToolError, match="does not exist"):
        tool.execute(_view(f"{ALICE}/lesson/pet"))  # same key, other kind: not this file


def test_an_accepted_delete_forgets_and_a_rename_moves(store: MemoryStore, tenant: str) -> None:
    store.write(
        MemoryCandidate(
            tenant=tenant,
            scope=Scope.USER,
            scope_id="alice",
            kind=Kind.FACT,
            key="old",
            content="Alice lives in Lyon.",
        )
    )
    store.write(
        MemoryCandidate(
            tenant=tenant,
            scope=Scope.USER,
            scope_id="alice",
            kind=Kind.FACT,
            key="gone",
            content="Alice plays chess.",
        )
    )
    tool = _tool(store, tenant)
    tool.execute(
        BetaMemoryTool20250818RenameCommand(
            command="rename", old_path=f"{ALICE}/fact/old", new_path=f"{ALICE}/fact/city"
        )
    )
    tool.execute(BetaMemoryTool20250818DeleteCommand(command="delete", path=f"{ALICE}/fact/gone"))
    assert len(store.history(tenant, Scope.USER, "alice", "gone")) == 1  # not yet
    done = tool.remember(Verdict(accepted=True), task_input="x")
    assert done.forgotten == 2 and [m.key for m in done.written] == ["city"]
    assert store.history(tenant, Scope.USER, "alice", "gone") == []
    assert store.history(tenant, Scope.USER, "alice", "old") == []


def test_refusals_come_back_as_the_tools_error_text(store: MemoryStore, tenant: str) -> None:
    tool = _tool(store, tenant)
    cases = [
        ({"command": "view", "path": "/etc/passwd"}, "must start with /memories"),
        ({"command": "create", "path": "/memories/../x", "file_text": "x"}, "escape"),
        (
            {"command": "create", "path": "/memories/user/bob/fact/a", "file_text": "x"},
            "another user",
        ),
        ({"command": "create", "path": f"{ALICE}/fact/a", "file_text": "x" * 5000}, "limit"),
        (
            {
                "command": "create",
                "path": f"{ALICE}/fact/key",
                "file_text": "token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB",
            },
            "Refused",
        ),
        ({"command": "create", "path": f"{ALICE}/fact/a"}, "file_text"),
        ({"command": "view"}, "path"),
        (
            {
                "command": "insert",
                "path": f"{ALICE}/fact/a",
                "insert_line": "x",
                "insert_text": "y",
            },
            "does not exist",
        ),
    ]
    for raw, why in cases:
        with pytest.raises(ToolError, match=why):
            tool.call(raw)
    assert tool.run.files.staged() == []


def test_tenants_and_users_never_see_each_other(
    store: MemoryStore, tenant: str, other_tenant: str
) -> None:
    store.write(
        MemoryCandidate(
            tenant=tenant,
            scope=Scope.USER,
            scope_id="alice",
            kind=Kind.PREFERENCE,
            key="lang",
            content="Answer in French.",
        )
    )
    theirs = _tool(store, other_tenant)
    theirs.recall("answer")
    assert "lang" not in theirs.execute(_view("/memories"))
    with pytest.raises(ToolError, match="does not exist"):
        theirs.execute(_view(f"{ALICE}/preference/lang"))
    bob = HarnessMemoryTool(store, tenant=tenant, user_id="bob")
    with pytest.raises(ToolError, match="another user"):
        bob.execute(_view(f"{ALICE}/preference/lang"))


# --- end to end through the SDK's tool runner (scripted HTTP, no network) --------------------------


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _client(replies: list[dict[str, Any]], requests: list[dict[str, Any]]) -> Anthropic:
    script = iter(replies)

    def handle(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.content))
        return httpx2.Response(200, json=next(script))

    return Anthropic(
        api_key="test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handle)),
        max_retries=0,
    )


def test_the_tool_runner_turns_refusals_into_error_results_and_runs_on(
    store: MemoryStore, tenant: str
) -> None:
    tool = _tool(store, tenant)
    recalled = tool.recall("hello")
    requests: list[dict[str, Any]] = []
    replies = [
        _message(
            [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "memory",
                    "input": {"command": "view", "path": "/etc/passwd"},
                }
            ],
            "tool_use",
        ),
        _message(
            [
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "memory",
                    "input": {
                        "command": "create",
                        "path": f"{ALICE}/fact/x",
                        "file_text": "Alice likes tea.",
                    },
                }
            ],
            "tool_use",
        ),
        _message([{"type": "text", "text": "done"}], "end_turn"),
    ]
    final = (
        _client(replies, requests)
        .beta.messages.tool_runner(
            model="claude-test",
            max_tokens=64,
            system=recalled.text or "-",
            messages=[{"role": "user", "content": "hello"}],
            tools=[tool],
        )
        .until_done()
    )
    assert final.content[0].type == "text"
    refused = requests[1]["messages"][-1]["content"][0]
    assert refused["is_error"] is True and "must start with /memories" in json.dumps(
        refused["content"]
    )
    created = requests[2]["messages"][-1]["content"][0]
    assert not created.get("is_error") and "created" in json.dumps(created["content"])
    assert store.history(tenant, Scope.USER, "alice", "x") == []  # staged, not written
    assert requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]


# --- async ---------------------------------------------------------------------------------------


@pytest.fixture
def async_store(db_url: str, clock: Any) -> Iterator[AsyncMemoryStore]:
    s = asyncio.run(open_async_store(db_url, HashEmbedder(), clock))
    yield s
    asyncio.run(s.close())


def test_the_async_handler_stages_until_the_verdict(
    async_store: AsyncMemoryStore, tenant: str
) -> None:
    async def scenario() -> tuple[list[Any], list[Any], str]:
        tool = AsyncHarnessMemoryTool(
            async_store, tenant=tenant, user_id="alice", workflow_id="wf-a"
        )
        await tool.recall("reply to the customer")
        await tool.call(
            {
                "command": "create",
                "path": "/memories/workflow/wf-a/fact/sla",
                "file_text": "Replies within 4 hours.",
            }
        )
        with pytest.raises(ToolError, match="another workflow"):
            await tool.call({"command": "view", "path": "/memories/workflow/wf-b"})
        during = await async_store.history(tenant, Scope.WORKFLOW, "wf-a", "sla")
        await tool.remember(Verdict(accepted=True), task_input="reply to the customer")
        after = await async_store.history(tenant, Scope.WORKFLOW, "wf-a", "sla")
        fresh = AsyncHarnessMemoryTool(
            async_store, tenant=tenant, user_id="alice", workflow_id="wf-a"
        )
        recalled = await fresh.recall("reply to the customer")
        return during, after, recalled.text

    during, after, text = asyncio.run(scenario())
    assert during == [] and [m.content for m in after] == ["Replies within 4 hours."]
    assert "Replies within 4 hours." in text
