"""Anthropic memory tool: the SDK's abstract memory tool backed by harness-memory, fed the SDK's
own command objects (and, end to end, its tool runner over a scripted HTTP transport).

Here the tests that need no database, model or other process; the others are in
tests/db/integrations/test_integration_anthropic_db.py,
tests/system/test_integration_anthropic_system.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from harness.integrations._memory_files import FileError, MemoryFiles
from harness.memory import (
    Caller,
    Kind,
    Memory,
    Scope,
    Status,
)
from harness.memory.domain.types import Source
from harness.recallset import Mark, RecallSet

ALICE = "/memories/user/alice"


# --- pure: the file tree -------------------------------------------------------------------------


def _files(max_chars: int = 200) -> MemoryFiles:
    return MemoryFiles(Caller("acme", "alice", "wf-1"), RecallSet(), max_file_chars=max_chars)


@given(st.text(max_size=60))
def test_any_path_is_served_or_refused_with_the_tools_text(path: str) -> None:
    files = _files()
    try:
        files.create(path, "x")
    except FileError as exc:
        message = str(exc)
    else:
        message = ""
        assert path.startswith("/memories/") and ".." not in path.split("/")
    assert message or files.staged()


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "must start with /memories"),
        ("/memoriesx/user/alice/fact/a", "must start with /memories"),
        ("/memories/../etc/passwd", "escape"),
        ("/memories/user/alice/fact/../../bob/fact/a", "escape"),
        ("/memories/user/bob/fact/a", "another user"),
        ("/memories/session/s-9/fact/a", "no session"),
        ("/memories/workflow/wf-2/fact/a", "another workflow"),
        ("/memories/tenants/other/user/alice/fact/a", "unknown folder"),
        ("/memories/user/alice/notes/a", "not a kind"),
        ("/memories/notes.md", "unknown folder"),
        ("/memories/user/alice/fact", "directory"),
    ],
)
def test_paths_outside_the_runs_memories_are_refused(path: str, why: str) -> None:
    with pytest.raises(FileError, match=why):
        _files().create(path, "text")


def test_oversize_files_are_refused_whole() -> None:
    files = _files(max_chars=20)
    with pytest.raises(FileError, match="limit is 20"):
        files.create(f"{ALICE}/fact/a", "x" * 21)
    files.create(f"{ALICE}/fact/a", "x" * 20)
    with pytest.raises(FileError, match="limit is 20"):
        files.insert(f"{ALICE}/fact/a", 1, "more")
    assert files.view(f"{ALICE}/fact/a").endswith("x" * 20)


def test_every_change_is_logged_in_the_recallset_and_staged_only() -> None:
    rs = RecallSet()
    files = MemoryFiles(Caller("acme", "alice"), rs, max_file_chars=500)
    files.create(f"{ALICE}/fact/pets", "Alice has a cat.")
    files.str_replace(f"{ALICE}/fact/pets", "a cat", "two cats")
    files.rename(f"{ALICE}/fact/pets", f"{ALICE}/fact/animals")
    live = [it for it in rs.items() if it.mark is Mark.KEEP]
    assert any("two cats" in it.content and "animals" in it.content for it in live)
    assert all("a cat." not in it.content for it in live)  # the superseded draft is discarded
    (change,) = files.staged()  # net: one new file; the created-then-moved one nets out
    assert (change.location.key, change.content) == ("animals", "Alice has two cats.")


# --- stateful: the staged tree behaves like a dict of files over the stored ones ------------------

_PATHS = [f"{ALICE}/fact/a", f"{ALICE}/fact/b", "/memories/platform/constraint/c"]
_TEXT = st.text(alphabet="ab\n", max_size=8)
_MAX = 12


def _stored(key: str, content: str) -> Memory:
    return Memory(
        id=uuid.uuid4(),
        tenant="acme",
        scope=Scope.USER,
        scope_id="alice",
        kind=Kind.FACT,
        key=key,
        content=content,
        context=None,
        priority=0,
        status=Status.ACTIVE,
        source=Source(),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        expires_at=None,
        supersedes=None,
        superseded_by=None,
        fingerprint="f",
    )


class StagedTree(RuleBasedStateMachine):
    """MemoryFiles against a plain dict: every command either matches the dict or is refused
    with the tool's error text and changes nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.files = MemoryFiles(Caller("acme", "alice"), RecallSet(), max_file_chars=_MAX)
        self.files.load([_stored("a", "ab\nab")])
        self.base = {f"{ALICE}/fact/a": "ab\nab"}
        self.model = dict(self.base)

    def _attempt(self, action: Any, ok: bool, change: Any) -> None:
        if ok:
            action()
            change()
        else:
            with pytest.raises(FileError):
                action()

    @rule(path=st.sampled_from(_PATHS), text=_TEXT)
    def create(self, path: str, text: str) -> None:
        ok = path not in self.model and len(text) <= _MAX
        self._attempt(
            lambda: self.files.create(path, text), ok, lambda: self.model.__setitem__(path, text)
        )

    @rule(
        path=st.sampled_from(_PATHS),
        old=st.text(alphabet="ab\n", min_size=1, max_size=3),
        new=_TEXT,
    )
    def str_replace(self, path: str, old: str, new: str) -> None:
        current = self.model.get(path)
        after = None if current is None else current.replace(old, new)
        ok = current is not None and current.count(old) == 1 and len(after or "") <= _MAX
        self._attempt(
            lambda: self.files.str_replace(path, old, new),
            ok,
            lambda: self.model.__setitem__(path, after),
        )

    @rule(path=st.sampled_from(_PATHS))
    def delete(self, path: str) -> None:
        self._attempt(
            lambda: self.files.delete(path), path in self.model, lambda: self.model.pop(path)
        )

    @rule(old=st.sampled_from(_PATHS), new=st.sampled_from(_PATHS))
    def rename(self, old: str, new: str) -> None:
        ok = old in self.model and new not in self.model

        def move() -> None:
            self.model[new] = self.model.pop(old)

        self._attempt(lambda: self.files.rename(old, new), ok, move)

    @invariant()
    def views_match_the_dict(self) -> None:
        for path in _PATHS:
            if path in self.model:
                shown = self.files.view(path).split("\n")[1:]
                assert "\n".join(line.split("\t", 1)[1] for line in shown) == self.model[path]
            else:
                with pytest.raises(FileError, match="does not exist"):
                    self.files.view(path)

    @invariant()
    def staged_is_the_net_difference(self) -> None:
        expected = {p: c for p, c in self.model.items() if self.base.get(p) != c}
        expected |= {p: None for p in self.base if p not in self.model}
        assert {c.location.path: c.content for c in self.files.staged()} == expected


TestStagedTree = StagedTree.TestCase
TestStagedTree.settings = settings(max_examples=60, stateful_step_count=20, deadline=None)
