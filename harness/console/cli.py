"""The ``console`` and ``console-token`` commands, registered on the main CLI by :func:`register`."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from harness.errors import HarnessError, InvalidInput
from harness.logs import connect_or_fail

__all__ = ["register"]

console = Console(soft_wrap=True)  # token file paths stay whole for copy and paste
err_console = Console(stderr=True, soft_wrap=True)


def _fail(exc: HarnessError) -> typer.Exit:
    """One ``error:`` line on stderr, exit code 2 (as every other command)."""
    err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
    return typer.Exit(2)


def _split_host_port(http: str) -> tuple[str, int]:
    """``HOST:PORT``; port 0 lets the system choose a free one (the start line names it)."""
    host, sep, port = http.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise InvalidInput(f"--http: {http!r} is not HOST:PORT", fields=("--http",))
    return host.strip("[]"), int(port)


def _listen(host: str, port: int) -> socket.socket:
    """Listen before the store opens, so a taken port is a one-line error at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=128)
    except OSError as exc:
        raise InvalidInput(
            f"--http: cannot listen on {host}:{port}: {exc.strerror or exc}", fields=("--http",)
        ) from None


def console_command(
    http: Annotated[
        str,
        typer.Option(
            "--http", metavar="HOST:PORT", help="serve here (port 0: any free port, printed)"
        ),
    ] = "127.0.0.1:8377",
    ssl_certfile: Annotated[
        Path | None,
        typer.Option("--ssl-certfile", metavar="FILE", help="serve TLS with this certificate"),
    ] = None,
    ssl_keyfile: Annotated[
        Path | None, typer.Option("--ssl-keyfile", metavar="FILE", help="its private key")
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            metavar="URL",
            help="database URL (default: HARNESS_DATABASE_URL, else the embedded server)",
        ),
    ] = None,
) -> None:
    """Serve the admin web console.

    Sign in with a token from `harness-memory console-token`.
    """
    import uvicorn

    from harness.console import AdminTokenFile, build_console_app, default_token_path
    from harness.memory import MemoryStore
    from harness.settings import Settings

    try:
        host, port = _split_host_port(http)
        settings = Settings.from_env()
        sock = _listen(host, port)
    except HarnessError as exc:
        raise _fail(exc) from exc
    try:
        with connect_or_fail():
            store = MemoryStore.connect(url, settings=settings)
    except HarnessError as exc:
        sock.close()
        raise _fail(exc) from exc
    port = sock.getsockname()[1]
    path = default_token_path(settings.home)
    if not path.exists():
        console.print(
            f"[yellow]no admin tokens yet ({path}):[/yellow] mint one with "
            "`harness-memory console-token --name NAME --tenant TENANT`"
        )
    scheme = "https" if ssl_certfile else "http"
    console.print(f"console at {scheme}://{host}:{port}/")
    config = uvicorn.Config(
        build_console_app(store, AdminTokenFile(path)),
        log_level="warning",
        ssl_certfile=str(ssl_certfile) if ssl_certfile else None,
        ssl_keyfile=str(ssl_keyfile) if ssl_keyfile else None,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        store.close()


def console_token_command(
    name: Annotated[
        str, typer.Option("--name", metavar="NAME", help="the admin's name, recorded in the audit")
    ],
    tenant: Annotated[
        list[str],
        typer.Option("--tenant", metavar="TENANT", help="a tenant this admin may see (repeatable)"),
    ],
) -> None:
    """Mint an admin token for the web console.

    Only its hash is stored (HARNESS_HOME/console-tokens.json); the token is shown once.
    """
    from harness.console import AdminTokenFile, default_token_path
    from harness.settings import Settings

    try:
        path = default_token_path(Settings.from_env().home)
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
