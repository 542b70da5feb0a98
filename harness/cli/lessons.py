"""The ``lessons`` commands: the retirement queue (proposals, retire, restore) and one
lesson's record. Registered on the main CLI by ``harness.cli.app``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.memory import MemoryStore

__all__ = ["lessons_app"]

lessons_app = typer.Typer(
    help="Lessons that learn: the retirement queue and a lesson's record.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

TenantOption = Annotated[
    str, typer.Option("--tenant", metavar="TENANT", help="the lessons' tenant")
]
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        metavar="URL",
        help="database URL (default: HARNESS_DATABASE_URL, else the embedded server)",
    ),
]
ByOption = Annotated[str, typer.Option("--by", metavar="NAME", help="who decides")]
ReasonOption = Annotated[
    str | None, typer.Option("--reason", metavar="TEXT", help="why (kept in the record)")
]


@contextlib.contextmanager
def _store(url: str | None, *, read_only: bool = False) -> Iterator[MemoryStore]:
    """The main CLI's store for one command; typed errors become one ``error:`` line, exit 2."""
    from harness.cli.app import _fail, _open_store

    with _open_store(url, check_model=False, read_only=read_only) as store:
        try:
            yield store
        except HarnessError as exc:
            raise _fail(exc) from exc


def _print(text: str) -> None:
    from harness.cli.app import console

    console.print(text, soft_wrap=True)


@lessons_app.command("proposals")
def proposals(tenant: TenantOption, url: UrlOption = None) -> None:
    """Lessons proposed for retirement.

    A lesson is proposed when later runs show it kept misleading or not helping, or when
    nothing happened to it for a long time. Read-only."""
    with _store(url, read_only=True) as store:
        items = store.retirement_proposals(tenant=tenant)
    if not items:
        _print(f"no lesson of tenant {tenant} is proposed for retirement")
    for p in items:
        m = p.memory
        _print(
            f"{m.id}  {m.scope.value}:{escape(m.scope_id)}  taught {p.taught}  clear {p.clear}  "
            f"repeated {p.repeated}  misled {p.misled}"
        )
        _print(f"    why: {escape(p.reason)}")
        _print(f"    {escape(m.content)}")


@lessons_app.command("retire")
def retire(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="the lesson's id")],
    by: ByOption,
    tenant: TenantOption,
    reason: ReasonOption = None,
    url: UrlOption = None,
) -> None:
    """Retire an active lesson.

    It is kept (status retired), never recalled until restored; the decision is recorded."""
    with _store(url) as store:
        m = store.retire(memory_id, by, reason, tenant=tenant)
    _print(
        f"retired {m.id} (undo: harness-memory lessons restore {m.id} --by NAME --tenant {tenant})"
    )


@lessons_app.command("restore")
def restore(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="the retired lesson's id")],
    by: ByOption,
    tenant: TenantOption,
    reason: ReasonOption = None,
    url: UrlOption = None,
) -> None:
    """Bring a retired lesson back.

    The decision is recorded in the lesson's history."""
    with _store(url) as store:
        m = store.restore(memory_id, by, reason, tenant=tenant)
    _print(f"restored {m.id} ({m.status.value})")


@lessons_app.command("history")
def history(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="the lesson's id")],
    tenant: TenantOption,
    url: UrlOption = None,
) -> None:
    """One lesson's record.

    Every teaching (task, wording), later run's outcome and retirement decision. Read-only."""
    with _store(url, read_only=True) as store:
        events = store.lesson_events(memory_id, tenant=tenant)
    if not events:
        _print(f"no record for {memory_id} in tenant {tenant}")
    for e in events:
        who = f" by {escape(e['actor'])}" if e["actor"] else ""
        run = f" run {escape(e['run_id'])}" if e["run_id"] else ""
        _print(f"{e['at'].isoformat(timespec='seconds')}  {e['event']}{who}{run}")
        for label in ("task", "feedback"):
            if e[label]:
                _print(f"    {label}: {escape(e[label])}")
