"""Run a command beside CPU hogs: the suite must stay green on a busy machine.

Run: ``python -m bench.hogs [--hogs 2] [--runs 3] [--json PATH] -- make test``
(``make test-under-load`` runs ``make test`` so, three times). Starts
``--hogs`` processes that each spin one core at the caller's priority, runs the command
``--runs`` times in a row, prints one line per run (exit code and wall time) and stops the
hogs, also when interrupted (SIGINT, SIGTERM, SIGHUP; a hog whose runner is gone stops too). Exits 0 only when every run passed. With ``--json`` the runs are
written there too (the figures a closing note quotes).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["hogs", "main"]


def _spin(parent: int) -> None:  # pragma: no cover - runs in the hog processes
    """Spin until killed, or until ``parent`` is gone (a hog never outlives its runner)."""
    n = 0
    while os.getppid() == parent:
        for _ in range(1_000_000):
            n = (n * 1103515245 + 12345) & 0xFFFFFFFF


def _exit_on(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through hogs(): the hogs are stopped


@contextmanager
def hogs(count: int) -> Iterator[list[int]]:
    """``count`` busy processes for the duration of the block; yields their pids."""
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(target=_spin, args=(os.getpid(),), name=f"cpu-hog-{i}", daemon=True)
        for i in range(count)
    ]
    for proc in procs:
        proc.start()
    try:
        yield [proc.pid for proc in procs if proc.pid is not None]
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.join()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hogs", description=__doc__)
    parser.add_argument("--hogs", type=int, default=2, help="busy processes (default 2)")
    parser.add_argument("--runs", type=int, default=1, help="runs of the command in a row")
    parser.add_argument("--json", type=Path, help="also write the runs here as JSON")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on)
    runs: list[dict[str, object]] = []
    with hogs(args.hogs) as pids:
        print(f"hogs: {args.hogs} busy processes {pids} on {os.cpu_count()} cores", flush=True)
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            code = subprocess.call(command)
            seconds = time.monotonic() - started
            load = os.getloadavg()[0]
            runs.append({"run": run, "exit": code, "seconds": round(seconds, 1), "load": load})
            verdict = "passed" if code == 0 else f"FAILED (exit {code})"
            print(
                f"hogs: run {run}/{args.runs} {verdict} in {seconds / 60:.1f} min "
                f"({seconds:.0f} s; load {load:.1f})",
                flush=True,
            )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        record = {"command": command, "hogs": args.hogs, "cores": os.cpu_count(), "runs": runs}
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    return 0 if all(r["exit"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
