"""The ``console`` and ``console-token`` commands, registered on the main CLI by :func:`register`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from harness.errors import HarnessError, InvalidInput

__all__ = ["register"]

console = Console()


def _fail(exc: HarnessError) -> typer.Exit:
    console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
    return typer.Exit(2)


def _split_host_port(http: str) -> tuple[str, int]:
    host, sep, port = http.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidInput(f"http: {http!r} is not HOST:PORT", fields=("http",))
    return host.strip("[]"), int(port)


def console_command(
    http: Annotated[str, typer.Option("--http", help="serve on HOST:PORT")] = "127.0.0.1:8377",
    ssl_certfile: Annotated[
        Path | None, typer.Option("--ssl-certfile", help="serve TLS with this certificate")
    ] = None,
    ssl_keyfile: Annotated[
        Path | None, typer.Option("--ssl-keyfile", help="its private key")
    ] = None,
    url: Annotated[
        str | None,
        typer.Option("--url", help="database URL (default: HARNESS_DATABASE_URL, else embedded)"),
    ] = None,
) -> None:
    """Serve the admin web console (sign in with a token from `harness-memory console-token`)."""
    import uvicorn

    from harness.console import AdminTokenFile, build_console_app, default_token_path
    from harness.memory import MemoryStore
    from harness.settings import Settings

    try:
        host, port = _split_host_port(http)
        settings = Settings.from_env()
        store = MemoryStore.connect(url, settings=settings)
    except HarnessError as exc:
        raise _fail(exc) from exc
    path = default_token_path(settings.home)
    if not path.exists():
        console.print(
            f"[yellow]no admin tokens yet ({path}):[/yellow] mint one with "
            "`harness-memory console-token --name NAME --tenant TENANT`"
        )
    scheme = "https" if ssl_certfile else "http"
    console.print(f"console at {scheme}://{host}:{port}/")
    try:
        uvicorn.run(
            build_console_app(store, AdminTokenFile(path)),
            host=host,
            port=port,
            log_level="warning",
            ssl_certfile=str(ssl_certfile) if ssl_certfile else None,
            ssl_keyfile=str(ssl_keyfile) if ssl_keyfile else None,
        )
    finally:
        store.close()


def console_token_command(
    name: Annotated[str, typer.Option("--name", help="the admin's name, recorded in the audit")],
    tenant: Annotated[
        list[str], typer.Option("--tenant", help="a tenant this admin may see (repeatable)")
    ],
) -> None:
    """Mint an admin token for the web console; only its hash is stored. Shown once."""
    from harness.console import AdminTokenFile, default_token_path
    from harness.settings import Settings

    path = default_token_path(Settings.from_env().home)
    try:
        token = AdminTokenFile(path).add(name, tenant)
    except HarnessError as exc:
        raise _fail(exc) from exc
    console.print(
        f"console token for {escape(name)} over {escape(', '.join(tenant))} "
        f"(stored hashed in {path}):"
    )
    console.print(token, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``console`` and ``console-token`` to the main CLI."""
    app.command("console")(console_command)
    app.command("console-token")(console_token_command)
