"""The relevance judge's datasets, each with a dev and a test split, and their recall signals.

    python -m bench.judge_data            # build every set, collect signals -> bench/.work/judge/
    python -m bench.judge_data --smoke    # small versions (CI smoke run)

Three kinds of data, all stored through the public API and read back through the same
relevance query recall runs:

- ``lessons``: 94 hand-written lessons (``bench/data/lessons.json``), each written exactly as the
  engine writes one (a reviewer's feedback, the task that taught it as context, user scope),
  among 1,000 generated facts of the same user; each lesson's later task (worded differently)
  must bring it back, and 48 unrelated tasks must bring back nothing.
- ``facts1k`` / ``facts10k``: the generated history with asset ids (``bench/synthetic.py``,
  ``tags=True``): paraphrased and id-only questions with one right fact, and negative controls
  (unrelated, and never-stored attributes of stored machines).
- ``locomo``: LoCoMo's ten conversations, one memory per turn with the previous turn as context;
  categories 1-4 are positives (their evidence turns are relevant), category 5 (adversarial) are
  questions whose evidence should not be presented as an answer (every candidate negative).

Splits are seeded: lessons and unrelated tasks by a shuffle, facts by question parity, LoCoMo by
conversation (even dev, odd test). Tune on dev only.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import locomo
from bench.common import WORK, CachedEmbedder, fresh_store, settle
from bench.synthetic import generate
from harness.memory import MemoryCandidate, MemoryStore, RecallRequest
from harness.memory.domain.lessons import lesson_candidate
from harness.memory.domain.ranking import Scored

DATA = Path(__file__).parent / "data"
OUT = WORK / "judge"
TENANT = "judge"
USER = "u"


@dataclass
class Query:
    """One query: its split, the ids that are relevant (empty for a negative), its signals."""

    dataset: str
    split: str
    text: str
    relevant: set[Any]
    kind: str  # "positive" | "negative"
    user: str = USER
    rows: list[Scored] = field(default_factory=list)
    lexical_rows: list[Scored] = field(default_factory=list)


def _collect(store: MemoryStore, queries: list[Query]) -> None:
    for q in queries:
        req = RecallRequest(tenant=TENANT, user_id=q.user, query=q.text)
        q.rows, _ = store.signals(req)
        q.lexical_rows, _ = store.signals(req, use_vector=False)


def _load_facts(store: MemoryStore, facts: list[str], user: str = USER) -> list[Any]:
    ids: list[Any] = []
    for i in range(0, len(facts), 1000):
        batch = [
            MemoryCandidate(tenant=TENANT, scope="user", scope_id=user, kind="fact", content=f)
            for f in facts[i : i + 1000]
        ]
        ids += [m.id for m in store.write_many(batch)]
    return ids


def _split_of(n: int, seed: int) -> set[int]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return set(order[: n // 2])


def lessons(emb: CachedEmbedder, n_facts: int = 1000) -> list[Query]:
    data = json.loads((DATA / "lessons.json").read_text(encoding="utf-8"))
    items, unrelated, workplace = data["lessons"], data["unrelated"], data["workplace"]
    dev_workplace = _split_of(len(workplace), 13)
    order = list(range(len(items)))
    random.Random(11).shuffle(order)
    dev_lessons = set(order[: len(order) // 2])
    u_order = list(range(len(unrelated)))
    random.Random(12).shuffle(u_order)
    dev_unrelated = set(u_order[: len(u_order) // 2])
    facts = generate(n_facts, 1, 1, seed=4242).facts
    emb.warm(facts, f"judge-lessons-facts{n_facts}")
    store = fresh_store(emb, "bench_judge_lessons")
    try:
        _load_facts(store, facts)
        written = store.write_many(
            [
                lesson_candidate(
                    tenant=TENANT,
                    user_id=USER,
                    workflow_id=None,
                    feedback=it["feedback"],
                    task_input=it["task"],
                    run_id=f"run-{i}",
                    verdict_id=f"verdict-{i}",
                )
                for i, it in enumerate(items)
            ]
        )
        settle(store)
        queries = (
            [
                Query(
                    "lessons",
                    "dev" if i in dev_lessons else "test",
                    it["later"],
                    {written[i].id},
                    "positive",
                )
                for i, it in enumerate(items)
            ]
            + [
                Query("lessons", "dev" if i in dev_unrelated else "test", text, set(), "negative")
                for i, text in enumerate(unrelated)
            ]
            + [
                # Same-domain tasks no lesson applies to: what a lesson offset once flooded.
                Query("workplace", "dev" if i in dev_workplace else "test", text, set(), "negative")
                for i, text in enumerate(workplace)
            ]
        )
        _collect(store, queries)
        return queries
    finally:
        store.close()


def lesson_facts(emb: CachedEmbedder, n_facts: int = 300) -> list[Query]:
    """Fact questions (half by asset id only) among many lessons of the same user: every
    lesson of ``lessons.json`` and every wording of every rule of ``stream.json`` (286), each
    written as the engine writes one, beside ``n_facts`` generated facts."""
    data = json.loads((DATA / "lessons.json").read_text(encoding="utf-8"))
    stream = json.loads((DATA / "stream.json").read_text(encoding="utf-8"))
    taught = [(it["feedback"], it["task"]) for it in data["lessons"]] + [
        (wording, rule["tasks"][k % len(rule["tasks"])])
        for rule in stream["rules"]
        for k, wording in enumerate(rule["feedback"])
    ]
    ds = generate(n_facts, 80, 40, seed=777, tags=True)
    emb.warm(ds.facts, f"judge-lessonfacts{n_facts}")
    store = fresh_store(emb, "bench_judge_lessonfacts")
    try:
        ids = _load_facts(store, ds.facts)
        store.write_many(
            [
                lesson_candidate(
                    tenant=TENANT,
                    user_id=USER,
                    workflow_id=None,
                    feedback=feedback,
                    task_input=task,
                    run_id=f"run-{i}",
                    verdict_id=f"verdict-{i}",
                )
                for i, (feedback, task) in enumerate(taught)
            ]
        )
        settle(store)
        queries = [
            Query(
                "lessonfacts", "dev" if j % 2 == 0 else "test", q.text, {ids[q.answer]}, "positive"
            )
            for j, q in enumerate(ds.questions)
            if q.answer is not None
        ] + [
            Query("lessonfacts", _negative_split(j), q.text, set(), "negative")
            for j, q in enumerate(ds.negatives)
        ]
        _collect(store, queries)
        return queries
    finally:
        store.close()


def _negative_split(j: int) -> str:
    return "dev" if (j // 2) % 2 == 0 else "test"


def facts(
    emb: CachedEmbedder, n: int, n_questions: int = 200, n_negatives: int = 80
) -> list[Query]:
    ds = generate(n, n_questions, n_negatives, seed=n + 1, tags=True)
    emb.warm(ds.facts, f"judge-facts{n}")
    store = fresh_store(emb, f"bench_judge_facts_{n}")
    name = f"facts{n // 1000}k"
    try:
        ids = _load_facts(store, ds.facts)
        settle(store)
        queries = [
            Query(name, "dev" if j % 2 == 0 else "test", q.text, {ids[q.answer]}, "positive")
            for j, q in enumerate(ds.questions)
            if q.answer is not None
        ] + [
            # Negatives alternate unrelated / never-stored attribute: split every other pair.
            Query(name, _negative_split(j), q.text, set(), "negative")
            for j, q in enumerate(ds.negatives)
        ]
        _collect(store, queries)
        return queries
    finally:
        store.close()


def locomo_set(emb: CachedEmbedder, limit: int | None = None) -> list[Query]:
    data = locomo.load()[:limit]
    turns = {s["sample_id"]: locomo.turns_of(s) for s in data}
    emb.warm([t for ts in turns.values() for _, t, _ in ts], "locomo-turns")
    store = fresh_store(emb, "bench_judge_locomo")
    try:
        queries: list[Query] = []
        for n, sample in enumerate(data):
            sid = sample["sample_id"]
            written = store.write_many(
                [
                    MemoryCandidate(
                        tenant=TENANT,
                        scope="user",
                        scope_id=sid,
                        kind="fact",
                        content=text,
                        context=prev or None,
                    )
                    for _, text, prev in turns[sid]
                ]
            )
            by_dia = {dia: m.id for m, (dia, _, _) in zip(written, turns[sid], strict=True)}
            split = "dev" if n % 2 == 0 else "test"
            for qa in sample["qa"]:
                if not qa.get("evidence"):
                    continue
                evidence = {by_dia[d] for d in qa["evidence"] if d in by_dia}
                if qa["category"] in (1, 2, 3, 4):
                    queries.append(
                        Query("locomo", split, qa["question"], evidence, "positive", user=sid)
                    )
                elif qa["category"] == 5:
                    q = Query("locomo", split, qa["question"], set(), "negative", user=sid)
                    q.relevant = set()
                    queries.append(q)
        settle(store)
        emb.warm_queries([q.text for q in queries], "locomo-questions-all")
        _collect(store, queries)
        return queries
    finally:
        store.close()


def build(smoke: bool = False) -> dict[str, list[Query]]:
    emb = CachedEmbedder.load()
    sets: dict[str, list[Query]] = {}
    sets["lessons"] = lessons(emb, n_facts=1000)
    print(f"lessons: {len(sets['lessons'])} queries", flush=True)
    sets["lessonfacts"] = lesson_facts(emb)
    print(f"lessonfacts: {len(sets['lessonfacts'])} queries", flush=True)
    for n in (1000,) if smoke else (1000, 10_000):
        key = f"facts{n // 1000}k"
        sets[key] = facts(emb, n, n_questions=60 if smoke else 200, n_negatives=20 if smoke else 80)
        print(f"{key}: {len(sets[key])} queries", flush=True)
    sets["locomo"] = locomo_set(emb, limit=2 if smoke else None)
    print(f"locomo: {len(sets['locomo'])} queries", flush=True)
    return sets


def save(sets: dict[str, list[Query]], name: str = "signals.pkl") -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / name
    path.write_bytes(pickle.dumps(sets))
    return path


def load(name: str = "signals.pkl") -> dict[str, list[Query]]:
    sets: dict[str, list[Query]] = pickle.loads((OUT / name).read_bytes())  # noqa: S301
    return sets


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    # Through the module, not __main__, so the pickled Query class can be loaded elsewhere.
    from bench import judge_data

    sets = judge_data.build(args.smoke)
    print(judge_data.save(sets, "signals-smoke.pkl" if args.smoke else "signals.pkl"))
