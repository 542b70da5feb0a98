"""The kinds of test, one folder each under tests/, and the fixtures a unit test may not use."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
#: The folders of the kinds of test; each test is marked with the name of its folder.
KINDS = ("unit", "db", "system")
#: Fixtures that reach PostgreSQL (every database fixture depends on ``server_url``) or need the
#: embedding model (``model_folder``: tests/system/test_operability.py); tests/unit refuses them.
DB_FIXTURES = frozenset(
    {
        "server_url",
        "db_url",
        "template_db_url",
        "private_db_url",
        "fresh_db_url",
        "semantic_db_url",
        "store",
        "private_store",
        "semantic_store",
        "lexical_store",
        "astore",
    }
)
MODEL_FIXTURES = frozenset({"real_embedder", "model_folder"})


def kind_of(path: Path) -> str | None:
    """``unit``, ``db`` or ``system`` for a test file under that folder of tests/, else None."""
    try:
        top = Path(path).resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return top if top in KINDS else None
