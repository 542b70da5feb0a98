"""The int8 copy of an embedding model: made once per model file, shared across processes,
close to the original, used for queries only, and never in the way (a copy that cannot be made
leaves the original)."""

from __future__ import annotations

import logging
import multiprocessing
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from harness.memory.embedding.embedder import FastEmbedder, choose_embedder
from harness.memory.embedding.model_choice import choose_model
from harness.memory.embedding.quantize import MODEL_FILE, int8_copy, int8_copy_path
from harness.settings import Settings

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def tiny_model(folder: Path, seed: int = 0) -> Path:
    """A one-MatMul ONNX model (64 -> 32) with a tokenizer-like file beside it."""
    rng = np.random.default_rng(seed)
    weight = numpy_helper.from_array(rng.normal(size=(64, 32)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 32])],
        initializer=[weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / MODEL_FILE)
    (folder / "tokenizer.json").write_text('{"kept": true}')
    return folder


def run(folder: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(folder / MODEL_FILE), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def test_the_copy_is_int8_close_to_the_original_and_made_once(tmp_path: Path) -> None:
    source = tiny_model(tmp_path / "m")
    cache = tmp_path / "cache"
    copy = int8_copy(source, cache)
    assert copy == int8_copy_path(source, cache) and copy.parent == cache
    assert (copy / "tokenizer.json").read_text() == '{"kept": true}'
    kinds = {init.data_type for init in onnx.load(copy / MODEL_FILE).graph.initializer}
    assert TensorProto.INT8 in kinds  # the weights really are int8
    x = np.random.default_rng(1).normal(size=(8, 64)).astype(np.float32)
    original, quantized = run(source, x), run(copy, x)
    cosines = (original * quantized).sum(1) / (
        np.linalg.norm(original, axis=1) * np.linalg.norm(quantized, axis=1)
    )
    assert cosines.min() > 0.99, cosines
    assert not np.array_equal(original, quantized)
    made_at = (copy / MODEL_FILE).stat().st_mtime_ns
    assert int8_copy(source, cache) == copy  # found, not made again
    assert (copy / MODEL_FILE).stat().st_mtime_ns == made_at
    assert [p.name for p in cache.iterdir() if p.name.startswith(".partial")] == []


def test_a_changed_model_gets_a_new_copy(tmp_path: Path) -> None:
    source = tiny_model(tmp_path / "m", seed=0)
    cache = tmp_path / "cache"
    first = int8_copy(source, cache)
    tiny_model(source, seed=1)
    os.utime(source / MODEL_FILE, ns=(1, 1))  # a different file, whatever the clock says
    second = int8_copy(source, cache)
    assert second != first
    x = np.ones((1, 64), dtype=np.float32)
    assert not np.allclose(run(first, x), run(second, x))


def _make_copy(source: str, cache: str, out: multiprocessing.Queue[str]) -> None:
    out.put(str(int8_copy(Path(source), Path(cache))))


def test_processes_starting_together_make_one_copy(tmp_path: Path) -> None:
    source = tiny_model(tmp_path / "m")
    cache = tmp_path / "cache"
    context = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue[str] = context.Queue()
    workers = [
        context.Process(target=_make_copy, args=(str(source), str(cache), out)) for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    paths = {out.get(timeout=120) for _ in workers}
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert paths == {str(int8_copy_path(source, cache))}
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".int8")) == [
        Path(next(iter(paths))).name
    ]


def test_the_quantizer_says_nothing_to_the_host_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    int8_copy(tiny_model(tmp_path / "m"), tmp_path / "cache")
    assert [r for r in caplog.records if "onnxruntime" in r.pathname] == []
    logging.getLogger().info("the host still logs")
    assert caplog.records[-1].getMessage() == "the host still logs"


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
