"""The int8 copy of an embedding model: made once per model file, shared across processes,
close to the original, used for queries only, and never in the way (a copy that cannot be made
leaves the original).

Here the tests with other processes, servers or real faults; the others are in
tests/unit/test_quantize.py, tests/db/test_quantize_db.py."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from harness.memory.embedding.quantize import int8_copy, int8_copy_path
from tests.unit.test_quantize import tiny_model


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
