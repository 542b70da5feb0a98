"""The ``conversations`` commands: import JSONL in the seed's line format, recall, list,
forget, and the retention and its purge. Registered on the main CLI by ``harness.cli.app``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.memory import MemoryStore

__all__ = ["conversations_app"]

conversations_app = typer.Typer(
    help="The conversation archive: import, recall, list, forget, retention.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

TenantOption = Annotated[str, typer.Option("--tenant", metavar="TENANT", help="the tenant")]
UserOption = Annotated[str, typer.Option("--user", metavar="USER", help="whose conversations")]
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        metavar="URL",
        help="database URL (default: HARNESS_DATABASE_URL, else the embedded server)",
    ),
]


@contextlib.contextmanager
def _store(url: str | None, *, read_only: bool = False) -> Iterator[MemoryStore]:
    """The main CLI's store for one command; typed errors become one ``error:`` line, exit 2."""
    from harness.cli.app import _fail, _open_store

    with _open_store(url, check_model=not read_only, read_only=read_only) as store:
        try:
            yield store
        except HarnessError as exc:
            raise _fail(exc) from exc


def _print(text: str) -> None:
    from harness.cli.app import console

    console.print(escape(text), soft_wrap=True)


@conversations_app.command("import")
def import_jsonl(
    path: Annotated[Path, typer.Argument(help="a .jsonl file: one message per line")],
    tenant: TenantOption,
    user: UserOption,
    url: UrlOption = None,
) -> None:
    """Store each session of a JSONL file (session_id, turn_uuid, seq, ts, role, text
    blocks per line) as one conversation of USER. Idempotent: importing the same file again
    embeds nothing; a session already stored is replaced by the file's version."""
    from harness.memory.domain.conversations import turns_from_jsonl

    with _store(url) as store:
        try:
            with path.open(encoding="utf-8") as lines:
                sessions = turns_from_jsonl(lines)
        except OSError as exc:
            from harness.cli.app import _fail
            from harness.errors import InvalidInput

            raise _fail(InvalidInput(f"{path}: {exc.strerror}", fields=("path",))) from exc
        embedded = 0
        for sid, turns in sessions.items():
            put = store.put_conversation(
                tenant=tenant, user_id=user, conversation_id=sid, turns=turns
            )
            embedded += put.embedded
            _print(f"{sid}: {put.turns} turns ({put.embedded} embedded, {put.removed} removed)")
        _print(f"imported {len(sessions)} conversations, {embedded} turns embedded")


@conversations_app.command("recall")
def recall(
    query: Annotated[str, typer.Argument(help="a few identifying words")],
    tenant: TenantOption,
    user: UserOption,
    k: Annotated[int, typer.Option("--k", help="hit turns")] = 3,
    neighbours: Annotated[int, typer.Option("--neighbours", help="turns either side")] = 1,
    url: UrlOption = None,
) -> None:
    """Print the dated passages recall_my_conversations would return for USER."""
    with _store(url, read_only=True) as store:
        result = store.recall_conversations(
            tenant=tenant, user_id=user, query=query, k=k, neighbours=neighbours
        )
        if result.degraded:
            from harness.cli.app import _fail
            from harness.errors import StoreError

            raise _fail(StoreError("the conversation archive is unavailable"))
        _print(result.text)


@conversations_app.command("list")
def list_conversations(tenant: TenantOption, user: UserOption, url: UrlOption = None) -> None:
    """USER's conversations, most recent first."""
    with _store(url, read_only=True) as store:
        rows = store.list_conversations(tenant=tenant, user_id=user, limit=1000)
        if not rows:
            _print("no conversations stored")
        for r in rows:
            _print(f"{r.conversation_id}  {r.started_at:%Y-%m-%d %H:%M}  {r.turns} turns")


@conversations_app.command("forget")
def forget(
    conversation_id: Annotated[str, typer.Argument(help="the conversation's id")],
    tenant: TenantOption,
    user: UserOption,
    url: UrlOption = None,
) -> None:
    """Delete one conversation of USER, text and vectors, for good. Idempotent."""
    with _store(url) as store:
        gone = store.forget_conversation(
            tenant=tenant, user_id=user, conversation_id=conversation_id
        )
        _print(f"forgot {conversation_id}" if gone else f"{conversation_id}: not found")


@conversations_app.command("retention")
def retention(
    tenant: TenantOption,
    days: Annotated[
        int | None, typer.Option("--days", help="days after the last turn; omit to keep")
    ] = None,
    url: UrlOption = None,
) -> None:
    """Set how long TENANT's conversations are kept (``--days N``; without it, for ever)."""
    with _store(url) as store:
        store.set_conversation_retention(tenant=tenant, days=days)
        _print(f"{tenant}: conversations kept {f'{days} days' if days else 'for ever'}")


@conversations_app.command("purge")
def purge(url: UrlOption = None) -> None:
    """Delete the conversations past their tenant's retention (text and vectors)."""
    with _store(url) as store:
        _print(f"purged {store.purge_old_conversations()} conversations")
