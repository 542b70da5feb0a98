"""What row-level security costs recall: the same recalls with and without it, interleaved in
one process against one database. Writes ``bench/results/rls_cost.json``.

"with RLS" is the shipped store: its pooled connections run as ``harness_app`` and every
transaction sets ``harness.tenant``. "without" is the same store code logged in as a role the
policies never apply to: ``bench_no_rls`` (``BYPASSRLS``, not a member of ``harness_app``, so
the store's connections keep running as it; created here, granted the tables' DML). The tenant
setting is still sent (recall has always sent it with its read), so the ratio is the policies'
cost.

Run: ``python -m bench.rls_cost [--tenants 5] [--per-user 1000] [--rounds 300]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from bench.common import CachedEmbedder, as_tenant, fresh_store, settle
from bench.synthetic import generate
from harness.memory import MemoryCandidate, MemoryStore, RecallRequest
from harness.settings import Settings

RESULTS = Path(__file__).parent / "results" / "rls_cost.json"
#: The login of the "without" side (see the module docstring).
NO_RLS_ROLE = "bench_no_rls"


def login_without_rls(url: str) -> str:
    """``url`` logged in as :data:`NO_RLS_ROLE` (same password, if any), the role created if
    missing and granted this database's tables, as the login of ``url`` (a superuser)."""
    parsed = make_url(url)
    owner = sa.create_engine(url, poolclass=sa.NullPool, isolation_level="AUTOCOMMIT")
    try:
        with owner.connect() as conn:
            role = sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r")
            if conn.execute(role, {"r": NO_RLS_ROLE}).first() is None:
                conn.execute(sa.text(f"CREATE ROLE {NO_RLS_ROLE} LOGIN BYPASSRLS"))
            if parsed.password:
                quoted = sa.text("SELECT format('ALTER ROLE %I PASSWORD %L', :r, :pw)")
                conn.execute(
                    sa.text(
                        conn.execute(quoted, {"r": NO_RLS_ROLE, "pw": parsed.password}).scalar_one()
                    )
                )
            conn.execute(sa.text(f"GRANT USAGE ON SCHEMA public TO {NO_RLS_ROLE}"))
            conn.execute(
                sa.text(
                    "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public "
                    f"TO {NO_RLS_ROLE}"
                )
            )
            conn.execute(sa.text(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {NO_RLS_ROLE}"))
    finally:
        owner.dispose()
    return parsed.set(username=NO_RLS_ROLE).render_as_string(hide_password=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tenants", type=int, default=5)
    parser.add_argument("--per-user", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()

    emb = CachedEmbedder.load()
    ds = generate(args.per_user, 50, 0)
    emb.warm(ds.facts + [q.text for q in ds.questions], "rls")
    secured = fresh_store(emb, "harness_bench_rls")
    tenants = [f"tenant-{n}" for n in range(args.tenants)]
    for tenant in tenants:
        for i in range(0, len(ds.facts), 500):
            secured.write_many(
                [
                    MemoryCandidate(
                        tenant=tenant, scope="user", scope_id="u", kind="fact", content=fact
                    )
                    for fact in ds.facts[i : i + 500]
                ]
            )
    settle(secured)
    plain = MemoryStore.connect(
        login_without_rls(secured.url),
        embedder=emb,
        migrate=False,
        check_model=False,
        settings=Settings.from_env(statement_timeout_ms=600_000),
    )
    # each side's connections as the store makes them (bench.common: its connect hook)
    with as_tenant(plain) as conn:
        assert conn.execute(sa.text("SELECT current_user")).scalar_one() == NO_RLS_ROLE
    with as_tenant(secured) as conn:
        assert conn.execute(sa.text("SELECT current_user")).scalar_one() == "harness_app"

    timings: dict[str, list[float]] = {"with_rls": [], "without_rls": []}
    stores = {"with_rls": secured, "without_rls": plain}
    for r in range(args.rounds + 20):
        req = RecallRequest(
            tenant=tenants[r % len(tenants)],
            user_id="u",
            query=ds.questions[r % len(ds.questions)].text,
        )
        order = ["with_rls", "without_rls"] if r % 2 else ["without_rls", "with_rls"]
        answers = {}
        for name in order:
            start = time.perf_counter()
            answers[name] = stores[name].recall(req)
            if r >= 20:  # warm-up rounds are not counted
                timings[name].append(time.perf_counter() - start)
        same = [i.memory.id for i in answers["with_rls"].items]
        assert same == [i.memory.id for i in answers["without_rls"].items], "results differ"
    medians = {k: statistics.median(v) * 1000 for k, v in timings.items()}
    out = {
        "rows": args.tenants * args.per_user,
        "tenants": args.tenants,
        "rounds": args.rounds,
        "median_ms_with_rls": round(medians["with_rls"], 3),
        "median_ms_without_rls": round(medians["without_rls"], 3),
        "ratio": round(medians["with_rls"] / medians["without_rls"], 3),
        "paired_median_delta_ms": round(
            statistics.median(
                (a - b) * 1000
                for a, b in zip(timings["with_rls"], timings["without_rls"], strict=True)
            ),
            3,
        ),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))
    plain.close()
    secured.close()


if __name__ == "__main__":
    main()
