"""Lift and harm of memory on a task stream: the real Engine and store, a literal-minded model
and a judge with hidden rules.

    python -m bench.stream run              # dev and test streams, every policy -> stream.json/png
    python -m bench.stream run --smoke      # a short dev stream (the tests run it too), into
                                            # the ignored bench/.work/smoke/
    python -m bench.stream fit              # fit learning's cosine thresholds on dev

The stream (``bench/data/stream.json``, hand-written, split dev/test by rule): hidden rules at
user and workflow level, each with feedback in four wordings and six later tasks worded
differently; clean tasks (plainly unrelated and same-domain); tasks where a workflow's rule is
wrong (conflicts). The model applies every rule whose lesson (or feedback) it reads; the judge
rejects an answer that misses its task's rule (feedback: the next wording of that rule) or
applies a rule that is wrong for it (feedback saying it does not apply). Policies side by side
on the same stream, each in its own tenant: no memory, naive top-8 (no relevance threshold),
and this project. Deterministic (seeded order, fixed model and judge).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

from bench.common import RESULTS, WORK, CachedEmbedder, all_tenants, fresh_store, reconnect
from harness.memory import MemoryStore, RecallConfig
from harness.memory.domain.learning import LearningConfig
from harness.memory.domain.ranking import RankingConfig
from harness.run.engine import Engine, EngineConfig, RunInput, Verdict

DATA = Path(__file__).parent / "data" / "stream.json"
LESSON_PREFIX = "A reviewer rejected an earlier answer: "
POLICIES = ("no memory", "naive top-8", "harness")
_APPLIED = re.compile(r"applied: (.*)$")


@dataclass(frozen=True)
class Rule:
    id: str
    level: str
    owner: str
    check: str
    feedback: tuple[str, ...]
    tasks: tuple[str, ...]


@dataclass(frozen=True)
class Task:
    """One run of the stream: who, where, what, and which rule it needs or forbids."""

    index: int
    text: str
    user: str
    workflow: str | None
    kind: str  # "rule" | "unrelated" | "same-domain" | "conflict"
    rule: str | None = None
    forbidden: str | None = None
    conflict_feedback: str | None = None


@dataclass
class Stream:
    rules: dict[str, Rule]
    tasks: list[Task]


def load_stream(split: str, *, smoke: bool = False, seed: int = 5) -> Stream:
    """The stream of one split, in a seeded order: every conflict comes after two tasks of
    its rule (the rule was taught before it can be wrong)."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    rules = {
        r["id"]: Rule(
            r["id"], r["level"], r["owner"], r["check"], tuple(r["feedback"]), tuple(r["tasks"])
        )
        for r in data["rules"]
        if r["split"] == split
    }
    users = sorted({r.owner for r in rules.values() if r.level == "user"})
    rnd = random.Random(seed)
    chosen = list(rules.values())
    if smoke:
        chosen = [r for r in chosen if r.level == "user"][:4] + [
            r for r in chosen if r.level == "workflow"
        ][:2]
        rules = {r.id: r for r in chosen}
    items: list[dict[str, Any]] = []
    for rule in chosen:
        for k, text in enumerate(rule.tasks[: 4 if smoke else None]):
            user = rule.owner if rule.level == "user" else users[(k + len(items)) % len(users)]
            items.append(
                {
                    "text": text,
                    "user": user,
                    "workflow": rule.owner if rule.level == "workflow" else None,
                    "kind": "rule",
                    "rule": rule.id,
                }
            )
    clean = [c for c in data["clean"] if c["split"] == split][: 12 if smoke else None]
    items += [
        {"text": c["text"], "user": c["user"], "workflow": c["workflow"], "kind": c["kind"]}
        for c in clean
    ]
    rnd.shuffle(items)
    conflicts = [c for c in data["conflicts"] if c["split"] == split and c["rule"] in rules]
    for c in conflicts:
        # After the second task of its rule.
        seen = [i for i, it in enumerate(items) if it.get("rule") == c["rule"]]
        at = seen[1] + 1 if len(seen) > 1 else len(items)
        at = rnd.randint(at, len(items))
        items.insert(
            at,
            {
                "text": c["text"],
                "user": c["user"],
                "workflow": c["workflow"],
                "kind": "conflict",
                "forbidden": c["rule"],
                "conflict_feedback": c["feedback"],
            },
        )
    tasks = [Task(index=i, **it) for i, it in enumerate(items)]
    return Stream(rules, tasks)


class LiteralModel:
    """Applies every rule whose wording it reads (in a recalled lesson or in feedback), and
    drops a rule a reviewer said does not apply. Answers ``applied: <rule ids>``."""

    def __init__(self, stream: Stream, conflict_feedback: dict[str, str]):
        self.wordings = [(w, r.id) for r in stream.rules.values() for w in r.feedback]
        self.conflict_feedback = conflict_feedback

    def rules_in(self, text: str) -> set[str]:
        return {rule for wording, rule in self.wordings if wording in text}

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        applied: set[str] = set()
        for message in messages:
            content = str(message.get("content") or "")
            if message["role"] == "assistant":
                continue
            applied |= self.rules_in(content)
            for feedback, rule in self.conflict_feedback.items():
                if feedback in content:
                    applied.discard(rule)
        return "applied: " + ",".join(sorted(applied))


class StreamJudge:
    """Rejects a missed rule (the rule's next wording, so paraphrases recur) or a misapplied
    one (the conflict's "does not apply" feedback); accepts otherwise. ``keyed``: the judge
    names its check (``Verdict.key``)."""

    def __init__(self, stream: Stream, keyed: bool):
        self.stream = stream
        self.keyed = keyed
        self.task: Task | None = None
        self.taught: dict[str, int] = {}

    def __call__(self, input: str, output: str) -> Verdict:
        task = self.task
        assert task is not None and task.text == input
        match = _APPLIED.search(output)
        applied = set(filter(None, match.group(1).split(","))) if match else set()
        if task.rule is not None and task.rule not in applied:
            rule = self.stream.rules[task.rule]
            n = self.taught.get(rule.id, 0)
            self.taught[rule.id] = n + 1
            return Verdict(
                accepted=False,
                feedback=rule.feedback[n % len(rule.feedback)],
                key=rule.check if self.keyed else None,
            )
        if task.forbidden is not None and task.forbidden in applied:
            rule = self.stream.rules[task.forbidden]
            return Verdict(
                accepted=False,
                feedback=task.conflict_feedback,
                key=rule.check if self.keyed else None,
            )
        return Verdict(accepted=True)


@dataclass
class RunRecord:
    index: int
    kind: str
    rule: str | None
    first_accepted: bool
    reached: bool | None
    taught_before: int
    lesson_items: int
    lesson_chars: int


@dataclass
class PolicyResult:
    name: str
    runs: list[RunRecord] = field(default_factory=list)
    lessons_per_rule: dict[str, int] = field(default_factory=dict)


def run_policy(
    name: str, stream: Stream, store: MemoryStore, tenant: str, *, keyed: bool
) -> PolicyResult:
    conflict_feedback = {
        t.conflict_feedback: t.forbidden
        for t in stream.tasks
        if t.conflict_feedback and t.forbidden
    }
    model = LiteralModel(stream, conflict_feedback)  # type: ignore[arg-type]
    judge = StreamJudge(stream, keyed)
    config = EngineConfig(budget_chars=0, max_items=0) if name == "no memory" else EngineConfig()
    engine = Engine(model, judge, store, config=config)
    out = PolicyResult(name)
    for task in stream.tasks:
        judge.task = task
        taught_before = judge.taught.get(task.rule, 0) if task.rule else 0
        outcome = engine.run(
            RunInput(tenant=tenant, user_id=task.user, workflow_id=task.workflow, input=task.text)
        )
        recall = outcome.recall
        lessons = [i for i in (recall.items if recall else []) if i.memory.kind.value == "lesson"]
        in_block = model.rules_in(recall.text if recall else "")
        out.runs.append(
            RunRecord(
                index=task.index,
                kind=task.kind,
                rule=task.rule,
                first_accepted=outcome.verdicts[0].accepted,
                reached=(task.rule in in_block) if task.rule else None,
                taught_before=taught_before,
                lesson_items=len(lessons),
                lesson_chars=sum(len(i.text) for i in lessons),
            )
        )
    out.lessons_per_rule = _lessons_per_rule(store, tenant, stream, model)
    return out


def _lessons_per_rule(
    store: MemoryStore, tenant: str, stream: Stream, model: LiteralModel
) -> dict[str, int]:
    with all_tenants(store) as conn:
        contents = conn.execute(
            sa.text(
                "SELECT content FROM memories WHERE tenant = :t AND kind = 'lesson' "
                "AND status = 'active'"
            ),
            {"t": tenant},
        ).scalars()
        counts = dict.fromkeys(stream.rules, 0)
        for content in contents:
            for rule in model.rules_in(content):
                counts[rule] += 1
    return counts


def summarise(results: Sequence[PolicyResult]) -> dict[str, Any]:
    """The figures of each policy, harm against the no-memory policy of the same stream."""
    base = {r.index: r for r in results[0].runs}
    out: dict[str, Any] = {}
    for res in results:
        runs = res.runs
        half = len(runs) // 2
        rej = [not r.first_accepted for r in runs]
        rule_runs = [r for r in runs if r.rule is not None]
        reach1 = [r.reached for r in rule_runs if r.taught_before >= 1]
        reach2 = [r.reached for r in rule_runs if r.taught_before >= 2]
        clean = [r for r in runs if r.kind in ("unrelated", "same-domain")]
        harm = [r for r in runs if base[r.index].first_accepted and not r.first_accepted]
        taught_rules = [n for n in res.lessons_per_rule.values() if n > 0]
        out[res.name] = {
            "runs": len(runs),
            "first_attempt_rejections": _rate(rej),
            "second_half_rejections": _rate(rej[half:]),
            "reach_taught_once": _rate(reach1),
            "reach_taught_twice": _rate(reach2),
            "clean_given_a_lesson": _rate([r.lesson_items > 0 for r in clean]),
            "clean_given_a_lesson_same_domain": _rate(
                [r.lesson_items > 0 for r in clean if r.kind == "same-domain"]
            ),
            "clean_lesson_chars_mean": round(
                statistics.fmean([r.lesson_chars for r in clean]) if clean else 0.0, 1
            ),
            "harm_runs": len(harm),
            "harm_rate": round(len(harm) / max(len(runs), 1), 4),
            "conflicts_rejected": _rate(
                [not r.first_accepted for r in runs if r.kind == "conflict"]
            ),
            "lessons_per_taught_rule": round(statistics.fmean(taught_rules), 2)
            if taught_rules
            else 0.0,
            "rules_with_more_than_one_lesson": sum(n > 1 for n in taught_rules),
            "curve": _curve(rej),
        }
    none = out[results[0].name]
    for res in results[1:]:
        got = out[res.name]
        got["second_half_vs_no_memory"] = round(
            got["second_half_rejections"] / max(none["second_half_rejections"], 1e-9), 3
        )
        got["lift"] = round(none["first_attempt_rejections"] - got["first_attempt_rejections"], 3)
    return out


def _rate(values: Sequence[bool | None]) -> float:
    vals = [bool(v) for v in values if v is not None]
    return round(sum(vals) / len(vals), 3) if vals else 0.0


def _curve(rejections: Sequence[bool], window: int = 24) -> list[float]:
    arr = np.asarray(rejections, dtype=float)
    return [round(float(arr[max(0, i - window + 1) : i + 1].mean()), 3) for i in range(len(arr))]


def run_split(
    split: str,
    emb: CachedEmbedder,
    *,
    smoke: bool,
    keyed: bool,
    learning: LearningConfig,
    stand_out: float | None = RankingConfig().stand_out,
) -> dict[str, Any]:
    stream = load_stream(split, smoke=smoke)
    emb.warm(
        [t.text for t in stream.tasks]
        + [LESSON_PREFIX + w for r in stream.rules.values() for w in r.feedback]
        + [t.conflict_feedback for t in stream.tasks if t.conflict_feedback],
        f"stream-{split}-{'smoke' if smoke else 'full'}",
    )
    ranking = RankingConfig(stand_out=stand_out)
    store = fresh_store(
        emb, f"bench_stream_{split}", recall=RecallConfig(ranking=ranking, learning=learning)
    )
    naive = reconnect(
        store,
        RecallConfig(ranking=RankingConfig(threshold=0.0), learning=learning),
    )
    try:
        results = [
            run_policy("no memory", stream, store, f"{split}-none", keyed=keyed),
            run_policy("naive top-8", stream, naive, f"{split}-naive", keyed=keyed),
            run_policy("harness", stream, store, f"{split}-harness", keyed=keyed),
        ]
    finally:
        naive.close()
        store.close()
    summary = summarise(results)
    summary["stream"] = {
        "split": split,
        "runs": len(stream.tasks),
        "rules": len(stream.rules),
        "by_kind": {
            k: sum(t.kind == k for t in stream.tasks)
            for k in ("rule", "unrelated", "same-domain", "conflict")
        },
        "keyed_judge": keyed,
    }
    return summary


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits = [s for s in ("dev", "test") if s in report]
    fig, axes = plt.subplots(1, len(splits), figsize=(6 * len(splits), 4), squeeze=False)
    for ax, split in zip(axes[0], splits, strict=True):
        for policy in POLICIES:
            ax.plot(report[split][policy]["curve"], label=policy)
        ax.set_title(f"{split} stream: first-attempt rejections (rolling 24 runs)")
        ax.set_xlabel("run")
        ax.set_ylim(0, 1)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def fit(emb: CachedEmbedder) -> dict[str, Any]:
    """Learning's thresholds from the dev rules: ``restate_cosine`` between a lesson and a new
    wording of the same rule (and not of another), ``misled_cosine`` between a conflict's
    "does not apply" feedback and its rule's lesson (and not another rule's)."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    report: dict[str, Any] = {}
    for split in ("dev", "test"):
        rules = [r for r in data["rules"] if r["split"] == split]
        texts = [LESSON_PREFIX + w for r in rules for w in r["feedback"]]
        owners = [r["id"] for r in rules for _ in r["feedback"]]
        vecs = np.asarray(emb.embed(texts))
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        sims = vecs @ vecs.T
        same, other = [], []
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                (same if owners[i] == owners[j] else other).append(float(sims[i, j]))
        conflicts = [c for c in data["conflicts"] if c["split"] == split]
        cvecs = np.asarray(emb.embed([LESSON_PREFIX + c["feedback"] for c in conflicts]))
        cvecs /= np.linalg.norm(cvecs, axis=1, keepdims=True)
        csims = cvecs @ vecs.T
        own = [
            max(float(csims[k, i]) for i in range(len(texts)) if owners[i] == c["rule"])
            for k, c in enumerate(conflicts)
        ]
        foreign = [
            max(float(csims[k, i]) for i in range(len(texts)) if owners[i] != c["rule"])
            for k, c in enumerate(conflicts)
        ]
        report[split] = {
            "same_rule": _describe(same),
            "other_rule": _describe(other),
            "conflict_own_rule": _describe(own),
            "conflict_best_other_rule": _describe(foreign),
            "same": same,
            "other": other,
        }
    dev = report["dev"]
    # No two different rules may merge on dev: the largest cross-rule cosine, plus a margin
    # of half the gap to the same-rule median, sets the bar.
    worst = max(dev["other"])
    restate = round(worst + 0.5 * max(0.0, statistics.median(dev["same"]) - worst), 3)
    misled = round(max(dev["conflict_best_other_rule"]["max"], 0.0) + 0.01, 3)
    for split in ("dev", "test"):
        r = report[split]
        r["restate_recall"] = _rate([s >= restate for s in r.pop("same")])
        r["false_merges"] = sum(s >= restate for s in r.pop("other"))
    report["restate_cosine"] = restate
    report["misled_cosine"] = misled
    return report


def _describe(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values)
    return {
        "n": len(arr),
        "min": round(float(arr.min()), 3),
        "median": round(float(np.median(arr)), 3),
        "p95": round(float(np.percentile(arr, 95)), 3),
        "max": round(float(arr.max()), 3),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run")
    run_p.add_argument("--smoke", action="store_true")
    run_p.add_argument("--keyed", action="store_true", help="the judge names its checks")
    run_p.add_argument("--split", choices=("dev", "test", "both"), default="both")
    run_p.add_argument("--out", default=None)
    run_p.add_argument(
        "--stand-out", type=float, default=RankingConfig().stand_out, help="RankingConfig.stand_out"
    )
    sub.add_parser("fit")
    args = parser.parse_args(argv)
    emb = CachedEmbedder.load()
    if args.command == "fit":
        report = fit(emb)
        print(json.dumps(report, indent=1))
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "stream-fit.json").write_text(json.dumps(report, indent=1) + "\n")
        return report
    splits = ("dev", "test") if args.split == "both" else (args.split,)
    report = {
        split: run_split(
            split,
            emb,
            smoke=args.smoke,
            keyed=args.keyed,
            learning=LearningConfig(),
            stand_out=args.stand_out,
        )
        for split in splits
    }
    for split in splits:
        print(f"[{split}] {json.dumps(report[split]['stream'])}")
        for policy in POLICIES:
            row = {k: v for k, v in report[split][policy].items() if k != "curve"}
            print(f"  {policy:12} {json.dumps(row)}")
    # A smoke run never rewrites the tracked results (bench/.work is git-ignored).
    folder = WORK / "smoke" if args.smoke else RESULTS
    name = args.out or ("stream-smoke.json" if args.smoke else "stream.json")
    out = Path(name) if "/" in name else folder / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if not args.smoke:
        try:
            plot(report, out.with_suffix(".png"))
        except ImportError:
            print("matplotlib not installed: no plot")
    return report


if __name__ == "__main__":
    main()
