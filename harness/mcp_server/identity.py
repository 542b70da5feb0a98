"""Who is calling: bearer tokens (stored hashed) map to a tenant and user; never tool input.

A token file that cannot be used refuses every token (never a guess from an older copy): the
verifier answers "no such token" and :meth:`TokenFileVerifier.problem` says why, for the HTTP
gate's 503 (:class:`~harness.mcp_server.http.TokenFileGate`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken

from harness.memory.domain.caller import Caller
from harness.token_files import (
    TokenFileUnreadable,
    WatchedFile,
    hash_token,
    mint_token,
    parse_entries,
    read_entries,
    write_entries,
)

__all__ = ["TokenFile", "TokenFileVerifier", "hash_token"]


class TokenFile:
    """A JSON file of ``{"tokens": [{"sha256", "tenant", "user_id", "workflow_id"}]}``."""

    def __init__(self, path: Path):
        self.path = path

    def _entries(self) -> list[dict[str, Any]]:
        return read_entries(self.path, "tokens")

    def _parsed(self) -> list[tuple[str, Caller, float | None]]:
        return parse_entries(self.path, "tokens", _parse_entry)

    def load(self) -> dict[str, Caller]:
        """Hash -> identity of every token, expired ones included. A missing file means none.

        Raises:
            TokenFileUnreadable: the file cannot be read or an entry is malformed.
        """
        return {digest: caller for digest, caller, _ in self._parsed()}

    def expiries(self) -> dict[str, float]:
        """Hash -> expiry (Unix seconds) of the tokens minted with one.

        Raises:
            TokenFileUnreadable: the file cannot be read or an entry is malformed.
        """
        return {digest: at for digest, _, at in self._parsed() if at is not None}

    def check(self) -> None:
        """Raise :class:`TokenFileUnreadable` unless the file (or its absence) can be used: a
        server checks before it starts. Read-only."""
        self._parsed()

    def add(self, identity: Caller, *, expires_at: float | None = None) -> str:
        """Mint a token for ``identity``, store its hash, return the token (shown once).

        ``expires_at`` (Unix seconds) makes the token invalid from then on.
        """
        self.check()  # never rewrite a file whose entries cannot be used
        token = mint_token("hm_")
        entries = self._entries()
        entry: dict[str, Any] = {
            "sha256": hash_token(token),
            "tenant": identity.tenant,
            "user_id": identity.user_id,
            "workflow_id": identity.workflow_id,
        }
        if expires_at is not None:
            entry["expires_at"] = expires_at
        entries.append(entry)
        write_entries(self.path, "tokens", entries)
        return token


def _parse_entry(entry: dict[str, Any]) -> tuple[str, Caller, float | None]:
    digest = entry["sha256"]
    if not isinstance(digest, str) or len(digest) != 64:
        raise ValueError("sha256: not a SHA-256 digest")
    caller = Caller(entry["tenant"], entry["user_id"], entry.get("workflow_id"))
    raw = entry.get("expires_at")
    if raw is not None and (isinstance(raw, bool) or not isinstance(raw, int | float)):
        raise ValueError("expires_at: not a number of Unix seconds")
    return digest, caller, float(raw) if raw else None


class TokenFileVerifier:
    """The MCP SDK's ``TokenVerifier`` over a :class:`TokenFile` (re-read on change)."""

    def __init__(self, tokens: TokenFile):
        self.tokens = tokens
        self._file = WatchedFile(tokens.path, lambda _: _by_digest(tokens))

    def problem(self) -> TokenFileUnreadable | None:
        """Why the token file cannot be used right now, or None when it can (one ``stat``
        while it is unchanged; the cause is logged once per change)."""
        try:
            self._file.current()
        except TokenFileUnreadable as exc:
            return exc
        return None

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hash_token(token)
        try:
            identities, expiries = self._file.current()
        except TokenFileUnreadable:
            return None  # refuse every token; the HTTP gate answers 503 before it gets here
        identity = identities.get(digest)
        if identity is None:
            return None
        expires_at = expiries.get(digest)
        if expires_at is not None and time.time() >= expires_at:
            return None
        return AccessToken(
            token=digest,
            client_id=f"{identity.tenant}/{identity.user_id}",
            subject=identity.user_id,
            scopes=["memory:recall"],
            expires_at=int(expires_at) if expires_at is not None else None,
            claims={
                "tenant": identity.tenant,
                "user_id": identity.user_id,
                "workflow_id": identity.workflow_id,
            },
        )

    @staticmethod
    def identity_of(token: AccessToken) -> Caller:
        """The identity a verified token carries."""
        claims = token.claims or {}
        return Caller(claims["tenant"], claims["user_id"], claims.get("workflow_id"))


def _by_digest(tokens: TokenFile) -> tuple[dict[str, Caller], dict[str, float]]:
    parsed = tokens._parsed()
    return (
        {digest: caller for digest, caller, _ in parsed},
        {digest: at for digest, _, at in parsed if at is not None},
    )
