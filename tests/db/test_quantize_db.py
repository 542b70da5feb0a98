"""The int8 copy of an embedding model: made once per model file, shared across processes,
close to the original, used for queries only, and never in the way (a copy that cannot be made
leaves the original).

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_quantize.py, tests/system/test_quantize_system.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.memory.embedding.embedder import FastEmbedder, choose_embedder
from harness.memory.embedding.model_choice import choose_model
from harness.memory.embedding.quantize import MODEL_FILE
from harness.settings import Settings

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _model_folder() -> Path:
    folder = Settings.from_env().embed_model_path
    if folder is None or not (folder / MODEL_FILE).is_file():
        pytest.fail("set HARNESS_EMBED_MODEL_PATH to the all-MiniLM-L6-v2 ONNX folder")
    return folder


@pytest.mark.model
def test_queries_run_through_the_int8_copy_memories_through_the_model(tmp_path: Path) -> None:
    folder = _model_folder()
    choice = choose_embedder(MODEL, folder, int8_cache=tmp_path / "cache")
    original = FastEmbedder(MODEL, folder)
    embedder = choice.embedder
    assert isinstance(embedder, FastEmbedder) and embedder.int8_queries
    assert choice.int8_fallback is None and choice.model_path == folder
    docs = [
        "Invoices go to finance as PDF with the VAT number on top",
        "The staging cluster is rebuilt every Monday night",
        "Reports use the company template, tables before charts",
        "On-call hands over at 9am with a written summary",
    ]
    queries = [
        "what format do invoices need",
        "when is staging reset",
        "layout of a report",
        "handover for the on-call shift",
    ]
    # memories: the model itself, exactly
    assert embedder.embed(docs) == original.embed(docs)
    q8, q32 = np.array(embedder.embed_queries(queries)), np.array(original.embed(queries))
    assert not np.allclose(q8, q32)  # the int8 copy really answers the queries
    assert ((q8 * q32).sum(1) > 0.97).all()
    d32 = np.array(original.embed(docs))
    assert list((q8 @ d32.T).argmax(1)) == list((q32 @ d32.T).argmax(1)) == [0, 1, 2, 3]


@pytest.mark.model
def test_a_query_gets_the_same_vector_whatever_it_is_asked_with(tmp_path: Path) -> None:
    embedder = choose_embedder(MODEL, _model_folder(), int8_cache=tmp_path / "cache").embedder
    assert isinstance(embedder, FastEmbedder) and embedder.int8_queries
    texts = ["short", "a much longer question about the billing service's deployment window"]
    together = embedder.embed_queries(texts * 3)
    alone = [embedder.embed_queries([t])[0] for t in texts]
    assert together == alone * 3


@pytest.mark.model
def test_a_copy_that_cannot_be_made_leaves_the_original_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _model_folder()
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    choice = choose_embedder(MODEL, folder, int8_cache=blocked)
    assert isinstance(choice.embedder, FastEmbedder) and not choice.embedder.int8_queries
    assert choice.int8_fallback is not None and "Error" in choice.int8_fallback
    assert any("int8 copy" in r.getMessage() for r in caplog.records)
    off = Settings.from_env(embed_model_path=folder, embed_int8=False, model_cache=blocked)
    quiet = choose_model(off, embedded=False)
    assert isinstance(quiet.embedder, FastEmbedder) and not quiet.embedder.int8_queries
    assert quiet.int8_fallback is None  # not asked for: nothing to say


@pytest.mark.model
def test_int8_queries_are_off_unless_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _model_folder()
    monkeypatch.delenv("HARNESS_EMBED_INT8", raising=False)
    default = Settings.from_env(embed_model_path=folder, model_cache=tmp_path / "cache")
    assert default.embed_int8 is False
    plain = choose_model(default, embedded=False).embedder
    assert isinstance(plain, FastEmbedder) and not plain.int8_queries
    assert not (tmp_path / "cache").exists()  # nothing made when not asked for
    monkeypatch.setenv("HARNESS_EMBED_INT8", "on")
    asked = Settings.from_env(embed_model_path=folder, model_cache=tmp_path / "cache")
    fast = choose_model(asked, embedded=False).embedder
    assert isinstance(fast, FastEmbedder) and fast.int8_queries
    assert fast.embed(["a memory"]) == plain.embed(["a memory"])  # memories as before
