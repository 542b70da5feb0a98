"""Run the benchmarks and write bench/results/*.json and bench/results/bench.png.

    python -m bench.run             # full run (several minutes; 100k memories)
    python -m bench.run --smoke     # under a minute, into the ignored bench/.work/smoke/

Every figure is measured in this process next to its baseline (vector-only, full-text-only,
exact scan vs HNSW, the RecallSet at 10k vs 100k operations).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

from bench import latency, locomo, quality, recallset_bench
from bench.common import RESULTS, peak_rss_mb

#: Where ``--smoke`` writes (git-ignored): a smoke run must never rewrite tracked results.
SMOKE_RESULTS = Path(__file__).parent / ".work" / "smoke"


def output_dir(smoke: bool, out_dir: Path | None = None) -> Path:
    """``out_dir`` if given, else the ignored smoke folder for smoke runs, else bench/results."""
    return out_dir or (SMOKE_RESULTS if smoke else RESULTS)


def plot(result: dict[str, Any], path: Path) -> None:
    """Three panels: synthetic hit@8, LoCoMo any@10, recall p50 by size (if matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install -e '.[bench]'): no plot")
        return
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    q = result.get("quality", {}).get("sizes", {})
    modes = ["hybrid", "vector", "lexical"]
    for i, (n, entry) in enumerate(sorted(q.items(), key=lambda kv: int(kv[0]))):
        axes[0].bar(
            [x + i * 0.35 for x in range(3)],
            [entry[m]["hit@8"] for m in modes],
            width=0.35,
            label=f"{int(n):,} memories",
        )
    axes[0].set_xticks([x + 0.17 for x in range(3)], modes)
    axes[0].set_ylim(0, 1.05)
    axes[0].set_title("synthetic history: hit@8")
    axes[0].legend()
    loc = result.get("locomo", {})
    if loc:
        axes[1].bar(modes, [loc[m]["any@10"] for m in modes], color="tab:green")
        axes[1].axhline(0.661, ls="--", c="grey", label="RRF baseline 0.661")
        axes[1].axhline(0.75, ls=":", c="red", label="goal 0.75")
        axes[1].set_ylim(0, 1.0)
        axes[1].set_title("LoCoMo evidence any@10")
        axes[1].legend()
    lat = result.get("latency", {}).get("sizes", {})
    if lat:
        sizes = sorted(lat, key=int)
        for key, label in (
            ("exact_with_query_embedding", "exact scan"),
            ("hnsw_with_query_embedding", "HNSW + bounded FTS"),
        ):
            axes[2].plot(
                [int(s) for s in sizes],
                [lat[s][key]["p50_ms"] for s in sizes],
                marker="o",
                label=label,
            )
        axes[2].set_xscale("log")
        axes[2].set_yscale("log")
        axes[2].set_xlabel("memories of one user")
        axes[2].set_ylabel("recall p50 (ms, query embedding included)")
        axes[2].set_title("recall latency")
        axes[2].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="small and fast")
    parser.add_argument(
        "--out-dir", type=Path, default=None, help="where to write (smoke: bench/.work/smoke)"
    )
    parser.add_argument(
        "--only",
        default="recallset,quality,locomo,latency,conversations",
        help="comma-separated sections",
    )
    args = parser.parse_args(argv)
    sections = set(args.only.split(","))
    results = output_dir(args.smoke, args.out_dir)
    started = time.time()
    result: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "smoke": args.smoke,
    }
    if "recallset" in sections:
        result["recallset"] = recallset_bench.main(
            ["--repeat", "1" if args.smoke else "5", "--out", str(results / "recallset.json")]
        )
    if "quality" in sections:
        result["quality"] = (
            quality.run([1000], [], n_questions=40, n_negatives=20)
            if args.smoke
            else quality.run([1000, 10000], [20000, 100000])
        )
    if "locomo" in sections:
        result["locomo"] = locomo.run(limit_conversations=2 if args.smoke else None)
    if "latency" in sections:
        result["latency"] = (
            latency.run([1000], n_questions=30, write_n=500)
            if args.smoke
            else latency.run([1000, 10000, 100000], n_questions=100, write_n=5000)
        )
    if "conversations" in sections:
        from bench import conversations

        result["conversations"] = {
            k: v
            for k, v in conversations.main(["--smoke"] if args.smoke else []).items()
            if k != "archive"
        }
    if "peers" in sections and not args.smoke:
        try:
            import langgraph.store.postgres  # noqa: F401 - only to know the extra is there

            from bench import peers
        except ImportError:
            print("peers skipped: pip install -e '.[peers]'")
        else:
            result["peers"] = peers.run()
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    result["seconds"] = round(time.time() - started, 1)
    name = "smoke" if args.smoke else "bench"
    results.mkdir(parents=True, exist_ok=True)
    out = results / f"{name}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    plot(result, results / f"{name}.png")
    return result


if __name__ == "__main__":
    main()
