"""Settings read from ``HARNESS_*`` environment variables (docs/configuration.md lists every one)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from harness.errors import InvalidInput
from harness.identifiers import MAX_CONTENT_CEILING

__all__ = ["DEFAULT_EMBED_MODEL", "Settings"]

DEFAULT_EMBED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _default_home() -> Path:
    return Path(platformdirs.user_data_dir("harness-memory"))


def _default_model_cache() -> Path:
    return Path(platformdirs.user_cache_dir("harness-memory")) / "models"


class Settings(BaseSettings):
    """Every tunable of the library: ``HARNESS_<FIELD>`` (empty values count as unset).

    Secrets are :class:`~pydantic.SecretStr`, so they never appear in a repr or a log line;
    read them with ``.get_secret_value()``. Build with :meth:`from_env`.
    """

    model_config = SettingsConfigDict(
        env_prefix="HARNESS_", env_ignore_empty=True, frozen=True, extra="ignore"
    )

    database_url: SecretStr | None = Field(
        default=None, description="PostgreSQL URL; unset = the embedded server in home"
    )
    database_read_url: SecretStr | None = Field(
        default=None,
        description="read replicas: one or more PostgreSQL URLs, comma-separated; reads go "
        "there, every write to database_url",
    )
    replica_wait_ms: int = Field(
        default=150,
        ge=0,
        le=10_000,
        description="read-your-writes: how long a read waits for a replica to replay the "
        "caller's last write before it reads the primary instead",
    )
    replica_retry_s: float = Field(
        default=1.0, gt=0, description="first pause before a failed replica is tried again"
    )
    replica_retry_max_s: float = Field(
        default=60.0, gt=0, description="longest pause (the pause doubles per failure)"
    )
    migrate: Literal["auto", "never"] = Field(
        default="auto",
        description="auto: open migrates the schema to head; never (or 0): it only checks it",
    )
    app_role: str | None = Field(
        default=None, description="role granted the store's tables whenever a migration runs"
    )
    home: Path = Field(
        default_factory=_default_home, description="data folder of the embedded server"
    )
    embed_model: str = Field(default=DEFAULT_EMBED_MODEL, description="embedding model name")
    embed_model_path: Path | None = Field(
        default=None, description="local folder with the model's ONNX files"
    )
    embed_threads: int | None = Field(
        default=None,
        ge=1,
        description="threads per embedding model call; unset = onnxruntime's default, one per "
        "core (lowest latency for one caller), except the HTTP MCP server, which uses 1; "
        "1 = most recalls per second under many concurrent callers",
    )
    embed_int8: bool = Field(
        default=False,
        description="embed queries with an int8 copy of a model loaded from a folder (made "
        "once in HARNESS_MODEL_CACHE): ~2.6x faster per query; off by default because the "
        "lessons set lost 1-2 of 47 hits with it (BENCHMARKS §15)",
    )
    model_cache: Path = Field(
        default_factory=_default_model_cache,
        description="where derived model files (the int8 copy) are kept",
    )
    max_content_chars: int = Field(default=2000, ge=1, le=MAX_CONTENT_CEILING)
    statement_timeout_ms: int = Field(default=5000, ge=0)
    lock_timeout_ms: int = Field(default=2000, ge=0)
    pool_size: int = Field(default=5, ge=1)
    recall_top_n: int = Field(default=8, ge=1)
    narrow_scope_cap: int = Field(default=50, ge=1)
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible API base URL")
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout_s: float = Field(default=20.0, gt=0)
    mcp_tenant: str | None = None
    mcp_user: str | None = None
    mcp_workflow: str | None = None
    mcp_http: str | None = Field(
        default=None, description="HOST:PORT to serve MCP over HTTP on (same as --http)"
    )
    mcp_workers: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="HTTP MCP server processes sharing the port; unset = one per usable core, "
        "at most 4 (several share RecallSet memos through the database)",
    )
    mcp_tokens: Path | None = None
    mcp_ingest_key: SecretStr | None = None
    mcp_ingest_key_file: Path | None = Field(
        default=None, description="file holding the ingest key (container secrets)"
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="server log level"
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="server log lines: text, or JSON lines for log shippers"
    )

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("migrate", mode="before")
    @classmethod
    def _migrate_words(cls, value: object) -> object:
        words = {"1": "auto", "true": "auto", "on": "auto", "0": "never", "false": "never"}
        if isinstance(value, str):
            return words.get(value.strip().lower(), value.strip().lower())
        return value

    @property
    def mcp_tokens_path(self) -> Path:
        """The MCP bearer-token file (hashes only)."""
        return self.mcp_tokens or self.home / "mcp-tokens.json"

    @property
    def database_url_value(self) -> str | None:
        """The configured database URL in clear (for the driver only; never print it)."""
        return self.database_url.get_secret_value() if self.database_url else None

    @property
    def database_read_url_value(self) -> str | None:
        """The configured read-replica URLs in clear (for the driver only; never print it)."""
        return self.database_read_url.get_secret_value() if self.database_read_url else None

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Read ``HARNESS_*`` variables, then apply ``overrides`` (``None`` values are ignored).

        Raises:
            InvalidInput: a variable does not parse; the message names the variable.
        """
        values = {k: v for k, v in overrides.items() if v is not None}
        try:
            return cls(**values)  # type: ignore[arg-type]
        except ValidationError as exc:
            first = exc.errors()[0]
            field = str(first["loc"][0]) if first["loc"] else "settings"
            name = f"HARNESS_{field.upper()}" if field in cls.model_fields else field
            raise InvalidInput(f"{name}: {first['msg']}", fields=(name,)) from None
