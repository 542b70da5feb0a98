"""The ``harness-memory`` command line: status, init, reembed, demo, admin, lessons, export,
import."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn
from urllib.parse import unquote

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness._version import DISTRIBUTION, __version__
from harness.errors import HarnessError, InvalidInput
from harness.logs import connect_or_fail
from harness.memory.store.embedded import release_embedded
from harness.settings import Settings
from harness.shutdown import exit_on_signals

if TYPE_CHECKING:
    from harness.mcp_server.serve_config import ServeConfig
    from harness.memory import AsyncMemoryStore, Caller, MemoryStore
    from product_adapter import ProductAdapter

__all__ = ["app"]

# Plain help (click's): typer's rich panels print a type on every flag (`<bool>`) and keep a
# docstring's line breaks inside sentences; click rewraps paragraphs to the terminal.
app = typer.Typer(
    help="harness-memory: scoped memory for agent runtimes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
console = Console(soft_wrap=True)  # paths and URLs stay whole for copy and grep
err_console = Console(stderr=True, soft_wrap=True)

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        metavar="URL",
        help="database URL (default: HARNESS_DATABASE_URL, else the embedded server)",
    ),
]


def _fail(exc: HarnessError) -> typer.Exit:
    """One ``error:`` line on stderr (stdout may carry a protocol, e.g. MCP over stdio)."""
    err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
    return typer.Exit(2)


def _settings(**overrides: object) -> Settings:
    try:
        return Settings.from_env(**overrides)
    except InvalidInput as exc:
        raise _fail(exc) from exc


def _check_model_path(settings: Settings) -> None:
    """A named model folder that is not there fails before any server starts."""
    from harness.memory.embedding.model_choice import check_model_path

    try:
        check_model_path(settings)
    except InvalidInput as exc:
        raise _fail(exc) from exc


@contextlib.contextmanager
def _open_store(
    url: str | None,
    *,
    check_model: bool = True,
    settings: Settings | None = None,
    migrate: bool | None = None,
    read_only: bool = False,
) -> Iterator[MemoryStore]:
    """A store for one command. SIGTERM/SIGINT unwind through here: the store is closed and
    this process's handle on the embedded server released (the server stops if unused).
    ``migrate``: None follows HARNESS_MIGRATE. A ``read_only`` command never migrates: it
    checks the schema revision and fails with the gap and the fix."""
    settings = settings or _settings()
    _check_model_path(settings)
    if read_only:
        settings = settings.model_copy(update={"migrate": "never"})
        migrate = None
    embedded = (url or settings.database_url_value) is None
    home = settings.home

    def release() -> None:
        if embedded:
            release_embedded(home)

    # the store's modules load here, not at import: `harness-memory --version` stays fast
    from harness.memory import MemoryStore

    with exit_on_signals(last_resort=release):
        try:
            try:
                with connect_or_fail():
                    store = MemoryStore.connect(
                        url, settings=settings, check_model=check_model, migrate=migrate
                    )
            except HarnessError as exc:
                raise _fail(exc) from exc
            try:
                yield store
            except HarnessError as exc:
                raise _fail(exc) from exc
            finally:
                store.close()
        finally:
            release()


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Warnings as one plain line on stderr (no source location)."""
    err_console.print(f"[yellow]warning:[/yellow] {escape(str(message))}", soft_wrap=True)


def _display_url(url: str) -> str:
    """A redacted URL for people: the embedded server's socket folder without %2F escapes."""
    return unquote(url)


def _print_version(value: bool) -> None:
    if value:
        console.print(f"{DISTRIBUTION} {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="log progress (INFO) to stderr")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    warnings.showwarning = _show_warning


@app.command()
def init(url: UrlOption = None) -> None:
    """Create or migrate the store (idempotent).

    Prints where the store lives. Always migrates, whatever HARNESS_MIGRATE says: this is the
    command that does.
    """
    with _open_store(url, migrate=True) as store:
        st = store.status()
        console.print(f"store ready at {_display_url(st.url)} (schema revision {st.revision})")


@app.command()
def status(url: UrlOption = None) -> None:
    """Show where the store is, its schema, model and counts.

    Read-only (never migrates): the redacted URL or data folder, the schema revision, the
    embedder mode and where its model came from, counts per tenant and status, pending
    cleanups.
    """
    settings = _settings()
    with _open_store(url, check_model=False, settings=settings, read_only=True) as store:
        st = store.status()
        cluster = store.cluster_state()
        from product_adapter import ProductAdapter

        spooled = ProductAdapter(store).spooled_by_tenant()
        mismatch = None
        try:
            store.check_embedding_model()
        except HarnessError as exc:
            mismatch = str(exc)
    if (url or settings.database_url_value) is None:
        console.print(f"database        embedded PostgreSQL, data in {settings.home / 'pgdata'}")
    else:
        console.print(f"database        {_display_url(st.url)}", soft_wrap=True)
    for replica in st.read_replicas:
        health = f"up, {replica.reads} reads" if replica.up else f"down: {replica.last_error}"
        console.print(
            f"read replica    {_display_url(replica.url)} ({escape(health)})", soft_wrap=True
        )
    console.print(f"schema revision {st.revision}")
    mode = st.embedder_mode
    if st.embed_model:
        mode += (
            f" ({st.embed_model}{', int8 queries' if st.embed_int8 else ''}, {st.embed_dim} dims)"
        )
    else:
        mode += f" — {st.lexical_reason}"
    console.print(f"embedder        {escape(mode)}", soft_wrap=True)
    if st.embed_source == "remembered":
        console.print(
            f"model folder    {st.embed_model_path} (remembered by this home in "
            f"{settings.home / 'config.json'}; HARNESS_EMBED_MODEL_PATH is unset)",
            soft_wrap=True,
        )
    elif st.embed_source:
        where = f"{st.embed_model_path} " if st.embed_model_path else ""
        console.print(f"model folder    {where}(from {st.embed_source})", soft_wrap=True)
    console.print(
        f"vectors built by {st.stored_model or '(none yet)'}; "
        f"{st.missing_embeddings} memories without a vector"
    )
    if mismatch:
        console.print(f"[red]model mismatch:[/red] {mismatch}")
    table = Table(
        "tenant", "active", "pending_approval", "rejected", "superseded", "pending cleanups"
    )
    cleanups = {
        t: st.pending_cleanups.get(t, 0) + spooled.get(t, 0)
        for t in set(st.pending_cleanups) | set(spooled)
    }
    for tenant in sorted(set(st.counts) | set(cleanups)):
        c = st.counts.get(tenant, {})
        table.add_row(
            tenant,
            *(str(c.get(k, 0)) for k in ("active", "pending_approval", "rejected", "superseded")),
            str(cleanups.get(tenant, 0)),
        )
    console.print(table)
    for tenant, n in sorted(st.constraints_over_budget.items()):
        console.print(f"{tenant}: {n} platform constraint(s) over a default recall budget")
    if cluster is not None:
        from harness.cli.citus import cluster_lines

        for line in cluster_lines(cluster):
            console.print(escape(line), soft_wrap=True)


@app.command()
def distribute(
    url: UrlOption = None,
    shard_count: Annotated[
        int | None,
        typer.Option(
            "--shard-count",
            min=1,
            max=4096,
            metavar="N",
            help="shards per table when first distributed (default: the server's citus.shard_count)",
        ),
    ] = None,
) -> None:
    """Shard the store by tenant on a Citus coordinator (idempotent).

    Distributes every table with a tenant column by it, co-located with memories, makes the
    other tables reference tables, and lets the application role log in (the workers'
    connections). Run as the tables' owner; run again after a migration adds a table. On a
    server without Citus it says so and exits 2.
    """
    from harness.cli.citus import distribution_lines

    with _open_store(url, check_model=False) as store:
        try:
            report = store.distribute(shard_count=shard_count)
        except HarnessError as exc:
            raise _fail(exc) from exc
    for line in distribution_lines(report):
        console.print(escape(line), soft_wrap=True)


@app.command()
def reembed(
    url: UrlOption = None,
    missing_only: Annotated[
        bool, typer.Option("--missing-only", help="only rows without a vector")
    ] = False,
    batch_size: Annotated[
        int, typer.Option(min=1, metavar="N", help="memories embedded and written per transaction")
    ] = 256,
) -> None:
    """Rebuild every vector with the configured model.

    Records which model built the vectors; idempotent.
    """
    with (
        _open_store(url, check_model=False) as store,
        Progress(
            TextColumn("re-embedding"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress,
    ):
        task = progress.add_task("reembed", total=None)

        def step(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        try:
            n = store.reembed(batch_size=batch_size, all_rows=not missing_only, progress=step)
        except HarnessError as exc:
            raise _fail(exc) from exc
    console.print(f"re-embedded {n} memories")


admin = typer.Typer(
    help="Admin decisions on platform memories.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(admin, name="admin")


@contextlib.contextmanager
def _adapter(url: str | None, *, read_only: bool = False) -> Iterator[ProductAdapter]:
    """The product adapter over a fresh store; typed errors become exit code 2. A read-only
    command never migrates."""
    from product_adapter import ProductAdapter

    with _open_store(url, check_model=False, read_only=read_only) as store:
        try:
            yield ProductAdapter(store)
        except HarnessError as exc:
            raise _fail(exc) from exc


@admin.command("pending")
def admin_pending(
    tenant: Annotated[
        str, typer.Option("--tenant", metavar="TENANT", help="whose pending memories")
    ],
    url: UrlOption = None,
) -> None:
    """List memories waiting for approval."""
    with _adapter(url, read_only=True) as adapter:
        items = adapter.pending_approvals(tenant)
    if not items:
        console.print(f"nothing pending for tenant {tenant}")
    for m in items:
        console.print(
            f"{m.id}  {m.kind.value}  key={m.key or '-'}  origin={m.source.origin.value}  "
            f"created={m.created_at.isoformat(timespec='seconds')}"
        )
        console.print(f"    {escape(m.content)}", soft_wrap=True)


@admin.command("approve")
def admin_approve(
    memory_id: Annotated[str, typer.Argument(help="the pending memory's id")],
    by: Annotated[str, typer.Option("--by", metavar="NAME", help="who approves")],
    tenant: Annotated[str, typer.Option("--tenant", metavar="TENANT", help="the memory's tenant")],
    url: UrlOption = None,
) -> None:
    """Approve a pending memory of the tenant (audited)."""
    with _adapter(url) as adapter:
        m = adapter.approve(memory_id, by, tenant=tenant)
    console.print(f"approved {m.id} ({m.status.value})")


@admin.command("reject")
def admin_reject(
    memory_id: Annotated[str, typer.Argument(help="the pending memory's id")],
    by: Annotated[str, typer.Option("--by", metavar="NAME", help="who rejects")],
    reason: Annotated[str, typer.Option("--reason", metavar="TEXT", help="why")],
    tenant: Annotated[str, typer.Option("--tenant", metavar="TENANT", help="the memory's tenant")],
    url: UrlOption = None,
) -> None:
    """Reject a pending memory of the tenant with a reason (audited)."""
    with _adapter(url) as adapter:
        m = adapter.reject(memory_id, by, reason, tenant=tenant)
    console.print(f"rejected {m.id}")


@admin.command("audit")
def admin_audit(
    tenant: Annotated[str, typer.Option("--tenant", metavar="TENANT", help="whose decisions")],
    url: UrlOption = None,
) -> None:
    """Every approval decision of a tenant: who, when, what, why."""
    with _adapter(url, read_only=True) as adapter:
        rows = adapter.audit(tenant)
    if not rows:
        console.print(f"no decisions recorded for tenant {tenant}")
    for r in rows:
        reason = f"  reason: {escape(r['reason'])}" if r["reason"] else ""
        console.print(
            f"{r['decided_at'].isoformat(timespec='seconds')}  {r['decision']}  "
            f"{r['memory_id']}  by {escape(r['actor'])}{reason}",
            soft_wrap=True,
        )


@app.command()
def cluster(
    url: UrlOption = None,
    lock_wait: Annotated[
        float,
        typer.Option(
            "--lock-wait",
            metavar="SECONDS",
            min=0.001,
            max=3600,
            help="seconds to wait for the table's lock, then give up changing nothing",
        ),
    ] = 3.0,
    index_memory: Annotated[
        int | None,
        typer.Option(
            "--index-memory",
            metavar="MB",
            min=1,
            max=1_048_576,
            help="MB for rebuilding the indexes (default: the server's maintenance_work_mem); "
            "an HNSW index rebuilt in memory needs ~2 kB per memory and is several times faster",
        ),
    ] = None,
) -> None:
    """Store each scope's memories together (CLUSTER).

    PostgreSQL's CLUSTER rewrites the memories table in tenant and scope order, so a recall
    reads a few pages per pool. Locks the table while it runs: use a quiet moment. Needs the
    table's owner. Idempotent.
    """
    with _open_store(url, check_model=False) as store:
        try:
            report = store.cluster(lock_wait_s=lock_wait, index_memory_mb=index_memory)
        except HarnessError as exc:
            raise _fail(exc) from exc
    before, after = report.before, report.after
    console.print(
        f"clustered {after.rows} memories in {report.seconds:.1f} s: pages holding the "
        f"scopes' rows {before.pages} -> {after.pages} "
        f"({before.rows_per_page:.1f} -> {after.rows_per_page:.1f} rows per page)"
    )


@app.command()
def reconcile(url: UrlOption = None) -> None:
    """Finish queued cleanups (spooled or in the database). Safe to run concurrently."""
    with _adapter(url) as adapter:
        n = adapter.reconcile()
    console.print(f"finished {n} cleanups")


@app.command()
def mcp(
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="serve streamable HTTP instead of stdio (HARNESS_MCP_HTTP; port 0: any free "
            "port, named in the start line)",
        ),
    ] = None,
    tenant: Annotated[
        str | None,
        typer.Option(metavar="TENANT", help="stdio: the caller's tenant (or HARNESS_MCP_TENANT)"),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(metavar="USER", help="stdio: the caller's user id (or HARNESS_MCP_USER)"),
    ] = None,
    workflow: Annotated[
        str | None,
        typer.Option(
            metavar="WORKFLOW", help="stdio: pin recall to this workflow (or HARNESS_MCP_WORKFLOW)"
        ),
    ] = None,
    public_url: Annotated[
        str | None,
        typer.Option(metavar="URL", help="HTTP: this server's public base URL, if proxied"),
    ] = None,
    tokens: Annotated[
        Path | None,
        typer.Option(
            "--tokens", metavar="FILE", help="HTTP: bearer-token file (HARNESS_MCP_TOKENS)"
        ),
    ] = None,
    ingest_key_file: Annotated[
        Path | None,
        typer.Option(
            "--ingest-key-file",
            metavar="FILE",
            help="HTTP: file holding the ingest key (HARNESS_MCP_INGEST_KEY_FILE; or the key "
            "itself in HARNESS_MCP_INGEST_KEY)",
        ),
    ] = None,
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level",
            metavar="LEVEL",
            help="debug, info, warning, error (HARNESS_LOG_LEVEL)",
        ),
    ] = None,
    log_format: Annotated[
        str | None,
        typer.Option(
            "--log-format", metavar="FORMAT", help="text or json lines (HARNESS_LOG_FORMAT)"
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            metavar="N",
            help="HTTP: server processes sharing the port (HARNESS_MCP_WORKERS; default one "
            "per core, at most 4)",
        ),
    ] = None,
    url: UrlOption = None,
) -> None:
    """Serve memory to MCP agents (stdio, or HTTP with --http).

    Over stdio the caller is fixed by --tenant/--user (or HARNESS_MCP_TENANT/_USER); over
    HTTP each bearer token maps to its caller (see `harness-memory mcp-token`), and
    /healthz and /readyz answer without a token. SIGTERM or SIGINT stops accepting, gives
    recalls in flight 0.3 s (the rest answer "Memory is shutting down" as a tool error) and
    other calls at most 10 s, and releases the store.
    """
    from harness.mcp_server.serve_config import ServeFlags, resolve_serve_config, serving_settings
    from harness.memory import Caller

    settings = _settings()
    _check_model_path(settings)
    flags = ServeFlags(http, tokens, ingest_key_file, log_level, log_format, url, workers)
    try:
        config = resolve_serve_config(settings, flags)
    except InvalidInput as exc:
        raise _fail(exc) from exc
    if config is None and workers is not None:
        raise _fail(
            InvalidInput(
                "--workers: only with --http (a stdio server serves one agent in one process)",
                fields=("--workers",),
            )
        )
    if config is None and (not (tenant or settings.mcp_tenant) or not (user or settings.mcp_user)):
        raise _fail(
            InvalidInput(
                "stdio needs --tenant and --user (or HARNESS_MCP_TENANT and HARNESS_MCP_USER)",
                fields=("tenant", "user"),
            )
        )
    identity = (
        None
        if config is not None
        else Caller(
            tenant or settings.mcp_tenant or "",
            user or settings.mcp_user or "",
            workflow or settings.mcp_workflow,
        )
    )
    if config is not None:
        _check_token_file(config)
    sock = None
    if config is not None:
        sock, config = _bind(config)
    embedded = (url or settings.database_url_value) is None
    if config is not None:
        settings = serving_settings(settings)

    def release() -> None:
        if embedded:
            release_embedded(settings.home)

    if config is not None and config.workers > 1:
        assert sock is not None
        _serve_workers(url or settings.database_url_value, settings, config, sock, public_url)

    try:
        with exit_on_signals(last_resort=release):
            try:
                asyncio.run(_serve_mcp(url, settings, identity, config, sock, public_url))
            finally:
                release()
    except SystemExit as stop:
        if sock is not None:
            sock.close()
        _exit_after_signal(stop)
    finally:
        if sock is not None:
            sock.close()


def _check_token_file(config: ServeConfig) -> None:
    """A bearer-token file that cannot be used is one error line before anything starts."""
    from harness.mcp_server import TokenFile

    try:
        TokenFile(config.tokens).check()
    except HarnessError as exc:
        raise _fail(exc) from exc


def _exit_after_signal(stop: SystemExit) -> NoReturn:
    """End a server stopped by SIGINT/SIGTERM now that it has released everything (calls
    answered, store closed, embedded server released): flush the logs and streams and skip
    the interpreter's own teardown, which spends seconds destroying the embedding model and
    the module graph and holds nothing that still needs releasing."""
    code = stop.code if isinstance(stop.code, int) else 1
    if code not in (128 + signal.SIGINT, 128 + signal.SIGTERM):
        raise stop
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def _serve_mcp(
    url: str | None,
    settings: Settings,
    identity: Caller | None,
    config: ServeConfig | None,
    sock: socket.socket | None,
    public_url: str | None,
) -> None:
    """Open the asyncio store on this event loop (its pool belongs to it) and serve."""
    from harness.mcp_server import build_server
    from harness.mcp_server.serving import freeze_startup_heap
    from harness.memory import AsyncMemoryStore

    try:
        store = await AsyncMemoryStore.connect(url, settings=settings)
    except HarnessError as exc:
        raise _fail(exc) from exc
    try:
        if config is None:
            assert identity is not None  # stdio always has one (checked above)
            server = build_server(store, identity=identity)
            freeze_startup_heap()
            await server.run_stdio_async()
        else:
            assert sock is not None  # bound whenever there is an HTTP config
            await _serve_http(store, config, sock, public_url)
    finally:
        await store.close()


def _serve_workers(
    url: str | None,
    settings: Settings,
    config: ServeConfig,
    sock: socket.socket,
    public_url: str | None,
) -> NoReturn:
    """Serve with ``config.workers`` processes on ``sock`` (memos shared in the database),
    the embedded server held by this process until they have stopped."""
    from harness.mcp_server.workers import WorkerSpec, run_workers
    from harness.memory.store.embedded import embedded_url

    try:
        database = url if url is not None else embedded_url(settings.home)
        _probe_store(database, settings)
        spec = WorkerSpec(database, settings, config, public_url)
        code = run_workers(
            spec,
            sock,
            config.workers,
            on_ready=lambda embedder: _print_start_line(config, public_url, database, embedder),
        )
    finally:
        sock.close()
        if url is None:
            release_embedded(settings.home)
    if code == 1:
        raise _fail(HarnessError("an MCP worker could not start; see the log above"))
    _exit_after_signal(SystemExit(code))


def _probe_store(url: str, settings: Settings) -> None:
    """Migrate (or check) once, here, before any worker starts: a database that cannot be used
    is then this command's one error line, not a log of every worker. No model is loaded."""
    from harness.memory import MemoryStore

    try:
        MemoryStore.connect(url, settings=settings, embedder=None, check_model=False).close()
    except HarnessError as exc:
        raise _fail(exc) from exc


def _bind(config: ServeConfig) -> tuple[socket.socket, ServeConfig]:
    """Listen before anything slow, so a taken port is a one-line error at once; returns the
    socket and the config with the port it got (the system's choice for port 0)."""
    import dataclasses

    from harness.mcp_server.http import listening_socket

    try:
        # Listening now queues clients that connect between the start line and the server's
        # first accept, instead of refusing them.
        sock = listening_socket(config.host, config.port)
        return sock, dataclasses.replace(config, port=sock.getsockname()[1])
    except OSError as exc:
        raise _fail(
            InvalidInput(
                f"{config.bind_from}: cannot listen on {config.address_label}: "
                f"{exc.strerror or exc}",
                fields=(config.bind_from,),
            )
        ) from None


async def _serve_http(
    store: AsyncMemoryStore, config: ServeConfig, sock: socket.socket, public_url: str | None
) -> None:
    """Serve in this process (one worker): memos in memory, the start line once ready."""
    from harness.mcp_server.serving import serve_http

    try:
        await serve_http(
            store,
            config,
            sock,
            public_url=public_url,
            ready=lambda embedder: _print_start_line(config, public_url, store.url, embedder),
        )
    except HarnessError as exc:
        raise _fail(exc) from exc


def _print_start_line(config: ServeConfig, public_url: str | None, url: str, embedder: str) -> None:
    from harness.mcp_server.serve_config import start_line
    from harness.mcp_server.serving import base_url
    from harness.memory.store.db import redact_url

    line = start_line(
        config,
        version=__version__,
        base_url=base_url(config, public_url),
        database=_display_url(redact_url(url)),
        embedder=embedder,
    )
    console.print(line, soft_wrap=True, highlight=False, markup=False)
    sys.stdout.flush()


def http_label(host: str, port: int) -> str:
    """``host:port`` with IPv6 hosts bracketed."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@app.command("mcp-token")
def mcp_token(
    tenant: Annotated[str, typer.Option(metavar="TENANT", help="the caller's tenant")],
    user: Annotated[str, typer.Option(metavar="USER", help="the caller's user id")],
    workflow: Annotated[
        str | None,
        typer.Option(metavar="WORKFLOW", help="pin this token's recall to one workflow"),
    ] = None,
    expires_in_days: Annotated[
        float | None,
        typer.Option(
            "--expires-in-days",
            metavar="DAYS",
            min=0.0,
            help="refuse the token after this many days",
        ),
    ] = None,
) -> None:
    """Mint a bearer token for the HTTP MCP server.

    Only its hash is stored (HARNESS_MCP_TOKENS, default HARNESS_HOME/mcp-tokens.json); the
    token is shown once.
    """
    import time

    from harness.mcp_server import TokenFile
    from harness.memory import Caller

    path = _settings().mcp_tokens_path
    expires_at = time.time() + expires_in_days * 86400 if expires_in_days is not None else None
    try:
        token = TokenFile(path).add(Caller(tenant, user, workflow), expires_at=expires_at)
    except HarnessError as exc:
        raise _fail(exc) from exc
    console.print(f"token for {tenant}/{user} (stored hashed in {path}):")
    console.print(token, soft_wrap=True)


@app.command()
def demo(url: UrlOption = None) -> None:
    """Run the demo: a rejection becomes the next run's lesson.

    Without HARNESS_HOME (or --url / HARNESS_DATABASE_URL) the demo runs in a throwaway
    folder that is deleted afterwards, never in your real data folder.
    """
    import os
    import shutil

    from harness.cli.demo import run_demo

    settings = _settings()
    throwaway: Path | None = None
    if (
        url is None
        and settings.database_url_value is None
        and not os.environ.get("HARNESS_HOME", "").strip()
    ):
        throwaway = Path(tempfile.mkdtemp(prefix="harness-demo-"))
        settings = settings.model_copy(update={"home": throwaway})
        where = (
            f"demo data goes to a throwaway folder {throwaway} (deleted afterwards); "
            "set HARNESS_HOME to keep it"
        )
    else:
        home = settings.home if url is None and settings.database_url is None else "the database"
        where = f"demo resets and writes tenant 'demo' in {home}"
    try:
        with _open_store(url, settings=settings) as store:
            # said once the store is open: a store that cannot open is one error line alone
            console.print(where, soft_wrap=True, highlight=False)
            run_demo(store, console)
    finally:
        if throwaway is not None:
            shutil.rmtree(throwaway, ignore_errors=True)


from harness.console.cli import register as _register_console  # noqa: E402

_register_console(app, release_embedded)

from harness.cli.lessons import lessons_app  # noqa: E402

app.add_typer(lessons_app, name="lessons")

from harness.cli.portability import export_command, import_command  # noqa: E402

app.command("export")(export_command)
app.command("import")(import_command)
from harness.cli.conversations import conversations_app  # noqa: E402

app.add_typer(conversations_app, name="conversations")


def main() -> None:  # pragma: no cover - console-script shim
    app()
