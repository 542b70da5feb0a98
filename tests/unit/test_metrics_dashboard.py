"""The Grafana dashboard and the alert table ask only for metrics this build exports, under
labels it sets (a renamed metric would leave an empty panel, not an error)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.metrics import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
_NAME = re.compile(r"\b(harness_[a-z_]+)(\{[^}]*\})?")
_SUFFIXES = ("_bucket", "_total", "_count", "_sum", "_created")


def exported() -> dict[str, set[str]]:
    """Sample name -> the labels it carries."""
    out: dict[str, set[str]] = {}
    for family in REGISTRY.collect():
        names = {family.name, *(family.name + s for s in _SUFFIXES)}
        for name in names:
            out[name] = set()
        for sample in family.samples:
            out.setdefault(sample.name, set()).update(sample.labels)
        labelled = {k for s in family.samples for k in s.labels} - {"le"}
        for name in names:
            out[name] |= labelled | ({"le"} if family.type == "histogram" else set())
    return out


def _uses(text: str) -> list[tuple[str, set[str]]]:
    found = []
    for name, selector in _NAME.findall(text):
        labels = set(re.findall(r"(\w+)\s*=~?", selector)) - {"job"}
        found.append((name, labels))
    return found


def test_every_dashboard_query_names_an_exported_metric_and_its_labels() -> None:
    dashboard = json.loads((ROOT / "docs/grafana/harness-memory.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    have = exported()
    uses = [u for e in exprs for u in _uses(e)]
    assert len(uses) >= 10
    for name, labels in uses:
        assert name in have, name
        assert labels <= have[name], (name, labels)


def test_every_metric_the_operations_page_lists_is_exported() -> None:
    page = (ROOT / "docs/operations.md").read_text()
    table = page[page.index("### Metrics") : page.index("### What to alert on")]
    listed = set(re.findall(r"`(harness_[a-z_]+)`", table))
    families = {f.name for f in REGISTRY.collect()}
    as_exported = {n.removesuffix("_total") for n in listed}
    assert as_exported == families
