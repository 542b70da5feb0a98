"""Embedded PostgreSQL start time: first start (initdb + start) and later starts, each in a
fresh Python process as a user's first command would be. ``python -m bench.startup``."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile

CODE = (
    "import time, pathlib; t = time.perf_counter(); "
    "from harness.memory.store.embedded import embedded_url; "
    "embedded_url(pathlib.Path({home!r})); print(time.perf_counter() - t)"
)


def measure(repeat: int = 5) -> dict[str, float]:
    home = tempfile.mkdtemp(prefix="harness-start-")

    def once() -> float:
        out = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", CODE.format(home=home)],
            capture_output=True,
            text=True,
            check=True,
        )
        return float(out.stdout.strip().splitlines()[-1])

    first = once()
    later = [once() for _ in range(repeat)]
    return {
        "first_start_s": round(first, 3),
        "later_start_median_s": round(statistics.median(later), 3),
        "repeat": repeat,
    }


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
