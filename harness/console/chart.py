"""Pure layout of the status page's per-day bar chart (stacked by origin), drawn as inline SVG."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from harness.memory.domain.types import Origin

__all__ = ["ORIGIN_COLOURS", "Bar", "Chart", "layout_chart"]

ORIGIN_COLOURS: dict[str, str] = {
    Origin.VERDICT.value: "#d9822b",
    Origin.COMPLETION.value: "#2b7bd9",
    Origin.ADMIN.value: "#3a9d5d",
    Origin.API.value: "#8a63d2",
}


@dataclass(frozen=True)
class Bar:
    """One rectangle: a day's count of one origin."""

    x: float
    y: float
    width: float
    height: float
    colour: str
    label: str


@dataclass(frozen=True)
class Chart:
    """Rectangles, the largest day total and the chart's size."""

    bars: list[Bar]
    max_total: int
    width: int
    height: int
    first_day: str
    last_day: str


def _as_date(value: date | datetime) -> date:
    return value.date() if isinstance(value, datetime) else value


def layout_chart(
    days: Sequence[date | datetime],
    rows: Iterable[Mapping[str, Any]],
    *,
    width: int = 600,
    height: int = 120,
) -> Chart:
    """Stack each day's counts by origin; bar heights scale to the busiest day.

    ``rows`` hold ``day``, ``origin`` and ``n``; rows of days outside ``days`` are ignored.
    """
    index = {_as_date(d): i for i, d in enumerate(days)}
    counts: dict[int, dict[str, int]] = {}
    for row in rows:
        i = index.get(_as_date(row["day"]))
        if i is not None:
            per = counts.setdefault(i, {})
            per[row["origin"]] = per.get(row["origin"], 0) + int(row["n"])
    max_total = max((sum(c.values()) for c in counts.values()), default=0)
    slot = width / max(len(days), 1)
    bars: list[Bar] = []
    for i, per in sorted(counts.items()):
        y = float(height)
        for origin in ORIGIN_COLOURS:
            n = per.get(origin, 0)
            if not n:
                continue
            h = height * n / max_total
            y -= h
            day = _as_date(days[i]).isoformat()
            bars.append(
                Bar(
                    i * slot + 1,
                    y,
                    max(slot - 2, 1),
                    h,
                    ORIGIN_COLOURS[origin],
                    f"{day} {origin}: {n}",
                )
            )
    first = _as_date(days[0]).isoformat() if days else ""
    last = _as_date(days[-1]).isoformat() if days else ""
    return Chart(bars, max_total, width, height, first, last)
