"""The ``console`` and ``console-token`` commands, registered on the main CLI by :func:`register`."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from harness.errors import HarnessError, InvalidInput
from harness.logs import connect_or_fail
from harness.shutdown import exit_on_signals

if TYPE_CHECKING:
    from harness.console.tokens import AdminTokenFile
    from harness.settings import Settings

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


def _release_nothing(home: Path) -> object:
    return None


#: Gives this process's handle on the embedded server back (set by :func:`register`: only the
#: command line may touch the embedded server).
_release_embedded: Callable[[Path], object] = _release_nothing


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

    Sign in with a token from `harness-memory console-token`. SIGTERM or SIGINT stops it
    and releases the store (and the embedded server, when it was the last user).
    """
    from harness.console import AdminTokenFile, default_token_path
    from harness.settings import Settings

    try:
        host, port = _split_host_port(http)
        settings = Settings.from_env()
        tokens = AdminTokenFile(default_token_path(settings.home))
        tokens.check()  # a token file that cannot be used is an error now, not a 503 later
        sock = _listen(host, port)
    except HarnessError as exc:
        raise _fail(exc) from exc
    embedded = (url or settings.database_url_value) is None

    def release() -> None:
        if embedded:
            _release_embedded(settings.home)

    # uvicorn handles SIGTERM/SIGINT while it serves and raises the signal again once it has
    # stopped: here that unwinds (store closed, embedded server released) instead of ending
    # the process with its PostgreSQL still running.
    with exit_on_signals(last_resort=release):
        try:
            _serve(tokens, url, settings, sock, host, ssl_certfile, ssl_keyfile)
        finally:
            sock.close()
            release()


def _serve(
    tokens: AdminTokenFile,
    url: str | None,
    settings: Settings,
    sock: socket.socket,
    host: str,
    ssl_certfile: Path | None,
    ssl_keyfile: Path | None,
) -> None:
    """Open the store and serve on ``sock`` until uvicorn stops; the store is closed after."""
    import uvicorn

    from harness.console import build_console_app
    from harness.memory import MemoryStore

    try:
        with connect_or_fail():
            store = MemoryStore.connect(url, settings=settings)
    except HarnessError as exc:
        raise _fail(exc) from exc
    try:
        port = sock.getsockname()[1]
        if not tokens.path.exists():
            console.print(
                f"[yellow]no admin tokens yet ({tokens.path}):[/yellow] mint one with "
                "`harness-memory console-token --name NAME --tenant TENANT`"
            )
        scheme = "https" if ssl_certfile else "http"
        console.print(f"console at {scheme}://{host}:{port}/")
        config = uvicorn.Config(
            build_console_app(store, tokens),
            log_level="warning",
            ssl_certfile=str(ssl_certfile) if ssl_certfile else None,
            ssl_keyfile=str(ssl_keyfile) if ssl_keyfile else None,
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
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


def register(app: typer.Typer, release_embedded: Callable[[Path], object] | None = None) -> None:
    """Add ``console`` and ``console-token`` to the main CLI; ``release_embedded`` gives a
    stopping console's handle on the embedded server back (the command line owns it)."""
    global _release_embedded
    if release_embedded is not None:
        _release_embedded = release_embedded
    app.command("console")(console_command)
    app.command("console-token")(console_token_command)
