"""Guard benchmark: catch rates on the corpora, cost per 1,000 characters, and detect-secrets.

    python -m bench.guard_bench --repeats 9   # writes bench/results/guard.json
    python -m bench.guard_bench --no-detect-secrets   # the default guard only (and its baseline)

Rates come from ``tests/support/data/guard`` (secrets, injection attempts, ordinary sentences):
the main corpus, and the breadth corpus of issue 31 in two splits kept apart, ``dev`` (the
rules were tuned on it) and ``test`` (held out: written and measured before any rule changed).
Each split is read by the guard and by a frozen copy of the guard before issue 31
(``tests/support/guard_before31``), so before and after come from one run.
Cost is the median of several timed passes, per write and per 1,000 characters, for the corpus
rows as they are (short writes, so a fixed cost per call dominates) and for ~1,000-character
memories built from ordinary sentences. When ``detect-secrets`` is installed (``pip install
detect-secrets``) it is measured the same way behind the same ``check`` interface, alone and
combined with the default guard, so the choice between them rests on numbers. Last, the guard
is timed against the guard before issue 31, passes interleaved in the same process: the ratio
is the write-path cost against today's guard.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext, suppress
from pathlib import Path
from typing import Any

from harness.errors import MemoryRejected
from harness.memory.domain.types import MemoryCandidate
from harness.memory.guard import RegexGuard, default_guard

DATA = Path(__file__).resolve().parent.parent / "tests" / "support" / "data" / "guard"
RESULTS = Path(__file__).resolve().parent / "results"


def load(name: str) -> list[str]:
    """The texts of one corpus file (``"secrets"``, ``"breadth/test/ordinary"``, ...)."""
    with (DATA / f"{name}.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


KINDS = ("secrets", "injections", "ordinary")
SPLITS = {"main": "", "breadth_dev": "breadth/dev/", "breadth_test": "breadth/test/"}


def split_rates(guards: dict[str, Any]) -> dict[str, Any]:
    """Per split: its size, and each guard's rates and counts (caught, or refused for ordinary)."""
    out: dict[str, Any] = {}
    for split, prefix in SPLITS.items():
        corpora = {kind: load(prefix + kind) for kind in KINDS}
        out[split] = {"rows": {k: len(v) for k, v in corpora.items()}}
        for name, guard in guards.items():
            counts = {k: sum(refused(guard, t) for t in rows) for k, rows in corpora.items()}
            out[split][name] = {
                "rates": {k: round(counts[k] / len(corpora[k]), 4) for k in KINDS},
                "counts": counts,
            }
    return out


class DetectSecretsGuard:
    """detect-secrets (all plugins, default filters, keyword detector) behind ``check``."""

    rule = "detect_secrets"

    def __init__(self) -> None:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.plugins.high_entropy_strings import (
            Base64HighEntropyString,
            HexHighEntropyString,
        )
        from detect_secrets.settings import default_settings

        self._scan_line = scan_line
        self._settings: Callable[[], AbstractContextManager[Any]] = default_settings
        # ad-hoc scanning reports every string with its entropy (as `detect-secrets scan
        # --string` does); only those above the plugin's limit count, as in a file scan
        self._entropy = {
            p.secret_type: p for p in (Base64HighEntropyString(), HexHighEntropyString())
        }

    def session(self) -> AbstractContextManager[Any]:
        """detect-secrets reads global settings: hold them for a batch of checks."""
        return self._settings()

    def check(self, candidate: MemoryCandidate) -> None:
        for text in (candidate.content, candidate.context or "", candidate.key or ""):
            for line in text.splitlines():
                for found in self._scan_line(line):
                    plugin = self._entropy.get(found.type)
                    value = found.secret_value or ""
                    if plugin is not None and not (
                        plugin.calculate_shannon_entropy(value) > plugin.entropy_limit
                    ):
                        continue
                    raise MemoryRejected(found.type, rule=self.rule)


class EitherGuard:
    """Refuse when either guard refuses (the default guard plus a second opinion)."""

    def __init__(self, first: Any, second: Any):
        self.first, self.second = first, second

    def check(self, candidate: MemoryCandidate) -> None:
        self.first.check(candidate)
        self.second.check(candidate)


def candidate(text: str) -> MemoryCandidate:
    return MemoryCandidate(tenant="bench", scope="user", scope_id="u", kind="fact", content=text)


def refused(guard: Any, text: str) -> bool:
    try:
        guard.check(candidate(text))
    except MemoryRejected:
        return True
    return False


def rates(guard: Any, corpora: dict[str, list[str]]) -> dict[str, float]:
    return {
        name: sum(refused(guard, t) for t in rows) / len(rows) for name, rows in corpora.items()
    }


def cost(guard: Any, texts: list[str], repeats: int) -> dict[str, float]:
    """Median of ``repeats`` passes over ``texts`` -> ms per write and per 1k chars.

    CPU time of this process (the machine is shared: wall time also counts waiting for a core)
    with the wall-clock median beside it.
    """
    cands = [candidate(t) for t in texts]
    chars = sum(len(t) for t in texts)
    cpu, wall = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        for c in cands:
            with suppress(MemoryRejected):
                guard.check(c)
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    median, median_wall = statistics.median(cpu), statistics.median(wall)
    return {
        "writes": len(texts),
        "mean_chars": round(chars / len(texts), 1),
        "ms_per_write": round(median / len(texts) * 1000, 4),
        "ms_per_1000_chars": round(median / chars * 1000 * 1000, 4),
        "wall_ms_per_1000_chars": round(median_wall / chars * 1000 * 1000, 4),
    }


def long_memories(ordinary: list[str], n: int, size: int = 1000) -> list[str]:
    """``n`` ordinary memories of about ``size`` characters (sentences joined, seeded)."""
    rng = random.Random(7)
    out = []
    for _ in range(n):
        parts: list[str] = []
        while sum(map(len, parts)) < size:
            parts.append(rng.choice(ordinary))
        out.append(" ".join(parts)[:size])
    return out


def measure(name: str, guard: Any, corpora: dict[str, list[str]], repeats: int) -> dict[str, Any]:
    session: Callable[[], AbstractContextManager[Any]] = getattr(guard, "session", nullcontext)
    memories = long_memories(corpora["ordinary"], 200)
    with session():
        return {
            "rates": rates(guard, corpora),
            # joined ordinary sentences: refusing one means a sentence pair misleads the guard
            "ordinary_1000_char_memories_refused": sum(refused(guard, t) for t in memories) / 200,
            "cost_corpus_rows": cost(
                guard, [t for rows in corpora.values() for t in rows], repeats
            ),
            "cost_1000_char_memories": cost(guard, memories, repeats),
        }


def before_issue31() -> Any | None:
    """The frozen guard from before issue 31, or None outside the repository root."""
    try:
        from tests.support.guard_before31 import default_guard as baseline_guard
    except ImportError:
        print("tests/support/guard_before31 not importable (run from the repository root)")
        return None
    return baseline_guard()


def versus_baseline(texts: list[str], repeats: int) -> dict[str, Any] | None:
    """The guard before issue 31 (``tests/support/guard_before31``) and now, passes interleaved.

    Both run in this process over the same texts, alternating pass by pass, so a change in the
    machine's load falls on both; the ratio is the figure to trust.
    """
    baseline = before_issue31()
    if baseline is None:
        return None
    pair = {"baseline": baseline, "default_guard": default_guard()}
    cands = [candidate(t) for t in texts]
    chars = sum(len(t) for t in texts)
    cpu: dict[str, list[float]] = {name: [] for name in pair}
    wall: dict[str, list[float]] = {name: [] for name in pair}
    load_before = os.getloadavg()[0]
    for _ in range(repeats):
        for name, guard in pair.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            for c in cands:
                with suppress(MemoryRejected):
                    guard.check(c)
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start)
    per_1k = {n: statistics.median(v) / chars * 1e6 for n, v in cpu.items()}
    wall_1k = {n: statistics.median(v) / chars * 1e6 for n, v in wall.items()}
    return {
        "what": "baseline = the guard before issue 31 (tests/support/guard_before31), same process",
        "ms_per_1000_chars": {n: round(v, 4) for n, v in per_1k.items()},
        "wall_ms_per_1000_chars": {n: round(v, 4) for n, v in wall_1k.items()},
        "cpu_ratio": round(per_1k["default_guard"] / per_1k["baseline"], 3),
        "wall_ratio": round(wall_1k["default_guard"] / wall_1k["baseline"], 3),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def guards(detect_secrets: bool = True) -> Iterator[tuple[str, Any]]:
    yield "default_guard", default_guard()
    if not detect_secrets:
        return
    try:
        ds = DetectSecretsGuard()
    except ImportError:
        print("detect-secrets not installed: pip install detect-secrets to compare")
        return
    yield "detect_secrets", ds
    yield "default_or_detect_secrets", _Either(default_guard(), ds)


class _Either(EitherGuard):
    def session(self) -> AbstractContextManager[Any]:
        return self.second.session()  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "guard.json")
    parser.add_argument(
        "--no-detect-secrets",
        dest="detect_secrets",
        action="store_false",
        help="skip the (slow) detect-secrets comparison",
    )
    args = parser.parse_args()
    corpora = {name: load(name) for name in KINDS}
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "corpus": {k: len(v) for k, v in corpora.items()},
        "rules": len(RegexGuard().rules),
        "guards": {},
    }
    for name, guard in guards(args.detect_secrets):
        result["guards"][name] = entry = measure(name, guard, corpora, args.repeats)
        r = entry["rates"]
        print(
            f"{name:28s} secrets {r['secrets']:.1%}  injections {r['injections']:.1%}  "
            f"ordinary refused {r['ordinary']:.1%}  "
            f"{entry['cost_corpus_rows']['ms_per_write']:.3f} ms/write (rows), "
            f"{entry['cost_1000_char_memories']['ms_per_1000_chars']:.3f} ms/1k chars (1k memories)"
        )
    baseline = before_issue31()
    rated = {"default_guard": default_guard()} | ({"before_issue31": baseline} if baseline else {})
    result["splits"] = splits = split_rates(rated)
    for split, entry in splits.items():
        for name in rated:
            c, n = entry[name]["counts"], entry["rows"]
            print(
                f"{split:13s} {name:15s} secrets {c['secrets']}/{n['secrets']}  injections "
                f"{c['injections']}/{n['injections']}  ordinary refused {c['ordinary']}/{n['ordinary']}"
            )
    result["versus_baseline"] = {}
    for label, texts in (
        ("1000_char_memories", long_memories(corpora["ordinary"], 200)),
        ("corpus_rows", [t for rows in corpora.values() for t in rows]),
    ):
        compared = versus_baseline(texts, max(args.repeats, 7))
        if compared is None:
            break
        result["versus_baseline"][label] = compared
        cost, wall = compared["ms_per_1000_chars"], compared["wall_ms_per_1000_chars"]
        print(
            f"{'before issue 31 vs now':23s} {label:18s} CPU {cost['baseline']:.3f} -> "
            f"{cost['default_guard']:.3f} ms/1k chars (x{compared['cpu_ratio']}), wall "
            f"{wall['baseline']:.3f} -> {wall['default_guard']:.3f} (x{compared['wall_ratio']}), "
            f"load average {compared['load_average_1min']}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
