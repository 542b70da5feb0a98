"""Recall at scale, main's code beside this tree's, interleaved on one server (issue 18).

    python -m bench.scale seed                  # once: the three cases' databases (minutes)
    python -m bench.scale compare --rounds 3    # baseline and new passes alternating
    python -m bench.scale pass --db X ...       # one pass (what ``compare`` runs per round)
    python -m bench.scale cluster --case solo --index-memory 0 --index-memory 600

``seed`` loads, through this tree's store, three databases on the private bench server: ``1k``
(one user holding 1,000 facts), ``solo`` (one user holding 100,000) and ``spread`` (100,000 in
one tenant over 50 users of 2,000), each with six always-on items. ``--cluster spread`` adds a
third side per round: this tree on a copy rewritten by ``MemoryStore.cluster``. ``compare`` copies each into
a baseline database (``CREATE DATABASE ... TEMPLATE``, migrated by the baseline's own code)
and a new one, then alternates one pass of each per round, each in a fresh process whose
``harness`` package is the baseline's (``--baseline-root``, a ``git archive`` of main) or this
tree's. A pass times every recall end to end with the query embedding (a miss of the store's
query cache each time, fastembed on the real model), splits each into stages (embedding, every
SQL round trip, Python between and after them), measures 8-caller throughput and
``write_many`` with embeddings, and prints JSON. Results go to bench/results/scale.json.

Both sides run this file's pass code: a baseline pass imports ``harness`` from
``--baseline-root`` (a ``git archive`` of the issue-time commit, d31ebc9), then bench/ from this
tree (:data:`_BASELINE_START`). So the pass works on that store (public ``store.engine`` and
``store.retriever``, the modules before the layering) and on this tree's closed one; what
differs is kept to :func:`connect_uncached` (how a store is told to keep no query vectors) and
the import fallback in bench/common.py. The stage clock listens on SQLAlchemy's ``Engine`` class
and wraps ``store.retriever.assemble_result`` (timing only, the one use of the retriever left)
on both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url

from bench.common import (
    RESULTS,
    WORK,
    CachedEmbedder,
    percentiles,
    rank_metrics,
    relevance_plan,
    server_url,
    sql_engine,
)
from bench.synthetic import generate

TENANT, USER, WORKFLOW = "bench", "u", "wf"
ALWAYS = [
    ("platform", None, "constraint", "Never include customer e-mail addresses."),
    ("platform", None, "constraint", "Quote every figure with its unit."),
    ("user", USER, "preference", "Answers in British English."),
    ("user", USER, "preference", "Prefers tables over long prose."),
    ("workflow", WORKFLOW, "lesson", "Reports start with a three-line TL;DR."),
    ("workflow", WORKFLOW, "lesson", "List every incident id in a table."),
]
#: case -> (memories, users); the user asked about is USER (solo, 1k) or "user-7" (spread).
CASES: dict[str, tuple[int, int]] = {"1k": (1000, 1), "spread": (100_000, 50), "solo": (100_000, 1)}


def _user(case: str) -> str:
    return "user-7" if CASES[case][1] > 1 else USER


#: The two 100k cases hold the same facts (embedded once), spread over users or held by one.
SEEDS = {"1k": 1001, "spread": 100_050, "solo": 100_050}


def _dataset(case: str, n_questions: int = 100) -> Any:
    return generate(CASES[case][0], n_questions, 10, seed=SEEDS[case])


def _db_url(name: str) -> str:
    return make_url(server_url()).set(database=name).render_as_string(hide_password=False)


def _admin(sql: str) -> None:
    engine = sa.create_engine(server_url(), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(sql))
    finally:
        engine.dispose()


def _connect(name: str, embedder: Any, **options: Any) -> Any:
    from harness.memory import MemoryStore
    from harness.settings import Settings

    settings = Settings.from_env(statement_timeout_ms=600_000)
    return MemoryStore.connect(
        _db_url(name), embedder=embedder, settings=settings, check_model=False, **options
    )


def connect_uncached(name: str, embedder: Any) -> Any:
    """A store on database ``name`` whose query-vector cache keeps nothing: every recall pays
    for its query embedding (a cache lookup that misses, then the model). This tree's store
    is configured so at connect (``RecallConfig(query_cache_size=0)``); the issue-time store,
    which has no ``RecallConfig``, gets the same empty cache of size 0 on its retriever."""
    try:
        from harness.memory import RecallConfig
    except ImportError:  # the issue-time harness (a baseline pass)
        from harness.memory.query_cache import QueryVectorCache  # type: ignore[import-not-found]

        store = _connect(name, embedder)
        store.retriever.query_vectors = QueryVectorCache(0)
        return store
    return _connect(name, embedder, recall=RecallConfig(query_cache_size=0))


def seed(cases: Sequence[str]) -> None:
    """Build ``scale_<case>`` databases (dropped first)."""
    from harness.memory import MemoryCandidate

    emb = CachedEmbedder.load()
    for case in cases:
        n, users = CASES[case]
        ds = _dataset(case)
        emb.warm(ds.facts, f"scale-seed{SEEDS[case]}")
        name = f"scale_{case}"
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        _admin(f'CREATE DATABASE "{name}"')
        store = _connect(name, emb)
        try:
            store.write_many(
                [
                    MemoryCandidate(
                        tenant=TENANT,
                        scope=s,
                        scope_id=sid if s != "user" else _user(case),
                        kind=k,
                        content=c,
                        source={"origin": "admin"},
                    )  # type: ignore[arg-type]
                    for s, sid, k, c in ALWAYS
                ]
            )
            ids: list[str] = []
            for i in range(0, n, 2000):
                batch = [
                    MemoryCandidate(
                        tenant=TENANT,
                        scope="user",
                        scope_id=f"user-{j % users}" if users > 1 else USER,
                        kind="fact",
                        content=ds.facts[j],
                    )
                    for j in range(i, min(i + 2000, n))
                ]
                ids += [str(m.id) for m in store.write_many(batch)]
            (WORK / f"scale_{case}_ids.json").write_text(json.dumps(ids))
        finally:
            store.close()
        owner = sa.create_engine(_db_url(name), isolation_level="AUTOCOMMIT")
        with owner.connect() as conn:
            conn.execute(sa.text("VACUUM ANALYZE memories"))
        owner.dispose()
        print(f"seeded {name}: {n} memories", flush=True)


def seed_bulk(case: str, baseline_root: Path) -> None:
    """``scale_<case>`` loaded by multi-row inserts, migrated by the baseline's code, with
    seeded random unit vectors instead of the model's and without the HNSW index: for timing
    the exact path only (its cost does not depend on the vectors' values; ranking quality
    there is meaningless). Embedding 100k texts did not fit a loaded 2-core machine."""
    import numpy as np

    from harness.fingerprint import fingerprint
    from harness.memory.store.sql.schema import memories

    n, users = CASES[case]
    ds = _dataset(case)
    name = f"scale_{case}"
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{name}"')
    _migrate(baseline_root, name)
    rng = np.random.default_rng(18)
    engine = sa.create_engine(_db_url(name))
    now = time.time()
    rows: list[dict[str, Any]] = []
    ids: list[str] = []
    items = [(s, sid if s != "user" else _user(case), k, c) for s, sid, k, c in ALWAYS]
    items += [
        ("user", f"user-{j % users}" if users > 1 else USER, "fact", ds.facts[j]) for j in range(n)
    ]
    import uuid
    from datetime import UTC, datetime

    for i, (scope, scope_id, kind, content) in enumerate(items):
        vec = rng.standard_normal(384)
        rid = uuid.uuid4()
        if i >= len(ALWAYS):
            ids.append(str(rid))
        rows.append(
            {
                "id": rid,
                "tenant": TENANT,
                "scope": scope,
                "scope_id": scope_id or "",
                "kind": kind,
                "content": content,
                "status": "active",
                "origin": "api",
                "created_at": datetime.fromtimestamp(now - (len(items) - i) * 0.001, UTC),
                "fingerprint": fingerprint(content),
                "embedding": (vec / np.linalg.norm(vec)).astype(np.float32),
            }
        )
    with engine.begin() as conn:
        conn.execute(sa.text("DROP INDEX ix_memories_embedding_hnsw"))
        for i in range(0, len(rows), 2000):
            conn.execute(sa.insert(memories), rows[i : i + 2000])
    (WORK / f"scale_{case}_ids.json").write_text(json.dumps(ids))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("VACUUM ANALYZE memories"))
    engine.dispose()
    print(f"seeded {name} (bulk, random vectors): {n} memories", flush=True)


class StageClock:
    """Per-recall stage timings from SQLAlchemy's cursor events and two wrappers."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float, float]] = []
        self.local = threading.local()

    def attach(self, store: Any) -> None:
        starts: dict[int, float] = {}

        def before(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
            starts[id(cursor)] = time.perf_counter()

        def after(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
            self.events.append((_label(statement), starts.pop(id(cursor)), time.perf_counter()))

        # Every engine of the process (the pass has the store's alone while it times): this
        # tree's store keeps its engine to itself, the issue-time one had it public.
        event.listen(sa.Engine, "before_cursor_execute", before)
        event.listen(sa.Engine, "after_cursor_execute", after)
        # Timing only (it calls the same method): the one read of the retriever bench/ keeps,
        # as no public name shows recall's Python after its last round trip on its own.
        inner_assemble = store.retriever.assemble_result

        def assemble(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner_assemble(*args, **kwargs)
            finally:
                self.events.append(("python: assemble", t0, time.perf_counter()))

        store.retriever.assemble_result = assemble


def _label(statement: str) -> str:
    s = " ".join(statement.split())[:160]
    if "harness.tenant" in s and "hnsw" in s:
        return "sql: tenant + hnsw settings"
    if "harness.tenant" in s:
        return "sql: set tenant"
    if "hnsw.iterative_scan" in s:
        return "sql: hnsw settings"
    if s.startswith("SELECT count(*)") and "bounded" in statement:
        return "sql: pool probe"
    if s.startswith("WITH") or "sim" in s[:200]:
        return "sql: relevance (+rows)" if "src" in statement else "sql: relevance"
    if "src" in statement:
        return "sql: rows"
    return "sql: other"


class TimedEmbedder:
    """The real embedder, timed."""

    def __init__(self, inner: Any, clock: StageClock):
        self.inner, self.clock = inner, clock
        self.model_name, self.dim = inner.model_name, inner.dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        t0 = time.perf_counter()
        try:
            return self.inner.embed(texts)  # type: ignore[no-any-return]
        finally:
            if len(texts) == 1:
                self.clock.events.append(("embedding", t0, time.perf_counter()))

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """The store's query path: the model's query variant (its int8 copy) where the
        code measured has one."""
        query = getattr(self.inner, "embed_queries", self.inner.embed)
        t0 = time.perf_counter()
        try:
            return query(texts)  # type: ignore[no-any-return]
        finally:
            if len(texts) == 1:
                self.clock.events.append(("embedding", t0, time.perf_counter()))


def scale_request(case: str, text: str) -> Any:
    """The recall every scale benchmark times: ``case``'s user, its workflow, 30 items."""
    from harness.memory import RecallRequest

    return RecallRequest(
        tenant=TENANT,
        user_id=_user(case),
        workflow_id=WORKFLOW,
        query=text,
        budget_chars=4000,
        max_items=30,
    )


def one_pass(
    db: str, case: str, n_questions: int, throughput_n: int, write_n: int
) -> dict[str, Any]:
    """Everything one pass measures on database ``db`` (see the module docstring)."""
    import harness
    from harness.memory import MemoryCandidate

    emb = CachedEmbedder.load()
    clock = StageClock()
    store = connect_uncached(db, TimedEmbedder(emb.inner, clock))
    ids = json.loads((WORK / f"scale_{case}_ids.json").read_text())
    ds = _dataset(case, n_questions)
    clock.attach(store)

    def request(text: str) -> Any:
        return scale_request(case, text)

    try:
        for q in ds.questions[:10]:  # warm the pool, the plans and the model
            store.recall(request(q.text))
        times: list[float] = []
        cpu: list[float] = []
        stages: dict[str, list[float]] = defaultdict(list)
        results = []
        for q in ds.questions:
            clock.events.clear()
            c0, t0 = time.thread_time(), time.perf_counter()
            r = store.recall(request(q.text))
            t1, c1 = time.perf_counter(), time.thread_time()
            times.append(t1 - t0)
            cpu.append(c1 - c0)
            per: dict[str, float] = defaultdict(float)
            last = t0
            for label, start, end in sorted(clock.events, key=lambda e: e[1]):
                if label != "python: assemble":
                    gap = start - last
                    per["python: between round trips" if last > t0 else "python: before first"] += (
                        gap
                    )
                    last = end
                per[label] += end - start
            per["python: after last round trip"] += t1 - last - per.get("python: assemble", 0.0)
            for label, dt in per.items():
                stages[label].append(dt)
            facts = [str(i.memory.id) for i in r.items if i.memory.kind.value == "fact"]
            results.append((ids[q.answer], facts))
        out: dict[str, Any] = {
            "harness": str(Path(harness.__file__).resolve().parent),
            "latency": percentiles(times),
            "cpu_ms_p50": round(statistics.median(cpu) * 1000, 3),
            "stages_ms_median": {
                k: round(statistics.median(v + [0.0] * (len(times) - len(v))) * 1000, 3)
                for k, v in sorted(stages.items())
            },
            "quality": rank_metrics(results),
        }
        out["explain"] = explain(store, case, ds.questions[0].text)
        if throughput_n:
            texts = [q.text for q in ds.questions]

            def call(i: int) -> None:
                store.recall(request(texts[i % len(texts)] + " " * (i // len(texts) + 1)))

            t0 = time.perf_counter()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(call, range(throughput_n)))
            out["throughput_8_callers_per_s"] = round(throughput_n / (time.perf_counter() - t0), 1)
        if write_n:
            wds = generate(write_n, 1, 1, seed=4242)
            stamp = str(time.time_ns())
            t0 = time.perf_counter()
            for i in range(0, write_n, 500):
                store.write_many(
                    [
                        MemoryCandidate(
                            tenant="bench-write",
                            scope="user",
                            scope_id=stamp,
                            kind="fact",
                            content=f,
                        )
                        for f in wds.facts[i : i + 500]
                    ]
                )
            out["write_many_per_s"] = round(write_n / (time.perf_counter() - t0), 1)
        return out
    finally:
        store.close()


def explain(store: Any, case: str, query: str) -> dict[str, Any]:
    """EXPLAIN (ANALYZE, BUFFERS) of the relevance statement as recall sends it (exact below
    the ``auto`` threshold, HNSW above), its last of three runs: planning and execution."""
    exact = CASES[case][0] // CASES[case][1] <= 3000
    lines: list[str] = []
    with sql_engine(store) as engine:  # one connection: the last run's caches are warm
        for _ in range(3):
            lines = relevance_plan(
                store,
                query,
                tenant=TENANT,
                user=_user(case),
                workflow=WORKFLOW,
                exact=exact,
                engine=engine,
            )
    times = {
        key: float(line.split(":")[1].split()[0])
        for line in lines
        for key in ("Planning Time", "Execution Time")
        if line.strip().startswith(key)
    }
    return {"exact": exact, **times, "plan": [ln[:200] for ln in lines]}


#: How a baseline pass starts: ``harness`` imported from the baseline root (its submodules
#: then load from there, whatever comes first on the path later), then bench/ from this tree
#: (the root, a ``git archive``, has a bench/ of its own that must not run). Arguments: root,
#: this tree, then bench.scale's own.
_BASELINE_START = (
    "import runpy, sys; root, here = sys.argv.pop(1), sys.argv.pop(1); "
    "sys.path[:] = [root, *(p for p in sys.path if p not in ('', root, here))]; "
    "import harness; sys.path.insert(0, here); "
    "runpy.run_module('bench.scale', run_name='__main__', alter_sys=True)"
)


def _python(root: Path | None) -> tuple[list[str], dict[str, str], str]:
    """The command prefix, environment and working directory of a process running
    ``bench.scale`` with the baseline's ``harness`` (``root``) or this tree's (None)."""
    env = dict(os.environ, HARNESS_BENCH_DATABASE_URL=server_url())
    here = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = here
    if root is None:
        return [sys.executable, "-m", "bench.scale"], env, here
    return [sys.executable, "-c", _BASELINE_START, str(root), here], env, here


def _run_pass(root: Path | None, db: str, case: str, args: argparse.Namespace) -> dict[str, Any]:
    prefix, env, cwd = _python(root)
    cmd = [
        *prefix,
        "pass",
        "--db",
        db,
        "--case",
        case,
        "--questions",
        str(args.questions),
        "--throughput",
        str(args.throughput),
        "--write",
        str(args.write if case == "1k" else 0),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"pass failed ({db}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    expected = (root or Path(cwd)).resolve() / "harness"
    if Path(result["harness"]) != expected:  # the side is the code it says it is
        raise SystemExit(f"pass on {db} ran {result['harness']}, not {expected}")
    return result


def _migrate(root: Path | None, db: str) -> None:
    prefix, env, cwd = _python(root)
    subprocess.run([*prefix, "migrate", "--db", db], env=env, check=True, cwd=cwd)


def _vacuum_full(db: str) -> None:
    engine = sa.create_engine(_db_url(db), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("VACUUM FULL ANALYZE memories"))
    finally:
        engine.dispose()


def _cluster(db: str, index_memory_mb: int | None = None) -> dict[str, Any]:
    """This tree's ``MemoryStore.cluster`` on ``db``: the layout before and after, seconds."""
    store = _connect(db, None)
    try:
        report = store.cluster(lock_wait_s=10, index_memory_mb=index_memory_mb)
    finally:
        store.close()
    return {
        "seconds": round(report.seconds, 2),
        "before": {"rows": report.before.rows, "pages": report.before.pages},
        "after": {"rows": report.after.rows, "pages": report.after.pages},
    }


def time_cluster(case: str, index_memory: Sequence[int]) -> dict[str, Any]:
    """``MemoryStore.cluster`` on a fresh copy of ``scale_<case>`` per setting (0: the
    server's ``maintenance_work_mem``)."""
    out: dict[str, Any] = {}
    for mb in index_memory:
        db = f"scale_{case}_cluster_time"
        _admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        _admin(f'CREATE DATABASE "{db}" TEMPLATE "scale_{case}"')
        try:
            _migrate(None, db)
            out[f"index_memory_mb={mb or 'server default'}"] = _cluster(db, mb or None)
        finally:
            _admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    return out


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """Alternate baseline and new passes per case and round; medians and new/base ratios."""
    root = Path(args.baseline_root).resolve()
    load = os.getloadavg()
    out: dict[str, Any] = {"load_before": [round(x, 2) for x in load], "cases": {}}
    for case in args.cases.split(","):
        for side in ("base", "new"):
            _admin(f'DROP DATABASE IF EXISTS "scale_{case}_{side}" WITH (FORCE)')
            _admin(f'CREATE DATABASE "scale_{case}_{side}" TEMPLATE "scale_{case}"')
        sides = ["base", "new"] + (["cluster"] if case in args.cluster.split(",") else [])
        if "cluster" in sides:
            _admin(f'DROP DATABASE IF EXISTS "scale_{case}_cluster" WITH (FORCE)')
            _admin(f'CREATE DATABASE "scale_{case}_cluster" TEMPLATE "scale_{case}"')
            _migrate(None, f"scale_{case}_cluster")
        _migrate(None, f"scale_{case}_new")
        if case not in args.no_vacuum.split(","):
            for side in sides:
                # Both heaps rewritten alike: the new side's rows move into their pages (0006).
                _vacuum_full(f"scale_{case}_{side}")
        if "cluster" in sides:
            out.setdefault("cluster_reports", {})[case] = _cluster(f"scale_{case}_cluster")
        runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            for side in order:
                res = _run_pass(
                    root if side == "base" else None, f"scale_{case}_{side}", case, args
                )
                runs[side].append(res)
                print(
                    f"{case} round {r} {side}: {res['latency']} {res.get('throughput_8_callers_per_s')}",
                    flush=True,
                )
        out["cases"][case] = {"runs": runs, "summary": _summary(runs)}
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def _summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    def med(side: str, get: Callable[[dict[str, Any]], float | None]) -> float | None:
        values = [v for v in (get(r) for r in runs[side]) if v is not None]
        return round(statistics.median(values), 3) if values else None

    metrics: dict[str, Callable[[dict[str, Any]], float | None]] = {
        "p50_ms": lambda r: r["latency"]["p50_ms"],
        "p95_ms": lambda r: r["latency"]["p95_ms"],
        "p99_ms": lambda r: r["latency"]["p99_ms"],
        "cpu_ms_p50": lambda r: r["cpu_ms_p50"],
        "explain_planning_ms": lambda r: r["explain"].get("Planning Time"),
        "explain_execution_ms": lambda r: r["explain"].get("Execution Time"),
        "throughput_8_callers_per_s": lambda r: r.get("throughput_8_callers_per_s"),
        "write_many_per_s": lambda r: r.get("write_many_per_s"),
        "hit@8": lambda r: r["quality"]["hit@8"],
        "mrr@8": lambda r: r["quality"]["mrr@8"],
    }
    summary: dict[str, Any] = {}
    for name, get in metrics.items():
        base, new = med("base", get), med("new", get)
        if base is None or new is None:
            continue
        summary[name] = {"base": base, "new": new, "ratio": round(new / base, 3) if base else None}
        clustered = med("cluster", get) if "cluster" in runs else None
        if clustered is not None:
            summary[name]["cluster"] = clustered
            summary[name]["cluster_ratio"] = round(clustered / base, 3) if base else None
    for side in runs:
        labels = {k for r in runs[side] for k in r["stages_ms_median"]}
        summary[f"stages_{side}"] = {
            k: round(statistics.median(r["stages_ms_median"].get(k, 0.0) for r in runs[side]), 3)
            for k in sorted(labels)
        }
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_seed = sub.add_parser("seed")
    p_seed.add_argument("--cases", default="1k,spread,solo")
    p_seed.add_argument(
        "--bulk", action="store_true", help="random vectors, no HNSW index (exact path only)"
    )
    p_seed.add_argument("--baseline-root", default=str(WORK / "baseline"))
    p_cl = sub.add_parser("cluster", help="time MemoryStore.cluster on a copy of a case")
    p_cl.add_argument("--case", required=True)
    p_cl.add_argument("--index-memory", type=int, action="append", default=[])
    p_mig = sub.add_parser("migrate", help="connect once (migrating) to a database")
    p_mig.add_argument("--db", required=True)
    p_pass = sub.add_parser("pass")
    p_pass.add_argument("--db", required=True)
    p_pass.add_argument("--case", required=True)
    for p in (p_pass, sub.add_parser("compare")):
        p.add_argument("--questions", type=int, default=100)
        p.add_argument("--throughput", type=int, default=200)
        p.add_argument("--write", type=int, default=2000)
    p_cmp = sub.choices["compare"]
    p_cmp.add_argument("--baseline-root", default=str(WORK / "baseline"))
    p_cmp.add_argument("--cases", default="1k,spread,solo")
    p_cmp.add_argument("--rounds", type=int, default=3)
    p_cmp.add_argument(
        "--no-vacuum",
        default="",
        help="cases whose copies are not rewritten by VACUUM FULL (seeded with vectors already "
        "in their rows; the rewrite rebuilds a 100k HNSW index twice)",
    )
    p_cmp.add_argument(
        "--cluster",
        default="",
        help="cases that also get a third side: this tree on a copy rewritten by "
        "MemoryStore.cluster (each scope's rows stored together)",
    )
    p_cmp.add_argument("--out", default=str(RESULTS / "scale.json"))
    args = parser.parse_args(argv)
    if args.cmd == "seed" and args.bulk:
        for case in args.cases.split(","):
            seed_bulk(case, Path(args.baseline_root).resolve())
    elif args.cmd == "seed":
        seed(args.cases.split(","))
    elif args.cmd == "cluster":
        print(json.dumps(time_cluster(args.case, args.index_memory or [0]), indent=2))
    elif args.cmd == "migrate":
        _connect(args.db, None).close()
    elif args.cmd == "pass":
        print(json.dumps(one_pass(args.db, args.case, args.questions, args.throughput, args.write)))
    else:
        result = compare(args)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps({c: v["summary"] for c, v in result["cases"].items()}, indent=2))


if __name__ == "__main__":
    main()
