"""Console admins: bearer tokens stored hashed, each allowed a list of tenants."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import InvalidInput
from harness.identifiers import check_identifier
from harness.token_files import (
    TokenFileUnreadable,
    WatchedFile,
    hash_token,
    mint_token,
    parse_entries,
    write_entries,
)

__all__ = [
    "ENV_TOKENS",
    "Admin",
    "AdminTokenFile",
    "TokenFileUnreadable",
    "default_token_path",
    "hash_token",
]

#: Environment variable naming the console's token file (default: ``$HARNESS_HOME/console-tokens.json``).
ENV_TOKENS = "HARNESS_CONSOLE_TOKENS"


@dataclass(frozen=True)
class Admin:
    """A signed-in console admin: a display name for the audit and the tenants they may see."""

    name: str
    tenants: tuple[str, ...]

    def __post_init__(self) -> None:
        # The name is the approver in the audit: an identity string like any other.
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidInput("name: an admin needs a name", fields=("name",))
        check_identifier(self.name, "name")
        if not self.tenants or any(not isinstance(t, str) or not t.strip() for t in self.tenants):
            raise InvalidInput("tenant: an admin needs at least one tenant", fields=("tenant",))
        for tenant in self.tenants:
            check_identifier(tenant, "tenant")

    def may_see(self, tenant: str) -> bool:
        """True when ``tenant`` is one of the admin's tenants."""
        return tenant in self.tenants


def default_token_path(home: Path, environ: Mapping[str, str] | None = None) -> Path:
    """``HARNESS_CONSOLE_TOKENS`` when set, else ``console-tokens.json`` in the data folder."""
    env = os.environ if environ is None else environ
    explicit = env.get(ENV_TOKENS, "").strip()
    return Path(explicit) if explicit else home / "console-tokens.json"


class AdminTokenFile:
    """A JSON file ``{"admins": [{"sha256", "name", "tenants"}]}``; tokens never stored plain.

    Re-read whenever the file changes, so a token removed from the file stops working at the
    next request of any session it opened.
    """

    def __init__(self, path: Path):
        self.path = path
        self._file = WatchedFile(path, lambda _: self._read())

    def load(self) -> dict[str, Admin]:
        """Hash -> admin. A missing file means no admins.

        Raises:
            TokenFileUnreadable: the file cannot be read or an entry is malformed (logged
                once per change of the file).
        """
        return self._file.current()

    def check(self) -> None:
        """Raise :class:`TokenFileUnreadable` unless the file (or its absence) can be used: the
        console checks before it starts. Read-only; logs nothing."""
        self._read()

    def _read(self) -> dict[str, Admin]:
        return dict(parse_entries(self.path, "admins", _parse_admin))

    def verify(self, token: str) -> Admin | None:
        """The admin a presented token belongs to, or None."""
        if not token:
            return None
        return self.load().get(hash_token(token.strip()))

    def admin_by_hash(self, token_sha256: str) -> Admin | None:
        """The admin whose token hashes to ``token_sha256`` (still present in the file)."""
        return self.load().get(token_sha256)

    def add(self, name: str, tenants: Sequence[str]) -> str:
        """Mint a token for ``name`` over ``tenants``; store its hash; return it (shown once).

        Side effect: rewrites the file atomically with mode 0600.
        """
        admin = Admin(name.strip(), tuple(dict.fromkeys(t.strip() for t in tenants)))
        token = mint_token("hmc_")
        entries = [
            {"sha256": h, "name": a.name, "tenants": list(a.tenants)}
            for h, a in self._read().items()
        ]
        entries.append(
            {"sha256": hash_token(token), "name": admin.name, "tenants": list(admin.tenants)}
        )
        write_entries(self.path, "admins", entries)
        return token


def _parse_admin(entry: dict[str, Any]) -> tuple[str, Admin]:
    digest, tenants = entry["sha256"], entry["tenants"]
    if not isinstance(digest, str) or len(digest) != 64:
        raise ValueError("sha256: not a SHA-256 digest")
    if not isinstance(tenants, list):
        raise ValueError("tenants: not a list")
    return digest, Admin(entry["name"], tuple(tenants))
