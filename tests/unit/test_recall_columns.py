"""Recall reads the relevance statement's rows by position: every variant of the statement
returns the same columns in the same order."""

from __future__ import annotations

import pytest

from harness.memory.domain.types import Scope
from harness.memory.store.sql import relevance_scores

ORDER = [
    "id", "scope", "kind", "fingerprint", "sim", "content_sim", "context_sim", "negative_sim",
    "vrank", "lex", "coverage", "idf_coverage", "max_idf", "lrank",
    "clear", "repeated", "misled", "taught", "last_seen", "scale_n", "scale_mean", "scale_m2",
]  # fmt: skip


@pytest.mark.parametrize(
    ("with_vector", "exact", "bounded"),
    [(True, True, False), (True, False, True), (False, True, False)],
)
@pytest.mark.parametrize("has_session", [True, False])
def test_every_variant_returns_the_columns_in_one_order(
    with_vector: bool, exact: bool, bounded: bool, has_session: bool
) -> None:
    stmt = relevance_scores(
        has_workflow=True,
        has_session=has_session,
        scopes=tuple(s.value for s in Scope),
        with_vector=with_vector,
        exact=exact,
        bounded_lexical=bounded,
    )
    assert [c.name for c in stmt.selected_columns] == ORDER
