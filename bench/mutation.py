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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "mutation.json"

#: Module label -> mutmut name globs (module path, then ``x_function`` / ``xǁClassǁmethod``).
MODULES: dict[str, list[str]] = {
    "recall (assembly)": ["harness.memory.recall.*"],
    "ranking": ["harness.memory.ranking.*"],
    "guard": ["harness.memory.guard.*"],
    "fingerprint": ["harness.fingerprint.*"],
    "recallset": ["harness.recallset.*"],
    "sql readable filter": [
        "harness.memory.sql.recall.x_readable_filter*",
        "harness.memory.sql.recall.x_readable_params*",
    ],
}
#: Status words of ``mutmut results``; the score counts killed, timeout and type-checked ones.
DETECTED = {"killed", "timeout", "caught by type check", "segfault"}
NOT_RUN = {"skipped", "not checked"}

_RESULT = re.compile(r"^\s+(\S+): (.+)$")


def _mutmut(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "mutmut"
    return subprocess.run(
        [str(exe), *args], cwd=ROOT, env=env, text=True, capture_output=True, check=False
    )


def _matches(name: str, globs: list[str]) -> bool:
    from fnmatch import fnmatch

    return any(fnmatch(name, g) for g in globs)


def summarise(labels: list[str]) -> dict[str, object]:
    """Score per module and survivors, from mutmut's stored results."""
    listing = _mutmut("results", "--all", "true").stdout
    results = [m.groups() for line in listing.splitlines() if (m := _RESULT.match(line))]
    modules: dict[str, object] = {}
    for label in labels:
        mine = [(n, s) for n, s in results if _matches(n, MODULES[label])]
        counts: dict[str, int] = {}
        for _, status in mine:
            counts[status] = counts.get(status, 0) + 1
        run = [(n, s) for n, s in mine if s not in NOT_RUN]
        detected = sum(1 for _, s in run if s in DETECTED)
        survivors = [
            {"name": n, "status": s, "diff": _mutmut("show", n).stdout.strip()}
            for n, s in run
            if s not in DETECTED
        ]
        modules[label] = {
            "mutants": len(mine),
            "counts": counts,
            "score": round(detected / len(run), 4) if run else None,
            "survivors": survivors,
        }
    return modules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES), default=None)
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--summary-only", action="store_true", help="only re-read the results")
    args = parser.parse_args(argv)
    labels = args.module or list(MODULES)
    started = time.perf_counter()
    returncode = 0
    if not args.summary_only:
        from harness.memory.embedded import embedded_url

        # A short path: the server's socket lives in it (Unix socket paths are short).
        home = Path(tempfile.mkdtemp(prefix="hm-mut-"))
        env = {**os.environ, "HARNESS_TEST_DATABASE_URL": embedded_url(home)}
        env.setdefault("HARNESS_HOME", str(home / "harness-home"))
        globs = [g for label in labels for g in MODULES[label]]
        proc = subprocess.run(
            [
                str(Path(sys.executable).parent / "mutmut"),
                "run",
                "--max-children",
                str(args.max_children),
                *globs,
            ],
            cwd=ROOT,
            env=env,
            check=False,
        )
        returncode = proc.returncode
    modules = summarise(labels)
    total_run = total_detected = 0
    for data in modules.values():
        assert isinstance(data, dict)
        counts: dict[str, int] = data["counts"]
        run = sum(n for s, n in counts.items() if s not in NOT_RUN)
        total_run += run
        total_detected += sum(n for s, n in counts.items() if s in DETECTED)
    report = {
        "tool": "mutmut " + _mutmut("--version").stdout.strip().split()[-1],
        "seconds": round(time.perf_counter() - started, 1),
        "score": round(total_detected / total_run, 4) if total_run else None,
        "modules": modules,
    }
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    if args.module and previous.get("modules"):  # a partial run keeps the other modules
        report["modules"] = {**previous["modules"], **modules}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    for label, data in modules.items():
        assert isinstance(data, dict)
        print(f"{label:22} score {data['score']}  {data['counts']}")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return returncode


if __name__ == "__main__":
    raise SystemExit(main())
