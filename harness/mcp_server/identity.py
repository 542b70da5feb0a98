"""Who is calling: bearer tokens (stored hashed) map to a tenant and user; never tool input."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken

from harness.memory.domain.caller import Caller

__all__ = ["Identity", "TokenFile", "TokenFileVerifier", "hash_token"]


#: The verified caller (``workflow_id`` optionally pins recall to one workflow): the one
#: :class:`~harness.memory.domain.caller.Caller` type every entry point shares.
Identity = Caller


def hash_token(token: str) -> str:
    """SHA-256 of a bearer token; only this is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


class TokenFile:
    """A JSON file of ``{"tokens": [{"sha256", "tenant", "user_id", "workflow_id"}]}``."""

    def __init__(self, path: Path):
        self.path = path

    def _entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        data = json.loads(self.path.read_text(encoding="utf-8"))
        return list(data.get("tokens", []))

    def load(self) -> dict[str, Identity]:
        """Hash -> identity of every token, expired ones included. A missing file means none."""
        return {
            entry["sha256"]: Identity(entry["tenant"], entry["user_id"], entry.get("workflow_id"))
            for entry in self._entries()
        }

    def expiries(self) -> dict[str, float]:
        """Hash -> expiry (Unix seconds) of the tokens minted with one."""
        return {e["sha256"]: float(e["expires_at"]) for e in self._entries() if e.get("expires_at")}

    def add(self, identity: Identity, *, expires_at: float | None = None) -> str:
        """Mint a token for ``identity``, store its hash, return the token (shown once).

        ``expires_at`` (Unix seconds) makes the token invalid from then on.
        """
        token = "hm_" + secrets.token_urlsafe(32)
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"tokens": entries}, indent=2), encoding="utf-8")
        os.chmod(tmp, 0o600)
        tmp.replace(self.path)
        return token


class TokenFileVerifier:
    """The MCP SDK's ``TokenVerifier`` over a :class:`TokenFile` (re-read on change)."""

    def __init__(self, tokens: TokenFile):
        self.tokens = tokens
        self._cache: dict[str, Identity] = {}
        self._expiries: dict[str, float] = {}
        self._mtime: float | None = None

    def _current(self) -> dict[str, Identity]:
        # One stat per request (every request is verified): the file is re-read when it changes.
        try:
            mtime: float | None = self.tokens.path.stat().st_mtime
        except FileNotFoundError:
            mtime = None
        if mtime != self._mtime:
            self._cache, self._expiries = self.tokens.load(), self.tokens.expiries()
            self._mtime = mtime
        return self._cache

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hash_token(token)
        identity = self._current().get(digest)
        if identity is None:
            return None
        expires_at = self._expiries.get(digest)
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
    def identity_of(token: AccessToken) -> Identity:
        """The identity a verified token carries."""
        claims = token.claims or {}
        return Identity(claims["tenant"], claims["user_id"], claims.get("workflow_id"))
