"""What the HTTP server runs with, and where each value came from: a flag, a ``HARNESS_*``
variable, or the default. Pure apart from reading the ingest key file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from harness.errors import InvalidInput
from harness.mcp_server.http import parse_http_address
from harness.settings import Settings

__all__ = [
    "MIN_INGEST_KEY_CHARS",
    "ServeConfig",
    "ServeFlags",
    "default_workers",
    "read_key_file",
    "resolve_serve_config",
    "serving_settings",
    "start_line",
]

MIN_INGEST_KEY_CHARS = 16
#: Workers when none are asked for: one per usable core up to this many. Past it the shared
#: database, not the servers' Python, sets the pace on the machines this was measured on.
MAX_DEFAULT_WORKERS = 4
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")


@dataclass(frozen=True)
class ServeFlags:
    """Command-line values (``None`` = not given, fall back to the environment)."""

    http: str | None = None
    tokens: Path | None = None
    ingest_key_file: Path | None = None
    log_level: str | None = None
    log_format: str | None = None
    url: str | None = None
    workers: int | None = None


@dataclass(frozen=True)
class ServeConfig:
    """Resolved server settings; every ``*_from`` names the flag or variable (or "default")."""

    host: str
    port: int
    bind_from: str
    tokens: Path
    tokens_from: str
    ingest_key: SecretStr | None
    ingest_from: str
    log_level: str
    log_format: str
    log_from: str
    database_from: str
    workers: int = 1
    workers_from: str = "default"

    @property
    def address_label(self) -> str:
        """``host:port`` with an IPv6 host bracketed."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def _origin(settings: Settings, field: str, flag: str, flag_value: object) -> str:
    if flag_value is not None:
        return flag
    if field in settings.model_fields_set:
        return f"HARNESS_{field.upper()}"
    return "default"


def read_key_file(path: Path, setting: str) -> SecretStr:
    """The key in ``path`` without surrounding whitespace (secret files end in a newline).

    Raises:
        InvalidInput: naming ``setting`` when the file cannot be read or the key is too short.
    """
    try:
        key = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidInput(f"{setting}: cannot read {path}: {why}", fields=(setting,)) from None
    _check_key_length(key, setting)
    return SecretStr(key)


def _check_key_length(key: str, setting: str) -> None:
    if len(key) < MIN_INGEST_KEY_CHARS:
        raise InvalidInput(
            f"{setting}: the ingest key needs at least {MIN_INGEST_KEY_CHARS} characters "
            f"(got {len(key)})",
            fields=(setting,),
        )


def _choice(value: str | None, flag: str, allowed: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if value.strip().lower() not in allowed:
        raise InvalidInput(f"{flag}: one of {', '.join(allowed)}, got {value!r}", fields=(flag,))
    return value.strip().lower()


def default_workers(usable_cores: int | None = None) -> int:
    """One worker per core this process may run on (``usable_cores``, else asked of the
    system), at least 1 and at most :data:`MAX_DEFAULT_WORKERS`."""
    if usable_cores is None:
        usable_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    return max(1, min(MAX_DEFAULT_WORKERS, usable_cores))


def resolve_serve_config(
    settings: Settings, flags: ServeFlags, usable_cores: int | None = None
) -> ServeConfig | None:
    """Flags over ``HARNESS_*`` variables over defaults; ``None`` when no HTTP address is set
    (the server then speaks stdio). Reads the ingest key file if one is named.

    Raises:
        InvalidInput: one message naming the flag or variable at fault.
    """
    http = flags.http if flags.http is not None else settings.mcp_http
    if http is None:
        return None
    bind_from = _origin(settings, "mcp_http", "--http", flags.http)
    try:
        host, port = parse_http_address(http)
    except InvalidInput as exc:
        if bind_from == "--http":
            raise
        message = str(exc).replace("--http", bind_from, 1)
        raise InvalidInput(message, fields=(bind_from,)) from None
    key_file = flags.ingest_key_file or settings.mcp_ingest_key_file
    key_file_from = _origin(
        settings, "mcp_ingest_key_file", "--ingest-key-file", flags.ingest_key_file
    )
    ingest_key: SecretStr | None = None
    ingest_from = "off"
    if key_file is not None:
        if settings.mcp_ingest_key is not None:
            raise InvalidInput(
                f"{key_file_from}: give the ingest key or a key file, not both "
                "(HARNESS_MCP_INGEST_KEY is also set)",
                fields=(key_file_from,),
            )
        ingest_key = read_key_file(key_file, key_file_from)
        ingest_from = f"{key_file_from} ({key_file})"
    elif settings.mcp_ingest_key is not None:
        _check_key_length(settings.mcp_ingest_key.get_secret_value(), "HARNESS_MCP_INGEST_KEY")
        ingest_key = settings.mcp_ingest_key
        ingest_from = "HARNESS_MCP_INGEST_KEY"
    level = _choice(flags.log_level, "--log-level", LOG_LEVELS) or settings.log_level
    fmt = _choice(flags.log_format, "--log-format", LOG_FORMATS) or settings.log_format
    level_from = _origin(settings, "log_level", "--log-level", flags.log_level)
    format_from = _origin(settings, "log_format", "--log-format", flags.log_format)
    if flags.url is not None:
        database_from = "--url"
    elif settings.database_url is not None:
        database_from = "HARNESS_DATABASE_URL"
    else:
        database_from = f"embedded server in {settings.home}"
    if flags.workers is not None and flags.workers < 1:
        raise InvalidInput(f"--workers: at least 1, got {flags.workers}", fields=("--workers",))
    workers_from = _origin(settings, "mcp_workers", "--workers", flags.workers)
    workers = flags.workers or settings.mcp_workers or default_workers(usable_cores)
    if workers_from == "default":
        workers_from = "default: one per core, at most 4"
    tokens = flags.tokens or settings.mcp_tokens_path
    tokens_from = _origin(settings, "mcp_tokens", "--tokens", flags.tokens)
    if tokens_from != "default" and not tokens.is_file():
        # The default file may not exist yet (nobody minted a token); a named one must.
        raise InvalidInput(
            f"{tokens_from}: no token file at {tokens}; mint one into it with "
            f"`HARNESS_MCP_TOKENS={tokens} harness-memory mcp-token --tenant T --user U`",
            fields=(tokens_from,),
        )
    return ServeConfig(
        host=host,
        port=port,
        bind_from=bind_from,
        tokens=tokens,
        tokens_from=tokens_from,
        ingest_key=ingest_key,
        ingest_from=ingest_from,
        log_level=level,
        log_format=fmt,
        log_from=f"{level_from}, {format_from}",
        database_from=database_from,
        workers=workers,
        workers_from=workers_from,
    )


def serving_settings(settings: Settings) -> Settings:
    """The settings the HTTP server opens its store with: one onnxruntime thread per model
    call unless ``HARNESS_EMBED_THREADS`` says otherwise.

    A server answers many callers at once and batches their queries into model calls; with
    a thread pool per call, onnxruntime's threads spin between calls and take the cores the
    other callers, the event loop and PostgreSQL need (the soak: 48 -> 65 recall calls/s,
    BENCHMARKS.md section 14). Pure.
    """
    if settings.embed_threads is not None:
        return settings
    return settings.model_copy(update={"embed_threads": 1})


def start_line(
    config: ServeConfig, *, version: str, base_url: str, database: str, embedder: str
) -> str:
    """The one line printed at start: what runs, and where each value was read from.

    ``database`` must already be redacted; no key is ever part of the line.
    """
    ingest = (
        f"on ({base_url}/v1/memories, key from {config.ingest_from})"
        if config.ingest_key is not None
        else "off (set HARNESS_MCP_INGEST_KEY or HARNESS_MCP_INGEST_KEY_FILE)"
    )
    return (
        f"harness-memory {version} MCP on {base_url}/mcp · "
        f"listening on {config.address_label} (from {config.bind_from}) · "
        f"bearer tokens: {config.tokens} (from {config.tokens_from}) · ingest: {ingest} · "
        f"log: {config.log_level} {config.log_format} (from {config.log_from}) · "
        f"database: {database} (from {config.database_from}) · embedder: {embedder} · "
        f"workers: {config.workers} (from {config.workers_from}) · "
        f"health: {base_url}/healthz {base_url}/readyz"
    )
