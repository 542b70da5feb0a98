"""Who is calling: bearer tokens (stored hashed) map to a tenant and user; never tool input."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken

from harness.memory.domain.caller import Caller
from harness.token_files import (
    WatchedFile,
    hash_token,
    mint_token,
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

    def load(self) -> dict[str, Caller]:
        """Hash -> identity of every token, expired ones included. A missing file means none."""
        return {
            entry["sha256"]: Caller(entry["tenant"], entry["user_id"], entry.get("workflow_id"))
            for entry in self._entries()
        }

    def expiries(self) -> dict[str, float]:
        """Hash -> expiry (Unix seconds) of the tokens minted with one."""
        return {e["sha256"]: float(e["expires_at"]) for e in self._entries() if e.get("expires_at")}

    def add(self, identity: Caller, *, expires_at: float | None = None) -> str:
        """Mint a token for ``identity``, store its hash, return the token (shown once).

        ``expires_at`` (Unix seconds) makes the token invalid from then on.
        """
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


class TokenFileVerifier:
    """The MCP SDK's ``TokenVerifier`` over a :class:`TokenFile` (re-read on change)."""

    def __init__(self, tokens: TokenFile):
        self.tokens = tokens
        self._file = WatchedFile(tokens.path, lambda _: (tokens.load(), tokens.expiries()))

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hash_token(token)
        identities, expiries = self._file.current()
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
