#!/usr/bin/env python3
"""Charts of one benchmark snapshot (entry point).

    python3 scripts/bench_charts.py [--history-dir bench-history] [--snapshot FILE] [--out bench-artifacts]

Reads the newest bench-history/bench-<UTC>.json (or --snapshot FILE) and writes, with no
dependency beyond the Python 3.11 standard library:
  latency.svg     p50/p95/p99 bars (log scale) for every id with a latency sidecar,
                  in sections by number of concurrent callers;
  throughput.svg  horizontal throughput bars for the same-run comparison rows (role
                  "compare"), one panel per group and tier, the best in a stronger colour;
  index.html      both charts inline and a table of the snapshot.
This file owns the chart layout and the HTML page; every piece of text is escaped.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Any

from atbench_snapshot import humanize
from atbench_snapshot.criterion import tier_sort_key
from atbench_snapshot.history import HistoryError, load_snapshot, snapshot_files

REPO_ROOT = Path(__file__).resolve().parent.parent
WIDTH = 960
LABEL_WIDTH = 340
PLOT_LEFT = LABEL_WIDTH + 10
PLOT_RIGHT = WIDTH - 110
THROUGHPUT_RIGHT = WIDTH - 190  # room for "8.38 GiB/s (1.03x slower)" after the longest bar
PERCENTILES = (("p50_ns", "p50", "#4e79a7"), ("p95_ns", "p95", "#f28e2b"), ("p99_ns", "p99", "#e15759"))
BAR_COLOUR = "#9ab7d3"
BEST_COLOUR = "#2f6b9a"

Results = dict[str, dict[str, Any]]


def text(x: float, y: float, content: str, anchor: str = "start", weight: str = "normal", size: int = 12) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-weight="{weight}" '
        f'font-size="{size}">{escape(content)}</text>'
    )


def rect(x: float, y: float, width: float, height: float, colour: str, tooltip: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(width, 1.0):.1f}" height="{height:.1f}" '
        f'fill="{colour}"><title>{escape(tooltip)}</title></rect>'
    )


def svg_document(height: float, title: str, body: list[str]) -> str:
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
            f'viewBox="0 0 {WIDTH} {height:.0f}" font-family="sans-serif" role="img">',
            f"<title>{escape(title)}</title>",
            f'<rect x="0" y="0" width="{WIDTH}" height="{height:.0f}" fill="white"/>',
            text(10, 22, title, weight="bold", size=15),
            *body,
            "</svg>",
            "",
        ]
    )


def empty_chart(title: str, message: str) -> str:
    return svg_document(70, title, [text(10, 50, message)])


def latency_svg(results: Results) -> str:
    """p50/p95/p99 per id on a log time axis, one section per number of callers."""
    title = "Latency percentiles by concurrent callers (log scale)"
    by_callers: dict[int, list[str]] = defaultdict(list)
    for full_id, result in sorted(results.items()):
        if result.get("latency"):
            by_callers[result["latency"]["callers"]].append(full_id)
    if not by_callers:
        return empty_chart(title, "No latency sidecars in this snapshot.")
    values = [results[i]["latency"][key] for ids in by_callers.values() for i in ids for key, _, _ in PERCENTILES]
    positive = [v for v in values if v > 0] or [1.0]
    low = math.floor(math.log10(min(positive)))
    high = max(math.ceil(math.log10(max(positive))), low + 1)

    def x_of(ns: float) -> float:
        fraction = (math.log10(max(ns, 10.0**low)) - low) / (high - low)
        return PLOT_LEFT + fraction * (PLOT_RIGHT - PLOT_LEFT)

    body = []
    for index, (_, label, colour) in enumerate(PERCENTILES):
        body.append(rect(PLOT_LEFT + index * 70, 34, 12, 12, colour, label))
        body.append(text(PLOT_LEFT + index * 70 + 16, 44, label))
    top = 70
    rows_height = sum(24 + 34 * len(ids) for ids in by_callers.values())
    for exponent in range(low, high + 1):
        x = x_of(10.0**exponent)
        body.append(f'<line x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{top + rows_height}" stroke="#dddddd"/>')
        body.append(text(x, top - 12, humanize.duration(10.0**exponent), anchor="middle", size=10))
    y = top
    for callers, ids in sorted(by_callers.items()):
        body.append(text(10, y + 16, f"{callers} caller{'s' if callers != 1 else ''}", weight="bold"))
        y += 24
        for full_id in ids:
            latency = results[full_id]["latency"]
            body.append(text(LABEL_WIDTH, y + 17, full_id, anchor="end"))
            for index, (key, label, colour) in enumerate(PERCENTILES):
                bar_y = y + 3 + index * 9
                body.append(
                    rect(
                        PLOT_LEFT,
                        bar_y,
                        x_of(latency[key]) - PLOT_LEFT,
                        8,
                        colour,
                        f"{full_id} {label} = {humanize.duration(latency[key])}",
                    )
                )
            body.append(text(x_of(latency["p99_ns"]) + 4, y + 29, humanize.duration(latency["p99_ns"]), size=10))
            y += 34
    return svg_document(y + 10, title, body)


def comparison_panels(results: Results) -> dict[tuple[str, str], list[str]]:
    """Ids of same-run comparison rows that have a throughput, by (group, tier)."""
    panels: dict[tuple[str, str], list[str]] = defaultdict(list)
    for full_id, result in sorted(results.items()):
        if result.get("role") == "compare" and result.get("throughput_per_sec"):
            panels[(result["group"], result["tier"])].append(full_id)
    return dict(sorted(panels.items(), key=lambda item: (item[0][0], tier_sort_key(item[0][1]))))


def throughput_svg(results: Results) -> str:
    """Horizontal throughput bars, one panel per comparison group and tier, best first."""
    title = "Throughput of same-run comparisons (higher is better)"
    panels = comparison_panels(results)
    if not panels:
        return empty_chart(title, "No same-run comparison rows with a throughput in this snapshot.")
    body = []
    y = 40
    for (group, tier), ids in panels.items():
        body.append(text(10, y + 16, f"{group} · {tier}" if tier else group, weight="bold"))
        y += 24
        best = max(results[i]["throughput_per_sec"] for i in ids)
        for full_id in sorted(ids, key=lambda i: (-results[i]["throughput_per_sec"], i)):
            result = results[full_id]
            rate = result["throughput_per_sec"]
            shown = humanize.rate(rate, result["throughput"]["kind"])
            ratio = f"{best / rate:.2f}x slower" if rate < best else "best"
            width = (rate / best) * (THROUGHPUT_RIGHT - PLOT_LEFT)
            colour = BEST_COLOUR if rate == best else BAR_COLOUR
            body.append(text(LABEL_WIDTH, y + 14, result["implementation"], anchor="end"))
            body.append(rect(PLOT_LEFT, y + 2, width, 16, colour, f"{full_id}: {shown} ({ratio})"))
            body.append(text(PLOT_LEFT + width + 4, y + 14, f"{shown} ({ratio})", size=10))
            y += 22
        y += 10
    return svg_document(y, title, body)


def _snapshot_table(results: Results) -> list[str]:
    headers = ["id", "role", "median", "95% CI", "throughput", "p50", "p99", "unit of work"]
    lines = ["<table>", "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr></thead>", "<tbody>"]
    for full_id, result in sorted(results.items()):
        latency = result.get("latency") or {}
        kind = result["throughput"]["kind"] if result.get("throughput") else None
        cells = [
            full_id,
            result.get("role", ""),
            humanize.duration(result["median_ns"]),
            f"{humanize.duration(result['ci_lower_ns'])} – {humanize.duration(result['ci_upper_ns'])}",
            humanize.rate(result.get("throughput_per_sec"), kind),
            humanize.duration(latency["p50_ns"]) if latency else "—",
            humanize.duration(latency["p99_ns"]) if latency else "—",
            result.get("unit") or "unregistered",
        ]
        lines.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    return lines + ["</tbody>", "</table>"]


def index_html(snapshot: dict[str, Any], source_name: str, latency: str, throughput: str) -> str:
    """A self-contained page: run header, both charts inline, and the snapshot table."""
    cpu = snapshot.get("cpu", {})
    git = snapshot.get("git", {})
    facts = [
        ("Snapshot", source_name),
        ("Label", snapshot.get("label", "")),
        ("Tag", snapshot.get("tag") or "—"),
        ("Created", snapshot.get("created", "")),
        ("Commit", (git.get("commit") or "unknown") + (" (dirty)" if git.get("dirty") else "")),
        ("Machine", f"{cpu.get('model', 'unknown')}, {cpu.get('cores', '?')} cores"),
        ("Toolchain", f"{snapshot.get('rustc', 'unknown')}; {snapshot.get('os', 'unknown')}"),
        ("Criterion", snapshot.get("criterion_version", "unknown")),
        ("Dataset", snapshot.get("dataset", {}).get("fingerprint", "unknown")),
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f"<title>atbench snapshot {escape(snapshot.get('created', ''))}</title>",
            "<style>body{font-family:sans-serif;margin:2em;max-width:1000px}"
            "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}"
            "dt{font-weight:bold;float:left;width:7em}dd{margin-left:8em}</style>",
            "</head>",
            "<body>",
            "<!-- generated by scripts/bench_charts.py; do not edit -->",
            f"<h1>atbench snapshot {escape(snapshot.get('created', ''))}</h1>",
            "<dl>",
            *[f"<dt>{escape(name)}</dt><dd>{escape(str(value))}</dd>" for name, value in facts],
            "</dl>",
            "<h2>Latency</h2>",
            latency,
            "<h2>Throughput</h2>",
            throughput,
            "<h2>All results</h2>",
            *_snapshot_table(snapshot.get("results", {})),
            "</body>",
            "</html>",
            "",
        ]
    )


def newest_snapshot(history_dir: Path) -> Path:
    files = snapshot_files(history_dir)
    if not files:
        raise HistoryError(f"no bench-<UTC>.json snapshot in {history_dir} (run scripts/bench_snapshot.py first)")
    return files[-1]


def write_charts(snapshot_path: Path, out_dir: Path) -> list[Path]:
    """Write latency.svg, throughput.svg and index.html for one snapshot; returns their paths."""
    snapshot = load_snapshot(snapshot_path)
    results = snapshot.get("results", {})
    latency, throughput = latency_svg(results), throughput_svg(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "latency.svg": latency,
        "throughput.svg": throughput,
        "index.html": index_html(snapshot, snapshot_path.name, latency, throughput),
    }
    for name, content in files.items():
        (out_dir / name).write_text(content, encoding="utf-8")
    return [out_dir / name for name in files]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_charts.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--history-dir", type=Path, default=REPO_ROOT / "bench-history", help="where the snapshots are")
    parser.add_argument("--snapshot", type=Path, help="chart this snapshot JSON instead of the newest one")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-artifacts", help="output directory")
    args = parser.parse_args(argv)
    try:
        written = write_charts(args.snapshot or newest_snapshot(args.history_dir), args.out)
    except HistoryError as error:
        print(f"bench_charts: error: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
