"""Who a call is for: one verified identity, shared by runs, recall, extraction and MCP.

Identity comes from the caller's verified context (a token, the host runtime), never from
query text or model output. Pure value, no IO.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.identifiers import check_identifier, check_optional_identifier

__all__ = ["Caller"]


@dataclass(frozen=True)
class Caller:
    """The verified caller: a tenant and a user, optionally pinned to one workflow and session.

    Raises:
        InvalidInput: an identity string is empty, too long or ambiguous (names the field).
    """

    tenant: str
    user_id: str
    workflow_id: str | None = None
    session_id: str | None = None

    def __post_init__(self) -> None:
        check_identifier(self.tenant, "tenant")
        check_identifier(self.user_id, "user_id")
        check_optional_identifier(self.workflow_id, "workflow_id")
        check_optional_identifier(self.session_id, "session_id")
