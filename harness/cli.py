"""The ``harness-memory`` command line: status, init, reembed, demo, admin."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness.errors import HarnessError, InvalidInput
from harness.memory.store import MemoryStore
from product_adapter import ProductAdapter

__all__ = ["app"]

app = typer.Typer(
    help="harness-memory: scoped memory for agent runtimes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url", help="database URL (default: HARNESS_DATABASE_URL, else the embedded server)"
    ),
]


def _fail(exc: HarnessError) -> typer.Exit:
    console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
    return typer.Exit(2)


def _connect(url: str | None, *, check_model: bool = True) -> MemoryStore:
    try:
        return MemoryStore.connect(url, check_model=check_model)
    except HarnessError as exc:
        raise _fail(exc) from exc


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


@app.command()
def init(url: UrlOption = None) -> None:
    """Create or migrate the store (idempotent) and print where it lives."""
    with _connect(url) as store:
        st = store.status()
        console.print(f"store ready at {st.url} (schema revision {st.revision})")


@app.command()
def status(url: UrlOption = None) -> None:
    """Show the redacted URL, schema revision, embedder mode and counts per tenant and status."""
    with _connect(url, check_model=False) as store:
        st = store.status()
        spooled = ProductAdapter(store).spooled_by_tenant()
        mismatch = None
        try:
            store.check_embedding_model()
        except HarnessError as exc:
            mismatch = str(exc)
    console.print(f"database        {st.url}")
    console.print(f"schema revision {st.revision}")
    mode = st.embedder_mode
    if st.embed_model:
        mode += f" ({st.embed_model}, {st.embed_dim} dims)"
    else:
        mode += f" — {st.lexical_reason}"
    console.print(f"embedder        {mode}")
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


@app.command()
def reembed(
    url: UrlOption = None,
    missing_only: Annotated[
        bool, typer.Option("--missing-only", help="only rows without a vector")
    ] = False,
    batch_size: Annotated[int, typer.Option(min=1)] = 256,
) -> None:
    """Rebuild every vector with the configured embedding model and record it (idempotent)."""
    with (
        _connect(url, check_model=False) as store,
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


admin = typer.Typer(help="Admin decisions on platform memories.", no_args_is_help=True)
app.add_typer(admin, name="admin")


@contextlib.contextmanager
def _adapter(url: str | None) -> Iterator[ProductAdapter]:
    """The product adapter over a fresh store; typed errors become exit code 2."""
    store = _connect(url, check_model=False)
    try:
        yield ProductAdapter(store)
    except HarnessError as exc:
        raise _fail(exc) from exc
    finally:
        store.close()


@admin.command("pending")
def admin_pending(tenant: Annotated[str, typer.Option("--tenant")], url: UrlOption = None) -> None:
    """List memories waiting for approval."""
    with _adapter(url) as adapter:
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
    memory_id: str,
    by: Annotated[str, typer.Option("--by", help="who approves")],
    url: UrlOption = None,
) -> None:
    """Approve a pending memory (audited)."""
    with _adapter(url) as adapter:
        m = adapter.approve(memory_id, by)
    console.print(f"approved {m.id} ({m.status.value})")


@admin.command("reject")
def admin_reject(
    memory_id: str,
    by: Annotated[str, typer.Option("--by", help="who rejects")],
    reason: Annotated[str, typer.Option("--reason", help="why")],
    url: UrlOption = None,
) -> None:
    """Reject a pending memory with a reason (audited)."""
    with _adapter(url) as adapter:
        m = adapter.reject(memory_id, by, reason)
    console.print(f"rejected {m.id}")


@admin.command("audit")
def admin_audit(tenant: Annotated[str, typer.Option("--tenant")], url: UrlOption = None) -> None:
    """Every approval decision of a tenant: who, when, what, why."""
    with _adapter(url) as adapter:
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
def reconcile(url: UrlOption = None) -> None:
    """Finish queued cleanups (spooled or in the database). Safe to run concurrently."""
    with _adapter(url) as adapter:
        n = adapter.reconcile()
    console.print(f"finished {n} cleanups")


@app.command()
def mcp(
    http: Annotated[
        str | None, typer.Option("--http", help="serve streamable HTTP on HOST:PORT")
    ] = None,
    tenant: Annotated[str | None, typer.Option(help="stdio caller's tenant")] = None,
    user: Annotated[str | None, typer.Option(help="stdio caller's user id")] = None,
    workflow: Annotated[str | None, typer.Option(help="stdio caller's workflow id")] = None,
    public_url: Annotated[str | None, typer.Option(help="HTTP: this server's public URL")] = None,
    url: UrlOption = None,
) -> None:
    """Serve memory to MCP agents: stdio by default, or streamable HTTP with --http.

    Over stdio the caller is fixed by --tenant/--user (or HARNESS_MCP_TENANT/_USER); over
    HTTP each bearer token maps to its caller (see `harness-memory mcp-token`).
    """
    from harness.mcp_server import Identity, TokenFile, TokenFileVerifier, build_server
    from harness.settings import Settings

    settings = Settings.from_env()
    store = _connect(url, check_model=True)
    if http is None:
        who_tenant, who_user = tenant or settings.mcp_tenant, user or settings.mcp_user
        if not who_tenant or not who_user:
            raise _fail(
                InvalidInput(
                    "stdio needs --tenant and --user (or HARNESS_MCP_TENANT and HARNESS_MCP_USER)",
                    fields=("tenant", "user"),
                )
            )
        server = build_server(
            store, identity=Identity(who_tenant, who_user, workflow or settings.mcp_workflow)
        )
        server.run("stdio")
        return
    import uvicorn

    host, _, port = http.rpartition(":")
    base = public_url or f"http://{host}:{port}"
    verifier = TokenFileVerifier(TokenFile(settings.mcp_tokens_path))
    server = build_server(
        store, verifier=verifier, public_url=base, ingest_key=settings.mcp_ingest_key
    )
    uvicorn.run(
        server.streamable_http_app(host=host), host=host, port=int(port), log_level="warning"
    )


@app.command("mcp-token")
def mcp_token(
    tenant: Annotated[str, typer.Option()],
    user: Annotated[str, typer.Option()],
    workflow: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Mint a bearer token for the HTTP MCP server; only its hash is stored. Shown once."""
    from harness.mcp_server import Identity, TokenFile
    from harness.settings import Settings

    path = Settings.from_env().mcp_tokens_path
    token = TokenFile(path).add(Identity(tenant, user, workflow))
    console.print(f"token for {tenant}/{user} (stored hashed in {path}):")
    console.print(token, soft_wrap=True)


@app.command()
def demo(url: UrlOption = None) -> None:
    """Tell the two-run story: a rejection becomes a lesson the next run starts with."""
    from harness.demo import run_demo

    with _connect(url) as store:
        run_demo(store, console)


def main() -> None:  # pragma: no cover - console-script shim
    app()


if __name__ == "__main__":  # python -m harness.cli
    app()
