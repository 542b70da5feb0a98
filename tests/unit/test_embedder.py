"""Embedder loading, lexical-only mode, model bookkeeping and reembed.

Here the tests that need no database, model or other process; the others are in
tests/db/test_embedder_db.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import InvalidInput
from harness.memory.embedding.embedder import load_embedder
from harness.settings import Settings


def test_missing_model_folder_means_lexical_mode(tmp_path: Path) -> None:
    embedder, reason = load_embedder("sentence-transformers/all-MiniLM-L6-v2", tmp_path / "nope")
    assert embedder is None and reason is not None and "not found" in reason


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_bad_embed_threads_name_the_variable(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_EMBED_THREADS", value)
    with pytest.raises(InvalidInput, match="HARNESS_EMBED_THREADS"):
        Settings.from_env()
