"""``harness-memory export`` and ``import``: a tenant's memory as JSON lines
(``docs/export-format.md``), and mem0's export shape imported. Registered by ``harness.cli.app``."""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from harness.errors import HarnessError, InvalidInput

__all__ = ["export_command", "import_command", "parse_scope"]

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        metavar="URL",
        help="database URL (default: HARNESS_DATABASE_URL, else the embedded server)",
    ),
]


class Source(StrEnum):
    HARNESS = "harness"
    MEM0 = "mem0"


def parse_scope(text: str) -> tuple[str, str | None]:
    """``user:alice`` -> (user, alice); ``user`` -> every user; ``platform`` -> (platform, None)."""
    scope, sep, scope_id = text.partition(":")
    if sep and not scope_id:
        raise InvalidInput(f"--scope {text!r}: a scope id after ':'", fields=("scope",))
    return scope, scope_id if sep else None


def _say(text: str) -> None:
    from harness.cli.app import err_console

    err_console.print(text, soft_wrap=True, highlight=False)


def export_command(
    tenant: Annotated[str, typer.Option("--tenant", metavar="TENANT", help="whose memory")],
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            metavar="SCOPE[:ID]",
            help="only this scope (user:alice, user for every user, platform); repeatable",
        ),
    ] = None,
    vectors: Annotated[
        bool, typer.Option("--vectors", help="include the vectors (else import re-embeds)")
    ] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="default: stdout")
    ] = None,
    url: UrlOption = None,
) -> None:
    """Write a tenant's memory as JSON lines: every memory with its status, history chain,
    approval, expiry and source, the approval trail, and lessons' contexts, outcomes and
    scores. Read-only; streams (a page of rows at a time)."""
    from harness.cli.app import _fail, _open_store

    try:
        scopes = [parse_scope(s) for s in scope or []]
    except InvalidInput as exc:
        raise _fail(exc) from exc
    with _open_store(url, check_model=False, read_only=True) as store:
        out = output.open("w", encoding="utf-8") if output else sys.stdout
        try:
            report = store.export_memories(
                tenant, lambda line: out.write(line + "\n"), scopes=scopes, with_vectors=vectors
            )
        except HarnessError as exc:
            raise _fail(exc) from exc
        finally:
            if output:
                out.close()
    _say(
        f"exported {report.memories} memories, {report.approvals} approvals, "
        f"{report.lesson_events} lesson events, {report.lesson_scores} lesson scores, "
        f"{report.conversations} conversations of tenant {escape(tenant)}"
    )


def import_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="an export file (JSON lines)")],
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            metavar="TENANT",
            help="the tenant the file must be of (mem0: the tenant to import into)",
        ),
    ] = None,
    as_tenant: Annotated[
        str | None,
        typer.Option(
            "--as-tenant", metavar="TENANT", help="import another tenant's file as this one"
        ),
    ] = None,
    source: Annotated[
        Source, typer.Option("--from", help="the file's shape: harness (this store's) or mem0")
    ] = Source.HARNESS,
    url: UrlOption = None,
) -> None:
    """Import an export file. Every line is checked before anything is written (a bad line:
    its number and field, nothing written); idempotent by id; a file of another tenant only
    with --as-tenant. --from mem0 maps mem0's records onto scopes and kinds through the
    guard, and lists what it skipped and could not map."""
    from harness.cli.app import _fail, _open_store

    if not file.is_file():
        raise _fail(InvalidInput(f"FILE: no such file: {file}", fields=("file",)))
    with _open_store(url) as store, tempfile.TemporaryDirectory() as tmp:
        path = file
        try:
            if source is Source.MEM0:
                path = _from_mem0(file, tenant or as_tenant, Path(tmp), store.guard.check)
                tenant = None
            report = store.import_memories(path, tenant=tenant, as_tenant=as_tenant)
        except HarnessError as exc:
            raise _fail(exc) from exc
    _say(
        f"imported into tenant {escape(report.tenant)}: {report.memories} memories "
        f"({report.existing} already there, {report.embedded} embedded), "
        f"{report.approvals} approvals, {report.lesson_events} lesson events, "
        f"{report.lesson_scores} lesson scores, {report.conversations} conversations"
    )
    for line in report.skipped:
        _say(f"skipped {escape(line)}")


def _from_mem0(file: Path, tenant: str | None, tmp: Path, check: object) -> Path:
    """mem0's records as an export file in ``tmp`` (the import reads it twice)."""
    from harness.memory.domain.mem0_import import Mem0Mapping, mem0_export_lines

    if tenant is None:
        raise InvalidInput("--tenant: a mem0 file has no tenant; name one", fields=("tenant",))
    mapping = Mem0Mapping()
    out = tmp / "mem0.jsonl"
    with file.open(encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        for line in mem0_export_lines(
            src,
            tenant=tenant,
            now=datetime.now(UTC),
            check=check,  # type: ignore[arg-type]
            mapping=mapping,
        ):
            dst.write(line + "\n")
    for line in mapping.skipped:
        _say(f"mem0 skipped {escape(line)}")
    for name, n in sorted(mapping.unmapped.items()):
        _say(f"mem0 field not mapped: {name} (in {n} records)")
    return out
