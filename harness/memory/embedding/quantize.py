"""An int8 copy of a local ONNX embedding model, made once per model file and cached.

onnxruntime's dynamic quantization stores the weights of the model's matrix products as int8
(one scale per output channel) and quantizes activations on the fly; on x86 cores with
VNNI/AMX the forward pass of a short query is ~2.7x faster (BENCHMARKS.md section 15). The
vectors stay within cosine ~0.99 of the original model's, so memories embedded by either
version are compared with each other as before.

The copy goes to ``cache_root/<folder>-int8-<key>/``, where the key names the source file
(path, size, modification time) and the quantizer's version: a changed model makes a new
copy. Several processes starting at once make it once (an inter-process lock); a partly
written copy is never used (written aside, then renamed).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MODEL_FILE", "int8_copy", "int8_copy_path"]

MODEL_FILE = "model.onnx"
#: Bumped when the quantization recipe changes, so existing copies are not reused.
RECIPE = "dynamic-qint8-per-channel-v1"


def int8_copy_path(source: Path, cache_root: Path) -> Path:
    """Where the int8 copy of ``source``'s model file lives (or will). Reads the file's
    metadata only.

    Raises:
        OSError: ``source`` has no readable model file.
    """
    model = source / MODEL_FILE
    meta = model.stat()
    key = hashlib.sha256(
        f"{model.resolve()}|{meta.st_size}|{meta.st_mtime_ns}|{RECIPE}".encode()
    ).hexdigest()[:16]
    return cache_root / f"{source.name}-int8-{key}"


def int8_copy(source: Path, cache_root: Path) -> Path:
    """The folder of ``source``'s int8 copy (its other files copied as they are), made now
    if it does not exist yet. Idempotent; safe across processes.

    Side effects: creates ``cache_root`` and the copy (about a quarter of the model's size;
    seconds, once).

    Raises:
        ImportError: the ``onnx`` package (onnxruntime's quantizer needs it) is missing.
        OSError: the model cannot be read or the cache written.
        Exception: whatever the quantizer raises for a model it cannot quantize.
    """
    import fasteners

    target = int8_copy_path(source, cache_root)
    if (target / MODEL_FILE).is_file():
        return target
    from onnxruntime.quantization import QuantType, quantize_dynamic

    cache_root.mkdir(parents=True, exist_ok=True)
    with fasteners.InterProcessLock(str(cache_root / ".int8.lock")):
        if (target / MODEL_FILE).is_file():  # made by another process meanwhile
            return target
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=cache_root))
        try:
            for each in source.iterdir():
                if each.is_file() and each.name != MODEL_FILE:
                    shutil.copy2(each, partial / each.name)
            with _quiet_quantizer():
                quantize_dynamic(
                    source / MODEL_FILE,
                    partial / MODEL_FILE,
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                )
            os.replace(partial, target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target


@contextlib.contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """onnxruntime's quantizer logs dozens of notes (and a pre-processing hint) on the root
    logger; they say nothing to a user of this library, so they are dropped while it runs."""

    def not_from_quantizer(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname

    root = logging.getLogger()
    root.addFilter(not_from_quantizer)
    try:
        yield
    finally:
        root.removeFilter(not_from_quantizer)
