"""Engine: recall before the first call, writes only after the final verdict, RecallSet per run.

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_engine.py, tests/db/test_engine_db.py."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harness import Verdict
from harness.memory import (
    MemoryStore,
    Status,
)
from harness.run.engine import EngineConfig
from harness.run.extract import OpenAIExtractor
from tests.unit.test_engine import CTX, Script, run_engine, run_input

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
