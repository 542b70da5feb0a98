"""Soak the MCP server over HTTP with official-SDK clients; a per-minute table as JSON.

Run: ``python -m bench.soak --minutes 8 --clients 12`` (``--smoke`` for a few seconds).
Seeds memories in three tenants, each tagged ``[owner TENANT/USER]`` (``/*`` for
tenant-wide ones), mints one bearer token per user, starts ``harness-memory mcp --http`` on
loopback as a child process, and runs closed-loop clients until the time is up: mostly
``recall_memories``, some RecallSet memo calls, and optional ingest clients posting keyed
writes (every fifth one replayed). Every recall answer is checked for items of another
caller; every memo read for another client's note. Each minute records calls, errors,
p50/p95/p99, and the server's RSS, open fds, CPU and database connections.

``--baseline-src DIR`` first runs the same mix against the server code in DIR (an export of
an older commit, put first on the child's PYTHONPATH), then against this checkout, in one
run: the comparison BENCHMARKS.md quotes. Writes ``bench/results/soak[-LABEL].json``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import sqlalchemy as sa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.common import RESULTS, CachedEmbedder, fresh_store, percentiles, settle
from harness.mcp_server import TokenFile
from harness.memory import Caller, MemoryCandidate, MemoryStore

__all__ = ["main"]

TOPICS = [
    "staging cluster",
    "release train",
    "invoice format",
    "deploy approvals",
    "database backups",
    "on-call rota",
    "api rate limits",
    "report layout",
    "vpn settings",
    "test fixtures",
    "code review",
    "budget figures",
]
DETAILS = ["uses", "prefers", "needs", "avoids", "was told", "decided on"]
OWNER = re.compile(r"\[owner ([^/\]]+)/([^\]]+)\]")
INGEST_KEY = "soak-ingest-key-" + "0" * 16
TENANTS = 3


@dataclass
class Minute:
    calls: int = 0
    recalls: int = 0
    tool_errors: int = 0
    transport_errors: int = 0
    latencies: list[float] = field(default_factory=list)
    samples: list[dict[str, float]] = field(default_factory=list)


@dataclass
class Tally:
    started: float
    minutes: dict[int, Minute] = field(default_factory=dict)
    recall_answers: int = 0
    cross_caller_items: int = 0
    cross_caller_notes: int = 0
    memo_failures: int = 0
    ingests_acknowledged: list[tuple[str, str]] = field(default_factory=list)  # (tenant, id)
    replays_ok: int = 0
    replays_wrong: int = 0
    error_texts: dict[str, int] = field(default_factory=dict)

    def minute(self) -> Minute:
        return self.minutes.setdefault(int((time.monotonic() - self.started) // 60), Minute())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed(store: MemoryStore, embedder: CachedEmbedder, n: int, users: list[Caller]) -> None:
    """``n`` memories: 90 % user facts of one user, 10 % tenant-wide (platform) facts."""
    rng = random.Random(7)
    candidates = []
    for i in range(n):
        who = users[i % len(users)]
        topic, detail = rng.choice(TOPICS), rng.choice(DETAILS)
        if i % 10 == 9:
            content = f"Team note {i}: {topic} {detail} plan {i % 97} [owner {who.tenant}/*]"
            candidates.append(
                MemoryCandidate(tenant=who.tenant, scope="platform", kind="fact", content=content)
            )
        else:
            content = (
                f"{who.user_id} {detail} {topic} variant {i % 89} "
                f"(note {i}) [owner {who.tenant}/{who.user_id}]"
            )
            candidates.append(
                MemoryCandidate(
                    tenant=who.tenant,
                    scope="user",
                    scope_id=who.user_id,
                    kind=rng.choice(["fact", "preference"]),
                    content=content,
                )
            )
    embedder.warm([c.content for c in candidates], f"soak-{n}")
    for start in range(0, n, 500):
        store.write_many(candidates[start : start + 500])
    settle(store)


def cross_items(text: str, who: Caller) -> int:
    bad = 0
    for tenant, user in OWNER.findall(text):
        if tenant != who.tenant or user not in ("*", who.user_id):
            bad += 1
    return bad


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def mcp_client(
    n: int, base: str, token: str, who: Caller, deadline: float, tally: Tally
) -> None:
    """One closed-loop SDK client; a connection that breaks is counted and opened again (the
    memo handle outlives it)."""
    rng = random.Random(n)
    state: dict[str, Any] = {"memo": None, "notes": {}, "step": 0}
    while time.monotonic() < deadline:
        try:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as h,
                Client(streamable_http_client(f"{base}/mcp", http_client=h)) as client,
            ):
                await _client_loop(client, n, rng, state, who, deadline, tally)
        except Exception as exc:  # a broken connection: counted, then a new one
            _transport_error(tally, exc)
            await asyncio.sleep(0.2)


def _transport_error(tally: Tally, exc: BaseException) -> None:
    minute = tally.minute()
    minute.calls += 1
    minute.transport_errors += 1
    key = f"transport: {type(exc).__name__}"
    tally.error_texts[key] = tally.error_texts.get(key, 0) + 1


async def _client_loop(
    client: Client,
    n: int,
    rng: random.Random,
    state: dict[str, Any],
    who: Caller,
    deadline: float,
    tally: Tally,
) -> None:
    notes: dict[str, str] = state["notes"]
    while time.monotonic() < deadline:
        step = state["step"]
        state["step"] += 1
        if step % 5 == 4:
            name, args = _memo_call(n, step, rng, state["memo"], notes)
        else:
            # half the queries repeat a small set (an agent asking again), half are varied
            query = f"{rng.choice(TOPICS)} {rng.choice(DETAILS)}"
            if rng.random() < 0.5:
                query += f" variant {rng.randrange(89)}"
            name, args = "recall_memories", {"query": query}
        started = time.perf_counter()
        try:
            result = await client.call_tool(name, args)
        except Exception as exc:  # counted, then the loop goes on (bounded by deadline)
            _transport_error(tally, exc)
            await asyncio.sleep(0.2)
            continue
        elapsed = time.perf_counter() - started
        minute = tally.minute()
        minute.calls += 1
        text = text_of(result)
        if result.is_error:
            minute.tool_errors += 1
            key = f"{name}: {text[:80]}"
            tally.error_texts[key] = tally.error_texts.get(key, 0) + 1
        if name == "recall_memories":
            minute.recalls += 1
            minute.latencies.append(elapsed)
            tally.recall_answers += 1
            tally.cross_caller_items += cross_items(text, who)
        elif not result.is_error:
            state["memo"] = _memo_answer(n, name, args, text, state["memo"], notes, tally)


def _memo_call(
    n: int, step: int, rng: random.Random, memo: str | None, notes: dict[str, str]
) -> tuple[str, dict[str, Any]]:
    if memo is None or not notes or step % 15 == 4:
        args: dict[str, Any] = {"content": f"client {n} note {step}"}
        if memo is not None:
            args["memo"] = memo
        return "recallset_add", args
    item = rng.choice(sorted(notes))
    if step % 15 == 9:
        return "recallset_read", {"memo": memo, "id": item}
    if step % 30 == 14:
        return "recallset_overview", {"memo": memo}
    return "recallset_mark", {"memo": memo, "id": item, "mark": rng.choice(["keep", "check"])}


def _memo_answer(
    n: int,
    name: str,
    args: dict[str, Any],
    text: str,
    memo: str | None,
    notes: dict[str, str],
    tally: Tally,
) -> str | None:
    if name == "recallset_add":
        body = json.loads(text)
        notes[body["id"]] = args["content"]
        for gone in body.get("evicted", []):  # the memo's cap pushed these out
            notes.pop(gone, None)
        return str(body.get("memo")) if body.get("memo") else memo
    if name == "recallset_read":
        if not text.startswith(f"client {n} "):
            tally.cross_caller_notes += 1
        elif text != notes[args["id"]]:
            tally.memo_failures += 1
    if name == "recallset_overview":
        listed = {entry["id"] for entry in json.loads(text)}
        if listed != set(notes):
            tally.memo_failures += 1
    return memo


async def ingest_client(
    n: int, base: str, who: list[Caller], deadline: float, tally: Tally
) -> None:
    rng = random.Random(1000 + n)
    sent: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    async with httpx.AsyncClient(
        timeout=30, headers={"Authorization": f"Bearer {INGEST_KEY}"}
    ) as http:
        for step in itertools.count():
            if time.monotonic() >= deadline:
                return
            if step % 5 == 4 and sent:
                key, body, first = rng.choice(sent)
            else:
                owner = who[rng.randrange(len(who))]
                key = f"soak-{n}-{step}-{uuid.uuid4().hex[:8]}"
                body = {
                    "tenant": owner.tenant,
                    "scope": "user",
                    "scope_id": owner.user_id,
                    "kind": "fact",
                    "content": f"ingested {step} by {n}: {rng.choice(TOPICS)} "
                    f"[owner {owner.tenant}/{owner.user_id}]",
                }
                first = {}
            minute = tally.minute()
            minute.calls += 1
            try:
                response = await http.post(
                    f"{base}/v1/memories", json=body, headers={"Idempotency-Key": key}
                )
            except httpx.HTTPError as exc:
                minute.transport_errors += 1
                tally.error_texts[f"ingest: {type(exc).__name__}"] = (
                    tally.error_texts.get(f"ingest: {type(exc).__name__}", 0) + 1
                )
                await asyncio.sleep(0.2)
                continue
            if response.status_code != 201:
                minute.tool_errors += 1
                msg = f"ingest {response.status_code}: {response.text[:80]}"
                tally.error_texts[msg] = tally.error_texts.get(msg, 0) + 1
            elif first:
                same = response.json() == first
                replayed = response.headers.get("Idempotent-Replayed") == "true"
                if same and replayed:
                    tally.replays_ok += 1
                else:
                    tally.replays_wrong += 1
            else:
                payload = response.json()
                tally.ingests_acknowledged += [
                    (body["tenant"], m["id"]) for m in payload["memories"]
                ]
                sent.append((key, body, payload))
            await asyncio.sleep(0.05)


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a multi-worker server's workers), from /proc (Linux)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # ended meanwhile
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree = [pid]
    for each in tree:
        tree += [child for child, parent in parents.items() if parent == each]
    return tree


def proc_sample(pid: int) -> dict[str, float]:
    """RSS (MB), open fds and CPU seconds of a process and its descendants, from /proc."""
    rss_kb = fds = 0
    ticks = 0
    for each in process_tree(pid):
        try:
            status = Path(f"/proc/{each}/status").read_text()
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            fds += len(os.listdir(f"/proc/{each}/fd"))
        except OSError:  # ended meanwhile
            continue
        rss_kb += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
        ticks += int(fields[11]) + int(fields[12])
    return {"rss_mb": rss_kb / 1024, "fds": fds, "cpu_s": ticks / os.sysconf("SC_CLK_TCK")}


def db_connections(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        n = conn.execute(
            sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        ).scalar_one()
    return int(n) - 1  # not this probe


async def sampler(pid: int, engine: sa.Engine, deadline: float, tally: Tally) -> None:
    while time.monotonic() < deadline:
        sample = proc_sample(pid)
        sample["db_connections"] = await asyncio.to_thread(db_connections, engine)
        sample["t"] = time.monotonic() - tally.started
        tally.minute().samples.append(sample)
        await asyncio.sleep(min(5.0, max(0.0, deadline - time.monotonic())))


def start_server(
    url: str, tokens: Path, port: int, home: Path, src: Path | None
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "HARNESS_HOME": str(home),
        "HARNESS_MCP_TOKENS": str(tokens),
        "HARNESS_MCP_INGEST_KEY": INGEST_KEY,
    }
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(":")
    # The server's log goes to a file: an unread pipe fills after ~700 access-log lines and
    # then blocks the server's every write (it stalls, and cannot even stop).
    log_path = home / "server.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "mcp", "--http", f"127.0.0.1:{port}", "--url", url],
        env=env,
        cwd=src or Path.cwd(),
        stdout=subprocess.DEVNULL,
        stderr=log_path.open("wb"),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"server exited: {log_path.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("server did not start within 120 s")


def stop_server(server: subprocess.Popen[bytes]) -> float:
    started = time.perf_counter()
    server.send_signal(signal.SIGINT)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        return float("inf")
    return time.perf_counter() - started


def run_phase(
    label: str,
    args: argparse.Namespace,
    store: MemoryStore,
    users: list[Caller],
    tokens: dict[Caller, str],
    token_file: Path,
    src: Path | None,
) -> dict[str, Any]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    home = Path(tempfile.mkdtemp(prefix="soak-home-"))
    server = start_server(store.url, token_file, port, home, src)
    seconds = args.seconds if args.seconds else args.minutes * 60
    try:
        # warm-up: the first call loads the model and opens the pool; not measured
        asyncio.run(_warm(base, tokens[users[0]]))
        processes = len(process_tree(server.pid))
        tally = Tally(started=time.monotonic())
        deadline = tally.started + seconds
        cpu0 = proc_sample(server.pid)["cpu_s"]
        client0, busy0 = _self_cpu_s(), _machine_busy()
        engine = sa.create_engine(store.url, poolclass=sa.pool.NullPool)
        asyncio.run(_drive(args, base, users, tokens, server.pid, engine, deadline, tally))
        wall = time.monotonic() - tally.started
        cpu1 = proc_sample(server.pid)["cpu_s"]
        client_cpu, busy = _self_cpu_s() - client0, _machine_busy()
        engine.dispose()
    finally:
        exit_s = stop_server(server)
    stored = sum(1 for t, i in tally.ingests_acknowledged if store.get(i, tenant=t) is not None)
    report = _report(label, tally, wall, (cpu1 - cpu0) / wall, exit_s, stored)
    report["server_processes"] = processes
    report["server_cpu_ms_per_call"] = round((cpu1 - cpu0) * 1000 / max(report["calls"], 1), 1)
    report["load_generator_cpu_s_per_s"] = round(client_cpu / wall, 3)
    report["machine_busy_fraction"] = round((busy[0] - busy0[0]) / max(busy[1] - busy0[1], 1), 3)
    report["load_average_1min_at_end"] = os.getloadavg()[0]
    return report


def _self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _machine_busy() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot, from /proc/stat."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


async def _warm(base: str, token: str) -> None:
    """Not measured: the first calls load the model and open the pool of every worker (a
    multi-worker server spreads connections over its workers, so warm several at once)."""

    async def one() -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        ):
            for topic in TOPICS[:3]:
                await client.call_tool("recall_memories", {"query": topic})

    await asyncio.gather(*(one() for _ in range(8)))


async def _drive(
    args: argparse.Namespace,
    base: str,
    users: list[Caller],
    tokens: dict[Caller, str],
    pid: int,
    engine: sa.Engine,
    deadline: float,
    tally: Tally,
) -> None:
    tasks = [
        mcp_client(n, base, tokens[users[n % len(users)]], users[n % len(users)], deadline, tally)
        for n in range(args.clients)
    ]
    tasks += [ingest_client(n, base, users, deadline, tally) for n in range(args.ingest)]
    tasks.append(sampler(pid, engine, deadline, tally))
    await asyncio.gather(*tasks)


def _report(
    label: str, tally: Tally, wall: float, cpu_per_s: float, exit_s: float, stored: int
) -> dict[str, Any]:
    table = []
    all_latencies: list[float] = []
    for minute, m in sorted(tally.minutes.items()):
        all_latencies += m.latencies
        row: dict[str, Any] = {
            "minute": minute,
            "calls": m.calls,
            "recalls": m.recalls,
            "tool_errors": m.tool_errors,
            "transport_errors": m.transport_errors,
        }
        if m.latencies:
            row.update(percentiles(m.latencies))
        if m.samples:
            last = m.samples[-1]
            row.update(
                rss_mb=round(last["rss_mb"], 1),
                rss_mb_max=round(max(s["rss_mb"] for s in m.samples), 1),
                fds=int(last["fds"]),
                db_connections=int(max(s["db_connections"] for s in m.samples)),
            )
        table.append(row)
    samples = [s for m in tally.minutes.values() for s in m.samples]
    calls = sum(m.calls for m in tally.minutes.values())
    recalls = sum(m.recalls for m in tally.minutes.values())
    return {
        "label": label,
        "seconds": round(wall, 1),
        "calls": calls,
        "recall_calls": recalls,
        "recall_calls_per_s": round(recalls / wall, 2),
        "recall_latency": percentiles(all_latencies) if all_latencies else {},
        "tool_errors": sum(m.tool_errors for m in tally.minutes.values()),
        "transport_errors": sum(m.transport_errors for m in tally.minutes.values()),
        "error_texts": dict(sorted(tally.error_texts.items(), key=lambda kv: -kv[1])[:20]),
        "recall_answers_checked": tally.recall_answers,
        "cross_caller_items": tally.cross_caller_items,
        "cross_caller_notes": tally.cross_caller_notes,
        "memo_failures": tally.memo_failures,
        "ingests_acknowledged": len(tally.ingests_acknowledged),
        "ingests_stored": stored,
        "replays_ok": tally.replays_ok,
        "replays_wrong": tally.replays_wrong,
        "server_cpu_s_per_s": round(cpu_per_s, 3),
        "rss_mb_first": round(samples[0]["rss_mb"], 1) if samples else None,
        "rss_mb_last": round(samples[-1]["rss_mb"], 1) if samples else None,
        "rss_mb_median_last_minute": _last_minute_rss(tally),
        "exit_s": round(exit_s, 3),
        "per_minute": table,
        "latencies_s": all_latencies,  # for pooling across rounds; not written out
    }


def compare(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """Baseline against current, pooled over rounds: recall calls/s (all recalls over all
    seconds), latency percentiles of all recalls, and the ratio of each round on its own."""
    pooled: dict[str, dict[str, Any]] = {}
    for label in ("baseline", "current"):
        mine = [p for p in phases if p["label"].split("-")[0] == label]
        latencies = [x for p in mine for x in p["latencies_s"]]
        seconds = sum(p["seconds"] for p in mine)
        pooled[label] = {
            "recall_calls": sum(p["recall_calls"] for p in mine),
            "seconds": round(seconds, 1),
            "recall_calls_per_s": round(sum(p["recall_calls"] for p in mine) / seconds, 2),
            "recall_latency": percentiles(latencies) if latencies else {},
            "server_cpu_ms_per_call": [p["server_cpu_ms_per_call"] for p in mine],
            "exit_s": [p["exit_s"] for p in mine],
        }
    base, cur = pooled["baseline"], pooled["current"]
    rounds = list(
        zip(
            [p for p in phases if p["label"].startswith("baseline")],
            [p for p in phases if p["label"].startswith("current")],
            strict=True,
        )
    )
    return {
        **pooled,
        "recall_throughput_ratio": round(cur["recall_calls_per_s"] / base["recall_calls_per_s"], 2)
        if base["recall_calls_per_s"]
        else None,
        "per_round_ratio": [
            round(c["recall_calls_per_s"] / b["recall_calls_per_s"], 2)
            for b, c in rounds
            if b["recall_calls_per_s"]
        ],
    }


def _last_minute_rss(tally: Tally) -> float | None:
    sampled = [m for _, m in sorted(tally.minutes.items()) if m.samples]
    if not sampled:
        return None
    return round(statistics.median(s["rss_mb"] for s in sampled[-1].samples), 1)


def print_phase(result: dict[str, Any]) -> None:
    print(
        f"\n== {result['label']}: {result['recall_calls_per_s']} recall calls/s, "
        f"latency {result['recall_latency']}, server CPU {result['server_cpu_s_per_s']} s/s"
    )
    print("min  calls recalls err(tool/transport)  p50    p95    p99    rss_mb fds db")
    for r in result["per_minute"]:
        print(
            f"{r['minute']:>3} {r['calls']:>6} {r['recalls']:>7} "
            f"{r['tool_errors']:>6}/{r['transport_errors']:<6} "
            f"{r.get('p50_ms', 0):>6.0f} {r.get('p95_ms', 0):>6.0f} {r.get('p99_ms', 0):>6.0f} "
            f"{r.get('rss_mb', 0):>7.1f} {r.get('fds', 0):>3} {r.get('db_connections', 0):>3}"
        )
    print(
        f"cross-caller items {result['cross_caller_items']} in {result['recall_answers_checked']}"
        f" answers; cross-caller notes {result['cross_caller_notes']}; memo failures "
        f"{result['memo_failures']}; ingests {result['ingests_stored']}/"
        f"{result['ingests_acknowledged']} stored; replays ok {result['replays_ok']} wrong "
        f"{result['replays_wrong']}; exit {result['exit_s']} s"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--ingest", type=int, default=2, help="ingest clients")
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--smoke", action="store_true", help="a few seconds, 300 memories")
    parser.add_argument("--baseline-src", type=Path, help="older server code to run first")
    parser.add_argument("--label", default="", help="suffix of the result file name")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="with --baseline-src: alternate baseline and current phases this many times "
        "(each --minutes long), so a change in the machine's load hits both alike",
    )
    args = parser.parse_args(argv)
    args.seconds = 0.0
    if args.smoke:
        args.seconds, args.memories = 8.0, 300
        args.clients, args.ingest = min(args.clients, 3), min(args.ingest, 1)
    if not 1 <= args.clients <= 64 or not 0 <= args.ingest <= 8 or not 0 < args.minutes <= 120:
        raise SystemExit("--clients 1-64, --ingest 0-8, --minutes up to 120")
    embedder = CachedEmbedder.load()
    store = fresh_store(embedder, "harness_soak")
    users = [Caller(f"soak-t{t}", f"user{u}") for t in range(TENANTS) for u in range(4)]
    seed(store, embedder, args.memories, users)
    token_dir = Path(tempfile.mkdtemp(prefix="soak-tokens-"))
    token_file = TokenFile(token_dir / "tokens.json")
    tokens = {who: token_file.add(who) for who in users}
    phases = []
    for round_ in range(args.rounds):
        suffix = f"-{round_ + 1}" if args.rounds > 1 else ""
        if args.baseline_src is not None:
            phases.append(
                run_phase(
                    "baseline" + suffix,
                    args,
                    store,
                    users,
                    tokens,
                    token_file.path,
                    args.baseline_src,
                )
            )
            print_phase(phases[-1])
        phases.append(
            run_phase("current" + suffix, args, store, users, tokens, token_file.path, None)
        )
        print_phase(phases[-1])
    store.close()
    out = {
        "command": "python -m bench.soak " + " ".join(argv if argv is not None else sys.argv[1:]),
        "clients": args.clients,
        "ingest_clients": args.ingest,
        "memories": args.memories,
        "tenants": TENANTS,
        "cores": os.cpu_count(),
        "phases": phases,
    }
    if args.baseline_src is not None:
        out["comparison"] = compare(phases)
        print(json.dumps(out["comparison"], indent=2))
    for phase in phases:
        phase.pop("latencies_s")
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "soak" + (f"-{args.label}" if args.label else "") + ("-smoke" if args.smoke else "")
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")
    bad = sum(p["cross_caller_items"] + p["cross_caller_notes"] for p in phases)
    if bad:
        raise SystemExit(f"{bad} cross-caller items or notes seen")


if __name__ == "__main__":
    main()
