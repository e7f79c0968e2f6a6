"""Small inline-SVG drawings for the report page (page.py): log-scale arithmetic, history
sparklines, latency curves against concurrent callers and paired-ratio bars.

Owns the geometry of these pictures only; every string that reaches the markup is escaped
here. Nothing is fetched: each function returns a self-contained `<svg>` element.
"""

from __future__ import annotations

import math
from html import escape

from . import humanize

VERDICT_COLOURS = {"slower": "#c0392b", "faster": "#1e8449", "same": "#7f8c8d"}
SPARK_MIN_SPAN = math.log10(1.5)
PERCENTILE_STYLES = (("p50_ns", "p50", "#4e79a7"), ("p95_ns", "p95", "#f28e2b"), ("p99_ns", "p99", "#e15759"))


def decades(low: float, high: float, margin: float = 0.3) -> tuple[int, int]:
    """(first, last) powers of ten of a log axis holding [low, high] (both > 0), with at least
    `margin` of a decade left of `low`, so that the smallest bar keeps a visible length."""
    low_log, high_log = math.log10(low), math.log10(max(high, low))
    first = math.floor(low_log - margin)
    last = max(math.ceil(high_log), first + 1)
    return first, last


def fraction(value: float, first: int, last: int) -> float:
    """Where `value` falls on the log axis first..last, clamped to [0, 1]."""
    if value <= 0:
        return 0.0
    return min(max((math.log10(value) - first) / (last - first), 0.0), 1.0)


def _f(value: float) -> str:
    return f"{value:.1f}"


def sparkline(points: list[tuple[float, str | None, str]], width: int = 84, height: int = 18) -> str:
    """A median's history, oldest left: points are (median ns, paired verdict or None, label);
    log y, scaled to the series' own range; a point with a non-"same" verdict is a coloured dot,
    the newest point a dark one."""
    if not points:
        return ""
    logs = [math.log10(max(value, 1e-3)) for value, _, _ in points]
    # At least a factor of SPARK_MIN_SPAN top to bottom, so that noise of a few percent stays
    # a nearly flat line instead of filling the height.
    low, high = min(logs), max(logs)
    if high - low < SPARK_MIN_SPAN:
        middle = (high + low) / 2
        low, high = middle - SPARK_MIN_SPAN / 2, middle + SPARK_MIN_SPAN / 2
    span = high - low
    step = (width - 6) / max(len(points) - 1, 1)

    def xy(index: int) -> tuple[float, float]:
        x = 3 + index * step if len(points) > 1 else width / 2
        y = height - 3 - (logs[index] - low) / span * (height - 6)
        return x, y

    coordinates = [xy(i) for i in range(len(points))]
    title = "\n".join(
        f"{label}: {humanize.duration(value)}" + (f" (paired: {v})" if v else "") for value, v, label in points
    )
    parts = [
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
    ]
    if len(points) > 1:
        line = " ".join(f"{_f(x)},{_f(y)}" for x, y in coordinates)
        parts.append(f'<polyline points="{line}" fill="none" stroke="#5d6d7e" stroke-width="1.2"/>')
    for index, ((x, y), (_, verdict, _)) in enumerate(zip(coordinates, points, strict=True)):
        if verdict in ("slower", "faster"):
            parts.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="2.6" fill="{VERDICT_COLOURS[verdict]}"/>')
        elif index == len(points) - 1:
            parts.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="1.8" fill="#2c3e50"/>')
    parts.append("</svg>")
    return "".join(parts)


def latency_chart(
    label: str,
    series: list[dict],
    y_range: tuple[int, int],
    callers_range: tuple[int, int],
    width: int = 250,
    height: int = 150,
) -> str:
    """p50/p95/p99 (ns, log y) against concurrent callers (log x) of one id family: `series`
    holds latency records (callers, p50_ns, p95_ns, p99_ns, ...) sorted by callers; both axes
    are shared by the charts of one group (y_range, callers_range as powers of ten)."""
    left, right, top, bottom = 46, width - 14, 8, height - 26
    y_first, y_last = y_range
    x_first, x_last = callers_range

    def x_of(callers: float) -> float:
        return left + fraction(callers, x_first, x_last) * (right - left)

    def y_of(ns: float) -> float:
        return bottom - fraction(ns, y_first, y_last) * (bottom - top)

    parts = [
        f'<svg class="lat" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f"<title>{escape(label)}: latency percentiles against concurrent callers (log scales)</title>",
        f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" fill="#fbfbfb" stroke="#ddd"/>',
    ]
    for exponent in range(y_first, y_last + 1):
        y = y_of(10.0**exponent)
        parts.append(f'<line x1="{left}" x2="{right}" y1="{_f(y)}" y2="{_f(y)}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{left - 3}" y="{_f(y + 3)}" text-anchor="end">{escape(humanize.duration(10.0**exponent))}</text>')
    for exponent in range(x_first, x_last + 1):
        x = x_of(10.0**exponent)
        parts.append(f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{top}" y2="{bottom}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{_f(x)}" y="{bottom + 12}" text-anchor="middle">{10**exponent}</text>')
    parts.append(f'<text x="{(left + right) / 2:.0f}" y="{height - 2}" text-anchor="middle">concurrent callers</text>')
    for key, name, colour in PERCENTILE_STYLES:
        coordinates = [(x_of(r["callers"]), y_of(r[key])) for r in series]
        if len(coordinates) > 1:
            line = " ".join(f"{_f(x)},{_f(y)}" for x, y in coordinates)
            parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
        for (x, y), record in zip(coordinates, series, strict=True):
            tip = f"{name} at {record['callers']} caller(s): {humanize.duration(record[key])}"
            parts.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="2.4" fill="{colour}"><title>{escape(tip)}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def percentile_strip(record: dict, axis: tuple[int, int], width: int = 220, height: int = 14) -> str:
    """p50, p95 and p99 of one latency record as dots on a log time axis (the group's), joined
    by a line from p50 to p99: for an id measured at a single number of callers."""
    first, last = axis

    def x_of(ns: float) -> float:
        return 3 + fraction(ns, first, last) * (width - 6)

    mid = height / 2
    ticks = "".join(
        f'<line x1="{_f(x_of(10.0**e))}" x2="{_f(x_of(10.0**e))}" y1="1" y2="{height - 1}" stroke="#e5e5e5"/>'
        for e in range(first, last + 1)
    )
    dots = "".join(
        f'<circle cx="{_f(x_of(record[key]))}" cy="{_f(mid)}" r="3" fill="{colour}">'
        f"<title>{escape(f'{name}: {humanize.duration(record[key])}')}</title></circle>"
        for key, name, colour in PERCENTILE_STYLES
    )
    return (
        f'<svg class="strip" width="{width}" height="{height}" viewBox="0 0 {width} {height}">{ticks}'
        f'<line x1="{_f(x_of(record["p50_ns"]))}" x2="{_f(x_of(record["p99_ns"]))}" y1="{_f(mid)}" y2="{_f(mid)}" '
        f'stroke="#bbb" stroke-width="2"/>{dots}</svg>'
    )


def ratio_bar(ratio: float, low: float, high: float, reach: float, width: int = 170, height: int = 16) -> str:
    """A paired ratio (head/base time) on a log axis centred on 1x that reaches `reach` either
    way: a bar from 1x to the ratio, a whisker over the spread low..high."""
    half = (width - 4) / 2
    span = math.log10(max(reach, 1.05))

    def x_of(value: float) -> float:
        offset = max(min(math.log10(max(value, 1e-9)) / span, 1.0), -1.0)
        return 2 + half + offset * half

    centre, end = x_of(1.0), x_of(ratio)
    colour = VERDICT_COLOURS["slower" if ratio > 1 else "faster"]
    mid = height / 2
    return (
        f'<svg class="ratio" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f"<title>{escape(f'{ratio:.3f}x (spread {low:.3f}-{high:.3f})')}</title>"
        f'<line x1="{_f(centre)}" x2="{_f(centre)}" y1="0" y2="{height}" stroke="#999"/>'
        f'<rect x="{_f(min(centre, end))}" y="{_f(mid - 4)}" width="{_f(max(abs(end - centre), 1.5))}" height="8" fill="{colour}"/>'
        f'<line x1="{_f(x_of(low))}" x2="{_f(x_of(high))}" y1="{_f(mid)}" y2="{_f(mid)}" stroke="#222" stroke-width="1.4"/>'
        f'<line x1="{_f(x_of(low))}" x2="{_f(x_of(low))}" y1="{_f(mid - 4)}" y2="{_f(mid + 4)}" stroke="#222"/>'
        f'<line x1="{_f(x_of(high))}" x2="{_f(x_of(high))}" y1="{_f(mid - 4)}" y2="{_f(mid + 4)}" stroke="#222"/>'
        "</svg>"
    )
