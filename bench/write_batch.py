"""``write_many`` throughput with embeddings, main's code beside this tree's, interleaved.

    python -m bench.write_batch --rounds 3 --n 2000       # writes bench/results/write_batch.json

Each round runs one pass of the baseline (a ``git archive`` of ``--baseline-ref``, default
main) and one of this tree, alternating which goes first, each in a fresh process on its own
fresh database of the private bench server. A pass writes ``--n`` synthetic facts of one
user through ``write_many`` in batches of 500 with the real embedding model, and records
wall time, process CPU time, and the part of both spent inside the embedder (the rest is the
store: SQL, locks, Python).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import RESULTS, server_url

HERE = Path(__file__).resolve().parent.parent


class _TimedEmbedder:
    """The real model, with the wall and CPU time spent inside it summed."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.wall = 0.0
        self.cpu = 0.0

    @property
    def model_name(self) -> str:
        return str(self.inner.model_name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        w, c = time.perf_counter(), time.process_time()
        try:
            return list(self.inner.embed(texts))
        finally:
            self.wall += time.perf_counter() - w
            self.cpu += time.process_time() - c


def one_pass(db: str, n: int) -> dict[str, Any]:
    """Write ``n`` facts on a fresh database ``db``; timings of the whole and of the model."""
    from bench.common import fresh_store
    from bench.synthetic import generate
    from harness.memory import MemoryCandidate
    from harness.settings import Settings

    try:
        from harness.memory.embedding.embedder import load_embedder
    except ModuleNotFoundError:  # a baseline from before the layering (d31ebc9 and older)
        from harness.memory.embedder import load_embedder  # type: ignore[no-redef]

    settings = Settings.from_env()
    # Without HARNESS_EMBED_THREADS: the baseline checkout this bench also runs has no such
    # setting, and both sides must embed alike.
    inner, reason = load_embedder(settings.embed_model, settings.embed_model_path)
    if inner is None:
        raise SystemExit(f"the bench needs the embedding model: {reason}")
    emb = _TimedEmbedder(inner)
    store = fresh_store(emb, db)  # type: ignore[arg-type]
    try:
        facts = generate(n, 1, 1, seed=4242).facts[:n]
        emb.embed(["warm up"])
        emb.wall = emb.cpu = 0.0
        w, c = time.perf_counter(), time.process_time()
        for i in range(0, n, 500):
            store.write_many(
                [
                    MemoryCandidate(
                        tenant="bench-write", scope="user", scope_id="u", kind="fact", content=f
                    )
                    for f in facts[i : i + 500]
                ]
            )
        wall, cpu = time.perf_counter() - w, time.process_time() - c
    finally:
        store.close()
    return {
        "n": n,
        "per_s": round(n / wall, 1),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "embed_wall_s": round(emb.wall, 3),
        "embed_cpu_s": round(emb.cpu, 3),
        "store_wall_ms_per_100": round((wall - emb.wall) / n * 100_000, 2),
        "store_cpu_ms_per_100": round((cpu - emb.cpu) / n * 100_000, 2),
    }


def _pass(root: Path, db: str, n: int) -> dict[str, Any]:
    env = dict(os.environ, HARNESS_BENCH_DATABASE_URL=server_url())
    env["PYTHONPATH"] = f"{root}{os.pathsep}{HERE}"
    cmd = [sys.executable, "-m", "bench.write_batch", "pass", "--db", db, "--n", str(n)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=root)
    if done.returncode != 0:
        raise SystemExit(f"pass failed ({root}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def compare(rounds: int, n: int, ref: str) -> dict[str, Any]:
    """Alternate baseline and new passes; medians per side and new/base ratios."""
    with tempfile.TemporaryDirectory(prefix="write-batch-base-") as tmp:
        base = Path(tmp)
        archive = subprocess.run(
            ["git", "archive", ref], cwd=HERE, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        # The baseline runs this tree's bench module (its own may not have one).
        (base / "bench" / "write_batch.py").write_text(Path(__file__).read_text())
        load_before = [round(x, 2) for x in os.getloadavg()]
        runs: dict[str, list[dict[str, Any]]] = {"base": [], "new": []}
        for r in range(rounds):
            order = ("base", "new") if r % 2 == 0 else ("new", "base")
            for side in order:
                root = base if side == "base" else HERE
                runs[side].append(_pass(root, f"write_batch_{side}", n))
    summary: dict[str, Any] = {}
    for metric in ("per_s", "cpu_s", "store_wall_ms_per_100", "store_cpu_ms_per_100"):
        b = statistics.median(x[metric] for x in runs["base"])
        v = statistics.median(x[metric] for x in runs["new"])
        summary[metric] = {"base": b, "new": v, "new_over_base": round(v / b, 3)}
    return {
        "baseline_ref": ref,
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "summary": summary,
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd")
    p_pass = sub.add_parser("pass")
    p_pass.add_argument("--db", required=True)
    p_pass.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--baseline-ref", default="main")
    parser.add_argument("--out", default=str(RESULTS / "write_batch.json"))
    args = parser.parse_args(argv)
    if args.cmd == "pass":
        print(json.dumps(one_pass(args.db, args.n)))
        return
    result = compare(args.rounds, args.n, args.baseline_ref)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["summary"], indent=2))


if __name__ == "__main__":
    main()
