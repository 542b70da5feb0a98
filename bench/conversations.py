"""Conversation recall through the archive, beside today's memories-per-turn path, in one run.

``python -m bench.conversations [--smoke] [--latency-only] [--longmemeval PATH]`` writes
``bench/results/conversations.json`` (``bench/.work/smoke/conversations.json`` with ``--smoke``;
``conversations-latency.json`` with ``--latency-only``, the 10k-turn user alone).

LoCoMo (``../shared/data/locomo10.json``, CC BY-NC 4.0, read in place): each sample is one
user, each of its sessions one conversation posted with ``put_conversation`` (turn text
``"Speaker: text"``, the session's date as the turns' time, the dia id as the turn id); every
question is asked through ``recall_conversations`` (k=10, one neighbour either side). Reported
per split (dev: samples 0-4, test: 5-9): evidence-turn hit@k over the hit turns and over the
returned passages, answer-string presence in the passages, category-5 (adversarial)
abstention, p50/p95 per call. The same questions go through the memories-per-turn path
(``bench.locomo``'s memories, ``store.recall``) in the same run. The threshold a hit needs is
chosen on dev (the most abstention with passage hit@10 >= 0.85) and reported on test.

Latency: one user with 200 conversations of 50 turns (10k turns; LoCoMo texts reused, other
users' turns beside them), ``recall_conversations`` p50/p95 with query vectors cached and
with the model embedding each query; and re-posting an unchanged conversation (turns embedded).

LongMemEval (``--longmemeval PATH``, their JSON: ``haystack_sessions``, ``haystack_dates``,
``haystack_session_ids``, ``answer_session_ids``): answer-session hit@k through the archive.
``bench/data/longmemeval_fixture.json`` is a small file in that format made here.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import CachedEmbedder, fresh_store, percentiles
from bench.locomo import load as load_locomo
from bench.locomo import turns_of
from harness.memory import MemoryCandidate, MemoryStore, RecallRequest

RESULTS = Path(__file__).parent / "results"
SMOKE_RESULTS = Path(__file__).parent / ".work" / "smoke"
FIXTURE = Path(__file__).parent / "data" / "longmemeval_fixture.json"
TENANT = "locomo-archive"
MEM_TENANT = "locomo-memories"
KS = (1, 5, 10)
K = 10
NEIGHBOURS = 1
GRID = (0.0, 0.02, 0.05, 0.08, 0.1, 0.12, 0.15, 0.17, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
TARGET_HIT = 0.85


@dataclass
class Conv:
    """One conversation as posted: its user, id and turns, and each turn's evidence id."""

    user_id: str
    conversation_id: str
    turns: list[dict[str, Any]]
    dia: list[str] = field(default_factory=list)


def locomo_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def locomo_conversations(sample: dict[str, Any]) -> list[Conv]:
    conv = sample["conversation"]
    a = conv["speaker_a"]
    out: list[Conv] = []
    n = 1
    while f"session_{n}" in conv:
        start = locomo_date(conv[f"session_{n}_date_time"])
        c = Conv(sample["sample_id"], f"{sample['sample_id']}-s{n}", [])
        for seq, turn in enumerate(conv[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" (shared an image: {turn['blip_caption']})"
            c.turns.append(
                {
                    "seq": seq,
                    "ts": (start + timedelta(seconds=30 * seq)).isoformat(),
                    "role": "user" if turn["speaker"] == a else "assistant",
                    "text": text,
                    "turn_id": turn["dia_id"],
                }
            )
            c.dia.append(turn["dia_id"])
        out.append(c)
        n += 1
    return out


def longmemeval_conversations(instance: dict[str, Any]) -> list[Conv]:
    """One LongMemEval instance: one user, one conversation per haystack session."""
    user = "lme-" + "".join(ch if ch.isalnum() else "-" for ch in str(instance["question_id"]))
    out: list[Conv] = []
    for sid, date, session in zip(
        instance["haystack_session_ids"],
        instance["haystack_dates"],
        instance["haystack_sessions"],
        strict=True,
    ):
        start = datetime.strptime(date.split(" (")[0] + date.split(")")[-1], "%Y/%m/%d %H:%M")
        start = start.replace(tzinfo=UTC)
        cid = "".join(ch if ch.isalnum() or ch in "_-" else "-" for ch in str(sid))[:128]
        c = Conv(user, cid, [])
        for seq, turn in enumerate(session):
            c.turns.append(
                {
                    "seq": seq,
                    "ts": (start + timedelta(seconds=30 * seq)).isoformat(),
                    "role": turn["role"] if turn["role"] in ("user", "assistant") else "user",
                    "text": turn["content"][:20_000],
                }
            )
            c.dia.append(f"{sid}:{seq}:{'answer' if turn.get('has_answer') else ''}")
        out.append(c)
    return out


def post(store: MemoryStore, tenant: str, convs: Sequence[Conv]) -> tuple[float, int]:
    """Post every conversation; seconds taken and turns embedded."""
    start = time.perf_counter()
    embedded = 0
    for c in convs:
        r = store.put_conversation(
            tenant=tenant, user_id=c.user_id, conversation_id=c.conversation_id, turns=c.turns
        )
        embedded += r.embedded
    return time.perf_counter() - start, embedded


def _spread(items: list[Any], n: int | None) -> list[Any]:
    """``n`` items evenly spaced over ``items`` (all when None): every category appears."""
    if n is None or n >= len(items):
        return items
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


@dataclass
class Asked:
    """One question asked through the archive (threshold 0: the best hits with their judged
    probabilities, best first)."""

    category: int
    evidence: set[str]
    answer: str
    hits: list[tuple[float, str, int]]  # probability, conversation id, seq
    seconds: float


def ask_archive(store: MemoryStore, tenant: str, user: str, question: str) -> Asked:
    start = time.perf_counter()
    r = store.recall_conversations(
        tenant=tenant,
        user_id=user,
        query=question,
        k=K,
        neighbours=NEIGHBOURS,
        budget_chars=1_000_000,
        threshold=0.0,
    )
    took = time.perf_counter() - start
    hits = [(h.probability, h.conversation_id, h.seq) for h in r.hits]
    return Asked(0, set(), "", hits, took)


def scores(
    asked: Sequence[Asked], bar: float, by_conv: dict[str, Conv], neighbours: int = NEIGHBOURS
) -> dict[str, Any]:
    """Hit@k over the hit turns and over their passages (``neighbours`` either side), answer
    presence in the passages, and category-5 abstention, when the best hit needs ``bar``
    (the store's rule: below it nothing comes back, above it the best k)."""
    answerable = [a for a in asked if a.category in (1, 2, 3, 4)]
    adversarial = [a for a in asked if a.category == 5]

    def kept(a: Asked, k: int) -> list[tuple[float, str, int]]:
        # The store's gate: the best probability among the k it would return.
        top = a.hits[:k]
        return top if top and max(h[0] for h in top) >= bar else []

    def window(cid: str, seq: int) -> list[dict[str, Any]]:
        turns = by_conv[cid].turns
        return turns[max(0, seq - neighbours) : seq + neighbours + 1]

    out: dict[str, Any] = {"threshold": bar, "neighbours": neighbours}
    n = max(len(answerable), 1)
    for k in KS:
        turn_hits = passage_hits = 0
        for a in answerable:
            hits = kept(a, k)
            turn_hits += any(by_conv[c].dia[s] in a.evidence for _, c, s in hits)
            passage_hits += any(
                t["turn_id"] in a.evidence for _, c, s in hits for t in window(c, s)
            )
        out[f"turn_hit@{k}"] = round(turn_hits / n, 3)
        out[f"passage_hit@{k}"] = round(passage_hits / n, 3)
    present = 0
    for a in answerable:
        text = "\n".join(t["text"] for _, c, s in kept(a, K) for t in window(c, s)).lower()
        present += bool(a.answer) and a.answer.lower() in text
    out["answer_in_passages@10"] = round(present / n, 3)
    out["cat5_abstention"] = round(
        sum(not kept(a, K) for a in adversarial) / max(len(adversarial), 1), 3
    )
    out["answerable_nothing_returned"] = round(sum(not kept(a, K) for a in answerable) / n, 3)
    out["questions"] = len(answerable)
    out["adversarial"] = len(adversarial)
    return out


def choose(asked: Sequence[Asked], by_conv: dict[str, Conv]) -> float:
    """The dev threshold: the most passage hit@10 plus category-5 abstention (both goals
    count; the first bar reaching the best sum)."""

    def value(bar: float) -> float:
        s = scores(asked, bar, by_conv)
        return float(s["passage_hit@10"] + s["cat5_abstention"])

    return max(GRID, key=lambda bar: (value(bar), -bar))


def ask_all(
    store: MemoryStore, questions: list[tuple[dict[str, Any], dict[str, Any]]]
) -> list[Asked]:
    out = []
    for sample, q in questions:
        asked = ask_archive(store, TENANT, sample["sample_id"], q["question"])
        asked.category = q["category"]
        asked.evidence = set(q["evidence"])
        asked.answer = str(q.get("answer", q.get("adversarial_answer", "")))
        out.append(asked)
    return out


def run_locomo(
    store: MemoryStore, emb: CachedEmbedder, data: list[dict[str, Any]], max_questions: int | None
) -> dict[str, Any]:
    convs = {s["sample_id"]: locomo_conversations(s) for s in data}
    emb.warm([t["text"] for cs in convs.values() for c in cs for t in c.turns], "conv-turns")
    questions = _spread([(s, q) for s in data for q in s["qa"] if q["evidence"]], max_questions)
    emb.warm_queries([q["question"] for _, q in questions], "conv-questions")
    post_s, embedded = post(store, TENANT, [c for cs in convs.values() for c in cs])
    by_conv = {c.conversation_id: c for cs in convs.values() for c in cs}
    dev_ids = {s["sample_id"] for n, s in enumerate(data) if n < 5}
    judged = ask_all(store, questions)
    split = {
        "dev": [n for n, (s, _) in enumerate(questions) if s["sample_id"] in dev_ids],
        "test": [n for n, (s, _) in enumerate(questions) if s["sample_id"] not in dev_ids],
    }
    dev = [judged[n] for n in split["dev"]] or judged
    chosen = choose(dev, by_conv)
    default_bar = store.retriever.ranking.bar(lexical_only=False)
    result: dict[str, Any] = {
        "posted_turns": sum(len(c.turns) for c in by_conv.values()),
        "post_seconds": round(post_s, 2),
        "embedded": embedded,
        "chosen_threshold_on_dev": chosen,
        "memory_judge_threshold": default_bar,
        "latency": percentiles([a.seconds for a in judged]),
    }
    for name, rows in split.items():
        if not rows:
            continue
        part = [judged[n] for n in rows]
        result[name] = {
            "chosen": scores(part, chosen, by_conv),
            "chosen_neighbours_2": scores(part, chosen, by_conv, 2),
            "memory_judge_threshold": scores(part, default_bar, by_conv),
            "unjudged": scores(part, 0.0, by_conv),
            "unjudged_neighbours_2": scores(part, 0.0, by_conv, 2),
        }
    result["sweep_dev"] = [scores(dev, bar, by_conv) for bar in GRID]
    return result


def run_memories(
    store: MemoryStore, emb: CachedEmbedder, data: list[dict[str, Any]], max_questions: int | None
) -> dict[str, Any]:
    """Today's path: one memory per turn (bench.locomo's texts), asked with ``store.recall``."""
    dia_of: dict[Any, str] = {}
    all_turns = {s["sample_id"]: turns_of(s) for s in data}
    emb.warm([t for ts in all_turns.values() for _, t, _ in ts], "locomo-turns")
    for sample_id, turns in all_turns.items():
        written = store.write_many(
            [
                MemoryCandidate(
                    tenant=MEM_TENANT,
                    scope="user",
                    scope_id=sample_id,
                    kind="fact",
                    content=text,
                    context=prev or None,
                )
                for _, text, prev in turns
            ]
        )
        for m, (dia, _, _) in zip(written, turns, strict=True):
            dia_of[m.id] = dia
    questions = _spread([(s, q) for s in data for q in s["qa"] if q["evidence"]], max_questions)
    out: dict[str, Any] = {}
    split_of = {s["sample_id"]: ("dev" if n < 5 else "test") for n, s in enumerate(data)}
    per: dict[str, list[tuple[int, set[str], list[str]]]] = {"dev": [], "test": []}
    seconds: list[float] = []
    for sample, q in questions:
        start = time.perf_counter()
        r = store.recall(
            RecallRequest(
                tenant=MEM_TENANT,
                user_id=sample["sample_id"],
                query=q["question"],
                budget_chars=1_000_000,
                max_items=K,
                max_item_chars=100_000,
            )
        )
        seconds.append(time.perf_counter() - start)
        ranked = [dia_of[i.memory.id] for i in sorted(r.items, key=lambda i: -i.relevance)]
        per[split_of[sample["sample_id"]]].append((q["category"], set(q["evidence"]), ranked))
    for name, rows in per.items():
        answerable = [r for r in rows if r[0] in (1, 2, 3, 4)]
        adversarial = [r for r in rows if r[0] == 5]
        if not rows:
            continue
        out[name] = {
            **{
                f"turn_hit@{k}": round(
                    sum(bool(e & set(rk[:k])) for _, e, rk in answerable) / max(len(answerable), 1),
                    3,
                )
                for k in KS
            },
            "cat5_abstention": round(
                sum(not rk for _, _, rk in adversarial) / max(len(adversarial), 1), 3
            ),
        }
    out["latency"] = percentiles(seconds)
    return out


def run_latency(
    store: MemoryStore, emb: CachedEmbedder, texts: list[str], n_convs: int
) -> dict[str, Any]:
    """One user with ``n_convs`` conversations of 50 turns, beside the LoCoMo users."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    convs = []
    for c in range(n_convs):
        turns = [
            {
                "seq": s,
                "ts": (t0 + timedelta(days=c, seconds=30 * s)).isoformat(),
                "role": "user" if s % 2 == 0 else "assistant",
                "text": texts[(c * 50 + s) % len(texts)],
            }
            for s in range(50)
        ]
        convs.append(Conv("heavy", f"heavy-{c:04d}", turns))
    post_s, _ = post(store, "latency", convs)
    repost_s, re_embedded = post(store, "latency", convs[:1])
    first_s = post_s / max(len(convs), 1)
    queries = ["N-11 upgrade decision", "what did we decide about the budget", "K-2 machine ticket"]
    queries += [t[:60] for t in texts[:: max(1, len(texts) // 100)]][:100]
    emb.warm_queries(queries, "conv-latency")
    cached: list[float] = []
    for q in queries:
        start = time.perf_counter()
        store.recall_conversations(tenant="latency", user_id="heavy", query=q, k=3)
        cached.append(time.perf_counter() - start)
    # With the model: queries worded anew, so no cache holds their vectors.
    fresh: list[float] = []
    for q in queries[:50]:
        start = time.perf_counter()
        store.recall_conversations(tenant="latency", user_id="heavy", query=q + " ?", k=3)
        fresh.append(time.perf_counter() - start)
    return {
        "conversations": n_convs,
        "turns": n_convs * 50,
        "post_seconds": round(post_s, 2),
        "first_post_ms_per_conversation": round(first_s * 1000, 2),
        "repost_unchanged_ms": round(repost_s * 1000, 2),
        "repost_unchanged_embedded": re_embedded,
        "recall_query_vector_cached": percentiles(cached),
        "recall_with_model": percentiles(fresh),
        "note": "measured on a shared 2-core machine (other helpers' work alongside)",
    }


def run_longmemeval(store: MemoryStore, path: Path) -> dict[str, Any]:
    """Answer-session hit@k and answer presence through the archive."""
    data = json.loads(path.read_text(encoding="utf-8"))
    hits = {k: 0 for k in KS}
    present = 0
    seconds = []
    for inst in data:
        convs = longmemeval_conversations(inst)
        post(store, "longmemeval", convs)
        by_conv = {c.conversation_id: c for c in convs}
        answer_ids = {
            "".join(ch if ch.isalnum() or ch in "_-" else "-" for ch in str(s))[:128]
            for s in inst["answer_session_ids"]
        }
        start = time.perf_counter()
        r = store.recall_conversations(
            tenant="longmemeval",
            user_id=convs[0].user_id,
            query=inst["question"],
            k=K,
            budget_chars=1_000_000,
            threshold=0.0,
        )
        seconds.append(time.perf_counter() - start)
        order = [h.conversation_id for h in r.hits]
        for k in KS:
            hits[k] += bool(answer_ids & set(order[:k]))
        text = "\n".join(
            t["text"] for h in r.hits for t in by_conv[h.conversation_id].turns
        ).lower()
        present += str(inst["answer"]).lower() in text
    n = max(len(data), 1)
    return {
        "file": str(path),
        "questions": len(data),
        **{f"session_hit@{k}": round(v / n, 3) for k, v in hits.items()},
        "answer_in_passages@10": round(present / n, 3),
        "latency": percentiles(seconds) if seconds else {},
    }


def main(argv: Sequence[str]) -> dict[str, Any]:
    smoke = "--smoke" in argv
    latency_only = "--latency-only" in argv
    lme = Path(argv[argv.index("--longmemeval") + 1]) if "--longmemeval" in argv else FIXTURE
    data = load_locomo()[: 1 if smoke else None]
    emb = CachedEmbedder.load()
    store = fresh_store(emb, "bench_conversations")
    started = time.perf_counter()
    try:
        result: dict[str, Any] = {"smoke": smoke, "k": K, "neighbours": NEIGHBOURS}
        max_q = 40 if smoke else None
        texts = [t["text"] for s in data for c in locomo_conversations(s) for t in c.turns]
        if latency_only:
            emb.warm(texts, "conv-turns")
            result["latency_user"] = run_latency(store, emb, texts, 20 if smoke else 200)
        else:
            result["archive"] = run_locomo(store, emb, data, max_q)
            result["memories_per_turn"] = run_memories(store, emb, data, max_q)
            result["latency_user"] = run_latency(store, emb, texts, 20 if smoke else 200)
            result["longmemeval"] = run_longmemeval(store, lme)
        result["seconds"] = round(time.perf_counter() - started, 1)
    finally:
        store.close()
    # a smoke run writes into the git-ignored smoke folder, never over tracked results
    folder = SMOKE_RESULTS if smoke else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    name = "conversations-latency" if latency_only else "conversations"
    out = folder / f"{name}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "archive"}, indent=2))
    if "archive" in result:
        archive = {k: v for k, v in result["archive"].items() if k != "sweep_dev"}
        print(json.dumps(archive, indent=2))
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
