"""The int8 copy of an embedding model: made once per model file, shared across processes,
close to the original, used for queries only, and never in the way (a copy that cannot be made
leaves the original).

Here the tests that need no database, model or other process; the others are in
tests/db/test_quantize_db.py, tests/system/test_quantize_system.py."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from harness.memory.embedding.quantize import MODEL_FILE, int8_copy, int8_copy_path


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


def test_the_quantizer_says_nothing_to_the_host_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    int8_copy(tiny_model(tmp_path / "m"), tmp_path / "cache")
    assert [r for r in caplog.records if "onnxruntime" in r.pathname] == []
    logging.getLogger().info("the host still logs")
    assert caplog.records[-1].getMessage() == "the host still logs"
