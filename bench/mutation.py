"""Mutation testing of the pure core and the readable-set filter (``make mutate``).

Starts one embedded PostgreSQL for the whole run (the database tests of every mutant share
it through ``HARNESS_TEST_DATABASE_URL``), runs mutmut (configured in ``[tool.mutmut]`` of
pyproject.toml) on the functions below, and writes the score per module and every surviving
mutant with its diff to ``bench/results/mutation.json``. Why each survivor is equivalent is
explained by hand in docs/mutation.md.

    python -m bench.mutation                      # every module
    python -m bench.mutation --module fingerprint # one module (names below)

mutmut keeps its results in ``mutants/``: a second run only re-tests what changed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "mutation.json"


@dataclass(frozen=True)
class Target:
    """One module under mutation: the files mutmut may change, the mutants counted, the tests."""

    files: tuple[str, ...]
    globs: tuple[str, ...]
    tests: tuple[str, ...]
    database: bool = False


#: Each module runs in its own scratch copy (``bench/.work/mutation/<slug>``) with its own test
#: selection: pure modules are checked by the pure test files only (seconds per mutant instead
#: of a database test run per mutant); the SQL filter needs the database tests.
MODULES: dict[str, Target] = {
    "recall (assembly)": Target(
        ("harness/memory/domain/recall.py",),
        ("harness.memory.domain.recall.*",),
        (
            "tests/unit/test_recall_rules.py",
            "tests/unit/test_ordering_property.py",
            "tests/unit/test_recall_accounting.py",
            "tests/unit/test_recall_explain.py",
            "tests/unit/test_render_boundary.py",
            "tests/unit/test_recall_assembly_detail.py",
        ),
    ),
    "ranking": Target(
        ("harness/memory/domain/ranking.py",),
        ("harness.memory.domain.ranking.*",),
        ("tests/unit/test_fusion.py", "tests/unit/test_ranking_rules.py"),
    ),
    "judge features": Target(
        ("harness/memory/domain/relevance.py",),
        ("harness.memory.domain.relevance.*",),
        (
            "tests/unit/test_judge.py",
            "tests/unit/test_judge_rules.py",
            "tests/unit/test_ranking_rules.py",
        ),
    ),
    "guard policy": Target(
        ("harness/memory/guard/policy.py",),
        ("harness.memory.guard.policy.*",),
        ("tests/unit/test_guard.py", "tests/unit/test_guard_policy.py"),
    ),
    "fingerprint": Target(
        ("harness/fingerprint.py",),
        ("harness.fingerprint.*",),
        ("tests/unit/test_recallset.py", "tests/unit/test_fingerprint.py"),
    ),
    "recallset": Target(
        ("harness/recallset/core.py",),
        ("harness.recallset.core.*",),
        ("tests/unit/test_recallset.py", "tests/unit/test_recallset_rules.py"),
    ),
    "sql readable filter": Target(
        ("harness/memory/store/sql/retrieval.py",),
        (
            "harness.memory.store.sql.retrieval.x_readable_filter*",
            "harness.memory.store.sql.retrieval.x_readable_params*",
        ),
        ("tests/db/test_readable_filter_db.py", "tests/unit/test_readable_filter.py"),
        database=True,
    ),
}
#: Survivors no test can kill, with the reason (docs/mutation.md explains each group). The
#: summary marks them, and scores each module with and without them.
EQUIVALENT: dict[str, str] = {
    # guard policy: the unfolded pass is skipped only as an optimisation (when folding changed
    # nothing, the folded pass has read that very text with every rule); mutants that merely
    # run it more often cannot change a verdict
    **{
        f"harness.memory.guard.policy.xǁRegexGuardǁscan__mutmut_{n}": why
        for n, why in {
            7: "folded = None: compared with != only, so the unfolded pass runs; a re-read",
            8: "folded = 'XXXX': overwritten by the text view, which every scan yields first",
            10: "views(text, None): views() cleans the text itself, the same cleaned text",
            12: "views(text, ): the same as views(text, None)",
            38: "folded = another view's text: the unfolded pass runs more often; a re-read",
            39: "folded never set: the unfolded pass runs more often; a re-read",
            40: "folded never set: the unfolded pass runs more often; a re-read",
            41: "folded = None: the unfolded pass runs more often; a re-read",
            42: "or instead of and: an ASCII or unchanged text was already read by every rule",
            47: "every rule on the unfolded text: token shapes are ASCII, identical after folding",
            49: "the same as passing None: every rule, and token shapes are ASCII",
        }.items()
    },
    "harness.fingerprint.x_fingerprint__mutmut_5": (
        'encode("UTF-8"): codec names are case-insensitive, the same bytes'
    ),
    "harness.memory.domain.recall.x_precedence_winner__mutmut_23": (
        "prefer_broad=None: only read as a condition, falsy like False"
    ),
    "harness.memory.domain.recall.x_assemble__mutmut_46": (
        "incomplete = None: only read as a condition, falsy like False"
    ),
    "harness.memory.domain.ranking.x_fuse__mutmut_30": (
        "score = instead of +=: the vector term is the first added to 0.0, the same float"
    ),
    "harness.memory.domain.ranking.x_fuse__mutmut_69": (
        "tie-break by str(None): the sort is stable over a list already ordered by id"
    ),
    "harness.recallset.core.xǁRecallSetǁ_push__mutmut_5": (
        "compaction at >= instead of >: when the stale heap is rebuilt is a memory bound, not behaviour"
    ),
    "harness.recallset.core.xǁRecallSetǁ_push__mutmut_6": (
        "compaction threshold 4n-64: rebuilding from the live items earlier keeps the same order"
    ),
    "harness.recallset.core.xǁRecallSetǁ_push__mutmut_7": (
        "compaction threshold 4/n+64: rebuilding from the live items earlier keeps the same order"
    ),
    "harness.recallset.core.xǁRecallSetǁ_push__mutmut_8": (
        "compaction threshold 5n+64: a later rebuild; stale entries are skipped when popped anyway"
    ),
    "harness.recallset.core.xǁRecallSetǁ_push__mutmut_9": (
        "compaction threshold 4n+65: a later rebuild; stale entries are skipped when popped anyway"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_4": (
        "platform branch without its scope test: the schema's CHECK scope_id makes an empty scope id mean platform"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_5": (
        "platform branch without its empty-id test: the schema's CHECK scope_id gives every platform row the empty id"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_16": (
        "r_user without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_18": (
        "r_user without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_29": (
        "r_workflow without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_31": (
        "r_workflow without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_42": (
        "r_session without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_44": (
        "r_session without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_57": (
        "r_tenant without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_59": (
        "r_tenant without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_69": (
        "r_now without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.store.sql.retrieval.x_readable_filter__mutmut_71": (
        "r_now without its explicit type: a bound value compared to a column takes the column's type, the compiled SQL is identical"
    ),
    "harness.memory.domain.recall.x_order_key__mutmut_9": (
        "non-constraints keyed 2 instead of 1: the first component still puts constraints first"
    ),
    "harness.memory.domain.recall.x_order_key__mutmut_13": (
        "non-constraints' second component 1 instead of 0: only compared among non-constraints"
    ),
    "harness.memory.domain.relevance.x__sigmoid__mutmut_1": (
        "z > 0 instead of z >= 0: at z = 0 both branches give 0.5"
    ),
    "harness.memory.domain.relevance.x__sigmoid__mutmut_2": (
        "z >= 1 instead of z >= 0: e/(1+e) and 1/(1+e^-z) are the same function"
    ),
}
WORK = ROOT / "bench" / ".work" / "mutation"
#: What a scratch copy holds besides pyproject.toml (the tests import the adapter; the
#: database tests need the migrations).
COPIED = ("harness", "product_adapter", "migrations", "tests")
#: Status words of ``mutmut results``; the score counts killed, timeout and type-checked ones.
DETECTED = {"killed", "timeout", "caught by type check", "segfault"}
NOT_RUN = {"skipped", "not checked"}

_RESULT = re.compile(r"^\s+(\S+): (.+)$")
_SECTION = re.compile(r"^\[tool\.mutmut\]$.*?(?=^\[|\Z)", re.M | re.S)


def slug(label: str) -> str:
    """The scratch folder name of a module label."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def workdir(label: str) -> Path:
    """Where the module's scratch copy and its mutmut results (``mutants/``) live."""
    return WORK / slug(label)


def mutmut_section(target: Target) -> str:
    """``[tool.mutmut]`` for one module: the shared settings, its files and its tests."""
    lines = [
        "[tool.mutmut]",
        'source_paths = ["harness/"]',
        f"only_mutate = {json.dumps(list(target.files))}",
        'also_copy = ["product_adapter/", "migrations/"]',
        'pytest_add_cli_args = ["-p", "no:randomly", "-q", "-p", "no:cacheprovider"]',
        f"pytest_add_cli_args_test_selection = {json.dumps(_existing(target.tests))}",
        # A fresh worker per mutant, forked from a process that only collected the tests:
        # statement builders are lru_cached, and a worker forked after the stats run would
        # reuse statements built from the unmutated code.
        'process_isolation = "forkserver"',
    ]
    return "\n".join(lines) + "\n\n"


def _existing(tests: tuple[str, ...]) -> list[str]:
    """The selection without test files not written yet (pytest refuses a missing path)."""
    return [t for t in tests if not t.startswith("tests/") or (ROOT / t).exists()]


def prepare(label: str) -> Path:
    """Refresh the module's scratch copy of the sources and tests; keep its mutmut results.

    mutmut caches a verdict per mutant by the hash of the function, so a refreshed copy only
    re-tests functions (and tests) that changed.
    """
    target = MODULES[label]
    where = workdir(label)
    where.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        shutil.rmtree(where / name, ignore_errors=True)
        shutil.copytree(
            ROOT / name,
            where / name,
            ignore=shutil.ignore_patterns("__pycache__", ".hypothesis", "*.pyc"),
        )
    pyproject = (ROOT / "pyproject.toml").read_text()
    pyproject = _SECTION.sub("", pyproject).rstrip() + "\n\n" + mutmut_section(target)
    config = where / "pyproject.toml"
    if not config.exists() or config.read_text() != pyproject:
        config.write_text(pyproject)
    return where


def _mutmut(
    where: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "mutmut"
    return subprocess.run(
        [str(exe), *args], cwd=where, env=env, text=True, capture_output=True, check=False
    )


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch(name, g) for g in globs)


def summarise(label: str) -> dict[str, object]:
    """Score and survivors of one module, from mutmut's stored results in its scratch copy."""
    where = workdir(label)
    globs = MODULES[label].globs
    listing = _mutmut(where, "results", "--all", "true").stdout if where.exists() else ""
    results = [m.groups() for line in listing.splitlines() if (m := _RESULT.match(line))]
    mine = [(n, s) for n, s in results if _matches(n, globs)]
    counts: dict[str, int] = {}
    for _, status in mine:
        counts[status] = counts.get(status, 0) + 1
    run = [(n, s) for n, s in mine if s not in NOT_RUN]
    detected = sum(1 for _, s in run if s in DETECTED)
    survivors = [
        {
            "name": n,
            "status": s,
            "equivalent": EQUIVALENT.get(n),
            "diff": _mutmut(where, "show", n).stdout.strip(),
        }
        for n, s in run
        if s not in DETECTED
    ]
    equivalent = sum(1 for s in survivors if s["equivalent"])
    return {
        "files": list(MODULES[label].files),
        "tests": list(MODULES[label].tests),
        "mutants": len(mine),
        "counts": counts,
        "score": round(detected / len(run), 4) if run else None,
        "score_without_equivalent": (
            round(detected / (len(run) - equivalent), 4) if len(run) > equivalent else None
        ),
        "survivors": survivors,
    }


#: mutmut's exit codes of a mutant no test failed on: survived (0), no tests (5, 33).
_UNDETECTED_CODES = {0, 5, 33}


def retest_survivors(where: Path) -> int:
    """Forget the verdicts of survivors so this run tests them again; return how many.

    mutmut keeps a verdict while the mutated function is unchanged, even when a test written
    since would now kill the mutant; survivors are few, so re-testing them is cheap. The map of
    which tests reach which function is dropped too (mutmut only adds tests with new names).
    """
    reset = 0
    # Which tests reach which function is recorded once; a test that gained an assertion
    # keeps its name, so collect it again (one run of the selected tests).
    (where / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    for meta in (where / "mutants").rglob("*.meta"):
        data = json.loads(meta.read_text())
        codes: dict[str, int | None] = data.get("exit_code_by_key", {})
        for key, code in codes.items():
            if code in _UNDETECTED_CODES:
                codes[key] = None
                reset += 1
        meta.write_text(json.dumps(data))
    return reset


def run_module(label: str, max_children: int, env: dict[str, str]) -> int:
    """Run mutmut on one module in its scratch copy (niced: it shares the machine)."""
    where = prepare(label)
    retest_survivors(where)
    command = [
        "nice",
        "-n",
        "10",
        str(Path(sys.executable).parent / "mutmut"),
        "run",
        "--max-children",
        str(max_children),
        *MODULES[label].globs,
    ]
    return subprocess.run(command, cwd=where, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES), default=None)
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--summary-only", action="store_true", help="only re-read the results")
    args = parser.parse_args(argv)
    labels = args.module or list(MODULES)
    returncode = 0
    seconds: dict[str, float] = {}
    if not args.summary_only:
        # A short path: the server's socket lives in it (Unix socket paths are short).
        home = Path(tempfile.mkdtemp(prefix="hm-mut-"))
        env = {**os.environ, "HARNESS_MUTATION": "1"}  # the tests' hypothesis profile
        env.setdefault("HARNESS_HOME", str(home / "harness-home"))
        if any(MODULES[label].database for label in labels):
            from harness.memory.store.embedded import embedded_url

            env["HARNESS_TEST_DATABASE_URL"] = embedded_url(home)
        model = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx"
        if model.exists():
            env.setdefault("HARNESS_EMBED_MODEL_PATH", str(model))
        for label in labels:
            begun = time.perf_counter()
            returncode = run_module(label, args.max_children, env) or returncode
            seconds[label] = round(time.perf_counter() - begun, 1)
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    modules: dict[str, object] = dict(previous.get("modules", {})) if args.module else {}
    for label in labels:
        data = summarise(label)
        if label in seconds:
            data["seconds"] = seconds[label]
        elif isinstance(old := modules.get(label), dict) and "seconds" in old:
            data["seconds"] = old["seconds"]
        modules[label] = data
    modules = {label: modules[label] for label in MODULES if label in modules}
    total_run = total_detected = 0
    for data in modules.values():
        assert isinstance(data, dict)
        counts: dict[str, int] = data["counts"]
        total_run += sum(n for s, n in counts.items() if s not in NOT_RUN)
        total_detected += sum(n for s, n in counts.items() if s in DETECTED)
    report = {
        "tool": "mutmut " + _mutmut(ROOT, "--version").stdout.strip().split()[-1],
        "score": round(total_detected / total_run, 4) if total_run else None,
        "modules": modules,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    for label in labels:
        data = modules[label]
        assert isinstance(data, dict)
        print(
            f"{label:22} score {data['score']} "
            f"(without equivalent {data['score_without_equivalent']})  {data['counts']}"
        )
    print(f"wrote {OUT.relative_to(ROOT)}")
    return returncode


if __name__ == "__main__":
    raise SystemExit(main())
