"""The import's first pass: every line of an export file checked before anything is written.

Pure and streaming: the file is read once, a line at a time; what is kept is the header,
counts, and the keys of active memories (a file holding two active memories of one key
cannot be imported, and the store's unique index would only say so half-way through).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.errors import InvalidInput
from harness.identifiers import check_identifier
from harness.memory.domain.conversations import check_conversation_id, check_turns
from harness.memory.domain.export_format import (
    ConversationRecord,
    ExportLineError,
    Header,
    MemoryRecord,
    read_records,
)
from harness.memory.domain.types import Status

__all__ = ["CheckedFile", "check_file", "target_tenant"]


@dataclass(frozen=True, slots=True)
class CheckedFile:
    """A file that passed every check: its header, the tenant it is imported as, its line
    count and how many memories it holds."""

    header: Header
    tenant: str
    lines: int
    memories: int


def target_tenant(header: Header, tenant: str | None, as_tenant: str | None) -> str:
    """The tenant the file's records are written under.

    ``tenant``: the caller's expectation of the file's tenant (refused when it differs);
    ``as_tenant``: write them under that tenant instead, whatever the file's.

    Raises:
        ExportLineError: the file is another tenant's and ``as_tenant`` was not given.
        InvalidInput: a malformed ``tenant`` or ``as_tenant``.
    """
    if as_tenant is not None:
        return check_identifier(as_tenant, "as_tenant")
    if tenant is not None and check_identifier(tenant, "tenant") != header.tenant:
        raise ExportLineError(
            1,
            "tenant",
            f"the file holds tenant {header.tenant!r}'s memories, not {tenant!r}'s; "
            f"to import them as {tenant!r} pass as_tenant (--as-tenant {tenant})",
        )
    return header.tenant


def check_file(
    lines: Iterable[str], *, tenant: str | None = None, as_tenant: str | None = None
) -> CheckedFile:
    """Check every line of ``lines`` (an export file); returns what the write pass needs.

    Raises:
        UnsupportedExportVersion: a newer schema than this build reads.
        ExportLineError: the first bad line, naming its number and field (nothing written).
    """
    header: Header | None = None
    target = ""
    active: set[tuple[str, str, str]] = set()
    memories = 0
    last = 0
    for number, record in read_records(lines):
        last = number
        if isinstance(record, Header):
            header = record
            target = target_tenant(record, tenant, as_tenant)
            continue
        if isinstance(record, ConversationRecord):
            _check_conversation(number, record)
            continue
        if isinstance(record, MemoryRecord):
            memories += 1
            if record.status is Status.ACTIVE and record.key is not None:
                slot = (record.scope.value, record.scope_id, record.key)
                if slot in active:
                    raise ExportLineError(
                        number,
                        "key",
                        f"a second active memory of key {record.key!r} in "
                        f"{record.scope.value}:{record.scope_id}",
                    )
                active.add(slot)
    assert header is not None  # read_records raises for a file without one
    return CheckedFile(header, target, last, memories)


def _check_conversation(number: int, record: ConversationRecord) -> None:
    """The archive's own rules for a post (ids, order, zones, limits), named by line."""
    try:
        check_identifier(record.user_id, "user_id")
        check_conversation_id(record.id, "id")
        check_turns(record.id, [turn.model_dump() for turn in record.turns])
    except InvalidInput as exc:
        field = exc.fields[0] if exc.fields else "turns"
        message = str(exc).removeprefix(f"{field}: ")
        raise ExportLineError(number, field, message) from None
