"""Console page latency at 100k memories in one tenant; writes bench/results/console.json.

    python -m bench.console_pages [--n 100000] [--repeat 15] [--reuse]

Rows are bulk-inserted (random unit vectors, a realistic mix of scopes, kinds, statuses and
origins over 90 days, 20 pending platform items), the table is VACUUM ANALYZEd, then each page
is fetched in-process through Starlette's TestClient (routing, SQL, template rendering) and
the median and p90 of ``repeat`` fetches are reported, with the EXPLAIN of the listing queries:
first with the schema's indexes, then again after creating ``PROPOSED_INDEX`` (same process).
``--reuse`` skips the load and measures the database a previous run left behind.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from bench.common import RESULTS, all_tenants, as_tenant, fresh_store, server_url, settle
from harness.console import AdminTokenFile, build_console_app
from harness.console.backend import format_cursor
from harness.fingerprint import fingerprint
from harness.memory.domain.types import Kind, Status
from harness.memory.store.sql import console as csql
from harness.memory.store.sql.schema import memories
from harness.memory.store.sync import MemoryStore
from harness.settings import Settings
from tests.support.console_helpers import sign_in

TENANT = "bench-console"
#: The index the console's listings and chart want (tenant first, as every index here).
PROPOSED_INDEX = (
    "CREATE INDEX ix_memories_tenant_created ON memories (tenant, created_at, id) INCLUDE (origin)"
)
DIM = 384


class RandomEmbedder:
    """Query vectors for the playground: deterministic per text, no model needed."""

    model_name = "bench/random"
    dim = DIM

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            rng = np.random.default_rng(abs(hash(text)) % (2**32))
            v = rng.normal(size=DIM)
            out.append((v / np.linalg.norm(v)).tolist())
        return out


def load(conn: sa.Connection, n: int, now: datetime) -> None:
    """``n`` rows into ``conn``'s transaction (the table owner's: it rebuilds an index)."""
    rng = np.random.default_rng(7)

    # Platform policies are few; user facts are most of a tenant.
    def scope_of(i: int) -> tuple[str, str]:
        r = i % 100
        if r == 0:
            return "platform", ""
        if r < 20:
            return "session", f"s-{i % 2000}"
        if r < 40:
            return "workflow", f"wf-{i % 50}"
        return "user", f"user-{i % 500}"

    kinds = ["fact", "lesson", "decision"]

    def kind_of(i: int) -> str:
        # Constraints and preferences are always recalled: keep them as rare as in practice.
        return "constraint" if i % 997 == 1 else "preference" if i % 101 == 1 else kinds[i % 3]

    origins = ["api", "verdict", "completion", "admin"]
    batch = 5000
    # Building the HNSW index once after the load is far cheaper than maintaining it per row.
    conn.execute(sa.text("DROP INDEX IF EXISTS ix_memories_embedding_hnsw"))
    for start in range(0, n, batch):
        rows = []
        vecs = rng.normal(size=(min(batch, n - start), DIM))
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        for j, vec in enumerate(vecs):
            i = start + j
            scope, sid = scope_of(i)
            content = f"Memory {i}: topic {i % 97} note about item {i % 1013}."
            pending = i % 5000 == 0  # 20 pending platform items at 100k
            rows.append(
                {
                    "id": uuid.uuid4(),
                    "tenant": TENANT,
                    "scope": "platform" if pending else scope,
                    "scope_id": "" if pending else sid,
                    "kind": kind_of(i),
                    "memory_key": None,
                    "content": content,
                    "priority": 0,
                    "status": "pending_approval"
                    if pending
                    else ("superseded" if i % 11 == 0 else "active"),
                    "origin": "verdict" if pending else origins[i % 4],
                    "created_at": now - timedelta(minutes=int(rng.integers(0, 90 * 24 * 60))),
                    "fingerprint": fingerprint(content),
                    "embedding": vec.tolist(),
                }
            )
        conn.execute(memories.insert(), rows)
        print(f"  loaded {start + len(rows)}/{n}", flush=True)
    conn.execute(sa.text("SET LOCAL maintenance_work_mem = '512MB'"))
    conn.execute(
        sa.text(
            "CREATE INDEX ix_memories_embedding_hnsw ON memories "
            "USING hnsw (embedding vector_cosine_ops)"
        )
    )
    print("  built the HNSW index", flush=True)


def timed_get(client: TestClient, url: str, repeat: int) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        r = client.get(url)
        samples.append((time.perf_counter() - t) * 1000)
        assert r.status_code == 200, (url, r.status_code, r.text[:300])
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples), 1),
        "p90_ms": round(samples[int(len(samples) * 0.9) - 1], 1),
    }


def explain(store: MemoryStore, stmt: Any) -> str:
    """EXPLAIN ANALYZE of a console statement, admitting the tenant's rows as the console's
    reads do."""
    with as_tenant(store, TENANT) as conn:
        compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True})
        rows = conn.execute(sa.text(f"EXPLAIN (ANALYZE, BUFFERS OFF) {compiled}")).all()
    return "\n".join(r[0] for r in rows)


def reuse_store() -> MemoryStore:
    """The database a previous run loaded, without the proposed index (measured as baseline)."""
    url = make_url(server_url()).set(database="bench_console")
    store = MemoryStore.connect(
        url.render_as_string(hide_password=False),
        embedder=RandomEmbedder(),  # type: ignore[arg-type]
        settings=Settings.from_env(statement_timeout_ms=600_000),
        check_model=False,
    )
    without_proposed_index(store)
    return store


def without_proposed_index(store: MemoryStore) -> None:
    """Drop ``PROPOSED_INDEX`` (migration 0004 has created it since) and settle: the pages'
    first variant measures the schema without it."""
    with all_tenants(store, as_owner=True) as conn:
        conn.execute(sa.text("DROP INDEX IF EXISTS ix_memories_tenant_created"))
    settle(store)


def run(n: int, repeat: int, *, reuse: bool = False) -> dict[str, Any]:
    now = datetime.now(UTC)
    t = time.perf_counter()
    if reuse:
        store = reuse_store()
        with all_tenants(store) as conn:
            n = conn.execute(sa.text("SELECT count(*) FROM memories")).scalar_one()
            now = conn.execute(sa.text("SELECT max(created_at) FROM memories")).scalar_one()
    else:
        store = fresh_store(RandomEmbedder(), "bench_console")  # type: ignore[arg-type]
        with all_tenants(store, as_owner=True) as conn:
            load(conn, n, now)
        without_proposed_index(store)
    load_s = time.perf_counter() - t
    with as_tenant(store, TENANT) as conn:
        deep = conn.execute(
            sa.text(
                "SELECT created_at, id FROM memories WHERE tenant = :t "
                "ORDER BY created_at DESC, id DESC OFFSET :o LIMIT 1"
            ),
            {"t": TENANT, "o": int(n * 0.9)},
        ).one()
        some_id = conn.execute(
            sa.text("SELECT id FROM memories WHERE tenant=:t LIMIT 1"), {"t": TENANT}
        ).scalar_one()
    import tempfile

    tokens = AdminTokenFile(Path(tempfile.mkdtemp()) / "tokens.json")
    pages = {
        "pending": f"/t/{TENANT}/pending",
        "browse_first": f"/t/{TENANT}/memories",
        "browse_deep_90pct": f"/t/{TENANT}/memories?before={quote(format_cursor((deep[0], deep[1])))}",
        "browse_kind_status": f"/t/{TENANT}/memories?kind=lesson&status=active",
        "browse_scope_id": f"/t/{TENANT}/memories?scope=user&scope_id=user-42",
        "browse_text_common": f"/t/{TENANT}/memories?q=note+item",
        "browse_text_selective": f"/t/{TENANT}/memories?q=item+77",
        "browse_text_rare": f"/t/{TENANT}/memories?q=no+such+words",
        "item": f"/t/{TENANT}/memories/{some_id}",
        "playground": f"/t/{TENANT}/playground?run=1&user_id=user-42&query=topic+12+note",
        "status": "/status",
    }
    out: dict[str, Any] = {
        "n": n,
        "repeat": repeat,
        "load_s": round(load_s, 1),
        "load_average_at_start": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }
    statements = {
        "browse_first": csql.browse(TENANT, csql.BrowseFilter(), before=None, limit=51),
        "browse_kind_status": csql.browse(
            TENANT,
            csql.BrowseFilter(kind=Kind.LESSON, status=Status.ACTIVE),
            before=None,
            limit=51,
        ),
        "browse_text_rare": csql.browse(
            TENANT, csql.BrowseFilter(text="no such words"), before=None, limit=51
        ),
        "per_day": csql.written_per_day(TENANT, now - timedelta(days=29)),
        "counts": csql.counts_by_dimension([TENANT]),
    }
    with TestClient(build_console_app(store, tokens)) as client:
        sign_in(client, tokens.add("bench", [TENANT]))
        # The same pages before and after the one index the console would like to have, in
        # this process, so the ratio is meaningful on a noisy machine.
        for variant in ("existing_indexes", "with_tenant_created_index"):
            if variant == "with_tenant_created_index":
                with all_tenants(store, as_owner=True) as conn:
                    conn.execute(sa.text(PROPOSED_INDEX))
                settle(store)
            print(variant, flush=True)
            pages_out: dict[str, Any] = {}
            for name, url in pages.items():
                client.get(url)  # warm
                pages_out[name] = timed_get(client, url, repeat)
                print(f"  {name:20} {pages_out[name]}", flush=True)
            out[variant] = {
                "pages": pages_out,
                "explain": {k: explain(store, v) for k, v in statements.items()},
            }
    store.close()
    return out


def main() -> None:
    logging.getLogger("harness").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--reuse", action="store_true", help="measure the database a previous run loaded"
    )
    args = parser.parse_args()
    result = run(args.n, args.repeat, reuse=args.reuse)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "console.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
