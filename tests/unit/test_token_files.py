"""A bearer-token file that cannot be used is a typed error naming it, logged once per change,
never a 500 per request (issue 31, point 4); both kinds of token file obey it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from pathlib import Path

import pytest

from harness.console import AdminTokenFile
from harness.console.tokens import Admin
from harness.errors import InvalidInput
from harness.mcp_server import TokenFile, TokenFileVerifier
from harness.memory import Caller
from harness.token_files import TokenFileUnreadable, WatchedFile, read_entries

DIGEST = "a" * 64
BROKEN = {
    "not JSON": b'{"tokens": [',
    "not UTF-8": b"\xff\xfe{}",
    "a list": b"[]",
    "entries not a list": b'{"tokens": {"a": 1}, "admins": {"a": 1}}',
    "an entry not an object": b'{"tokens": [1], "admins": [1]}',
    "a field missing": b'{"tokens": [{"sha256": "%s"}], "admins": [{"sha256": "%s"}]}'
    % (DIGEST.encode(), DIGEST.encode()),
    "a field mistyped": json.dumps(
        {
            "tokens": [{"sha256": DIGEST, "tenant": 5, "user_id": "u"}],
            "admins": [{"sha256": DIGEST, "name": "a", "tenants": "acme"}],
        }
    ).encode(),
    "an invisible identity": json.dumps(
        {
            "tokens": [{"sha256": DIGEST, "tenant": "t", "user_id": "alice\u200b"}],
            "admins": [{"sha256": DIGEST, "name": "alice\u200b", "tenants": ["t"]}],
        }
    ).encode(),
    "a bad digest": json.dumps(
        {
            "tokens": [{"sha256": 7, "tenant": "t", "user_id": "u"}],
            "admins": [{"sha256": "short", "name": "a", "tenants": ["t"]}],
        }
    ).encode(),
    "a bad expiry": json.dumps(
        {"tokens": [{"sha256": DIGEST, "tenant": "t", "user_id": "u", "expires_at": "soon"}]}
    ).encode(),
}


@pytest.mark.parametrize("content", BROKEN.values(), ids=list(BROKEN))
def test_a_broken_mcp_token_file_is_a_typed_error_naming_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "mcp-tokens.json"
    path.write_bytes(content)
    tokens = TokenFile(path)
    for read in (tokens.check, tokens.load, lambda: tokens.add(Caller("t", "u"))):
        with pytest.raises(TokenFileUnreadable) as info:
            read()
        assert info.value.path == path and str(path) in str(info.value)
        assert "\n" not in str(info.value)
    assert path.read_bytes() == content  # minting never rewrote the broken file


@pytest.mark.parametrize(
    "content", [v for k, v in BROKEN.items() if k != "a bad expiry"], ids=list(BROKEN)[:-1]
)
def test_a_broken_console_token_file_is_a_typed_error_naming_it(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "console-tokens.json"
    path.write_bytes(content)
    tokens = AdminTokenFile(path)
    for read in (tokens.load, lambda: tokens.verify("hmc_x"), lambda: tokens.add("a", ["t"])):
        with pytest.raises(TokenFileUnreadable, match=re.escape(str(path))):
            read()
    assert path.read_bytes() == content


def test_an_unreadable_file_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "folder-not-file.json"
    path.mkdir()
    with pytest.raises(TokenFileUnreadable, match=r"folder-not-file\.json"):
        read_entries(path, "tokens")
    assert read_entries(tmp_path / "missing.json", "tokens") == []  # no file: no tokens


def test_a_watched_file_logs_once_per_change_and_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="harness.token_files")
    path = tmp_path / "mcp-tokens.json"
    tokens = TokenFile(path)
    token = tokens.add(Caller("t", "alice"))
    verifier = TokenFileVerifier(tokens)
    assert asyncio.run(verifier.verify_token(token)) is not None
    assert verifier.problem() is None

    path.write_text('{"tokens": [')  # an edit gone wrong
    for _ in range(50):
        assert asyncio.run(verifier.verify_token(token)) is None  # fails closed
        problem = verifier.problem()
        assert problem is not None and problem.path == path
    assert len(caplog.records) == 1 and str(path) in caplog.records[0].getMessage()

    path.write_text('{"tokens": "still broken"}')
    os.utime(path, ns=(1, 1))  # another change (its own modification time)
    assert verifier.problem() is not None
    assert len(caplog.records) == 2  # one more line: it changed and is still broken

    path.write_text(json.dumps({"tokens": []}))
    TokenFile(path).add(Caller("t", "bob"))
    assert verifier.problem() is None  # fixed: served again, no restart
    assert asyncio.run(verifier.verify_token(token)) is None  # alice's entry is gone


def test_watched_file_caches_a_good_load_until_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{}")
    loads: list[int] = []
    watched = WatchedFile(path, lambda p: loads.append(1) or len(loads))
    assert [watched.current() for _ in range(5)] == [1] * 5


def test_an_admin_name_and_tenants_follow_the_identity_rule() -> None:
    assert Admin("Ada Lovelace", ("acme",)).name == "Ada Lovelace"
    for name, tenants, field in [
        ("ada\u200b", ("acme",), "name"),
        ("ada", ("acme\u2060",), "tenant"),
        ("ada", ("\u3164",), "tenant"),
    ]:
        with pytest.raises(InvalidInput) as info:
            Admin(name, tenants)
        assert info.value.fields == (field,)
