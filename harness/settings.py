"""Settings read from ``HARNESS_*`` environment variables (README lists every one)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_EMBED_MODEL", "Settings"]

DEFAULT_EMBED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

_ENV = {
    "database_url": "HARNESS_DATABASE_URL",
    "home": "HARNESS_HOME",
    "embed_model": "HARNESS_EMBED_MODEL",
    "embed_model_path": "HARNESS_EMBED_MODEL_PATH",
    "max_content_chars": "HARNESS_MAX_CONTENT_CHARS",
    "statement_timeout_ms": "HARNESS_STATEMENT_TIMEOUT_MS",
    "lock_timeout_ms": "HARNESS_LOCK_TIMEOUT_MS",
    "pool_size": "HARNESS_POOL_SIZE",
    "recall_top_n": "HARNESS_RECALL_TOP_N",
    "narrow_scope_cap": "HARNESS_NARROW_SCOPE_CAP",
    "llm_base_url": "HARNESS_LLM_BASE_URL",
    "llm_model": "HARNESS_LLM_MODEL",
    "llm_api_key": "HARNESS_LLM_API_KEY",
    "llm_timeout_s": "HARNESS_LLM_TIMEOUT_S",
    "mcp_tenant": "HARNESS_MCP_TENANT",
    "mcp_user": "HARNESS_MCP_USER",
    "mcp_workflow": "HARNESS_MCP_WORKFLOW",
    "mcp_tokens": "HARNESS_MCP_TOKENS",
    "mcp_ingest_key": "HARNESS_MCP_INGEST_KEY",
}


class Settings(BaseModel):
    """Every tunable of the library. Build with :meth:`from_env`, override per field."""

    model_config = ConfigDict(frozen=True)

    database_url: str | None = None
    home: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir("harness-memory")))
    embed_model: str = DEFAULT_EMBED_MODEL
    embed_model_path: Path | None = None
    max_content_chars: int = Field(default=2000, ge=1)
    statement_timeout_ms: int = Field(default=5000, ge=0)
    lock_timeout_ms: int = Field(default=2000, ge=0)
    pool_size: int = Field(default=5, ge=1)
    recall_top_n: int = Field(default=8, ge=1)
    narrow_scope_cap: int = Field(default=50, ge=1)
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout_s: float = Field(default=20.0, gt=0)
    mcp_tenant: str | None = None
    mcp_user: str | None = None
    mcp_workflow: str | None = None
    mcp_tokens: Path | None = None
    mcp_ingest_key: str | None = None

    @property
    def mcp_tokens_path(self) -> Path:
        """The MCP bearer-token file (hashes only)."""
        return self.mcp_tokens or self.home / "mcp-tokens.json"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Read ``HARNESS_*`` variables (empty values count as unset), then apply overrides."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {
            field: env[name] for field, name in _ENV.items() if env.get(name, "").strip()
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)
