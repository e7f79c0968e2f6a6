"""The README's generated result tables.

Owns the blocks of README.md between `<!-- results:<name>:begin -->` and
`<!-- results:<name>:end -->`: `machine` (which snapshot, which machine, the calibration
figure) and one block per bench target (`hotpath`, `repo`, `segment`, `store`, ...) with

- a pivot table per compared group (tiers down, implementations across in units.toml's
  `compare` order, each cell the median, the throughput when there is one, and the ratio to
  the best cell of its tier, the best in bold);
- the latency percentiles of the concurrent-caller rows;
- the peers measured in the same run, each beside our rows of the same unit of work;
- every other row of the target (single-implementation groups, adjacent probes).

The prose around the blocks is hand-written; it names ids and files, never figures of one
snapshot (they go stale: the tables carry the figures).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from . import humanize
from .compare import CALIBRATION_ID
from .criterion import tier_sort_key
from .registry import Group
from .markdown import cell, table
from .report import PEER_HEADERS, peer_comparison

Results = dict[str, dict[str, Any]]

# Run-context keys a target's block names first: what the bench read from the servers it ran
# against (`--bench live_backends` records each server's version).
CONTEXT_LINES: dict[str, tuple[tuple[str, str], ...]] = {
    "live_backends": (("postgres", "PostgreSQL"), ("mariadb", "MariaDB"), ("redis", "Redis")),
}

MARKER = re.compile(r"<!-- results:(?P<name>[a-z0-9_-]+):begin -->\n.*?<!-- results:(?P=name):end -->", re.S)


class ReadmeError(Exception):
    """The README lacks a block the snapshot needs, or has one nobody fills."""


def _rate(result: dict[str, Any]) -> str | None:
    if not result.get("throughput") or result.get("throughput_per_sec") is None:
        return None
    return humanize.rate(result["throughput_per_sec"], result["throughput"]["kind"])


def machine_block(snapshot: dict[str, Any], file_name: str) -> list[str]:
    """Which snapshot the tables come from and how fast its machine was."""
    cpu = snapshot.get("cpu", {})
    calibration = snapshot["results"].get(CALIBRATION_ID)
    speed = (
        f"`{CALIBRATION_ID}` = {humanize.duration(calibration['median_ns'])}"
        f" ({_rate(calibration) or '—'})"
        if calibration
        else f"no `{CALIBRATION_ID}` row"
    )
    return [
        f"Generated from `bench-history/{file_name}` ({snapshot.get('created', '?')}, commit "
        f"`{str(snapshot.get('git', {}).get('commit') or '?')[:12]}`): {cpu.get('model', '?')}, "
        f"{cpu.get('cores', '?')} cores; calibration {speed}.",
    ]


def _pivot(group: Group, ids: list[str], results: Results) -> list[str]:
    present = {results[i]["implementation"] for i in ids}
    columns = [c for c in group.compare if c in present]
    by_tier: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for full_id in ids:
        result = results[full_id]
        by_tier[result["tier"]][result["implementation"]] = result
    rows = []
    for tier in sorted(by_tier, key=tier_sort_key):
        cells = by_tier[tier]
        best = min(r["median_ns"] for r in cells.values())
        row = [tier or "—"]
        for column in columns:
            result = cells.get(column)
            if result is None:
                row.append("—")
                continue
            text = humanize.duration(result["median_ns"])
            rate = _rate(result)
            if rate is not None:
                text += f", {rate}"
            ratio = result["median_ns"] / best if best > 0 else 1.0
            text += f" ({humanize.ratio(ratio)})"
            row.append(f"**{text}**" if result["median_ns"] == best else text)
        rows.append(row)
    return [f"`{group.name}`: {cell(group.unit)}", ""] + table(["tier"] + columns, rows) + [""]


def home_target(group: Group) -> str:
    """The README block a group's rows go to: its (first) target. A group whose rows come
    from several targets (`target = "appview,live_backends"`) is tabled once, under the
    first, all its rows side by side."""
    return group.target.split(",")[0].strip()


def target_block(results: Results, registry: dict[str, Group], target: str) -> list[str]:
    """The tables of one bench target's results."""
    mine = {
        i: r for i, r in results.items() if registry.get(r["group"]) and home_target(registry[r["group"]]) == target
    }
    compared: dict[str, list[str]] = defaultdict(list)
    for full_id, result in mine.items():
        if result["role"] == "compare" and not result.get("latency"):
            compared[result["group"]].append(full_id)
    lines: list[str] = []
    pivoted: set[str] = set()
    for name in sorted(compared):
        implementations = {mine[i]["implementation"] for i in compared[name]}
        if len(implementations) >= 2:
            lines += _pivot(registry[name], compared[name], mine)
            pivoted.update(compared[name])
    latency_rows = [
        [
            f"`{i}`",
            humanize.count(r["latency"]["ops_per_sec"]),
            *(humanize.duration(r["latency"][f]) for f in ("p50_ns", "p95_ns", "p99_ns")),
            humanize.cpu_per_op(r["latency"]),
        ]
        for i, r in sorted(mine.items())
        if r.get("latency")
    ]
    if latency_rows:
        lines += [
            "Concurrent callers (latency per operation; CPU/op = the process's CPU time per operation, "
            "and where recorded the whole machine's, servers included):",
            "",
        ]
        lines += table(["id", "ops/s", "p50", "p95", "p99", "CPU/op"], latency_rows) + [""]
    peer_rows = peer_comparison(mine, registry)
    if peer_rows:
        lines += [
            "Reference implementations in the same run (`BENCH_PEERS=1`, probes in `peers/`; "
            "benches/units.toml `peers` says how each path differs):",
            "",
        ]
        lines += table(PEER_HEADERS, peer_rows) + [""]
    other_rows = [
        [f"`{i}`", humanize.duration(r["median_ns"]), _rate(r) or "—"]
        for i, r in sorted(mine.items())
        if i not in pivoted and not r.get("latency")
    ]
    if other_rows:
        lines += table(["id", "median", "throughput"], other_rows) + [""]
    return lines[:-1] if lines and lines[-1] == "" else lines


def blocks(snapshot: dict[str, Any], file_name: str, registry: dict[str, Group]) -> dict[str, list[str]]:
    """Every generated block, keyed by marker name."""
    targets = sorted({home_target(g) for g in registry.values() if g.target != "*"})
    generated = {"machine": machine_block(snapshot, file_name)}
    for target in targets:
        body = target_block(snapshot["results"], registry, target)
        named = context_line(snapshot.get("context", {}), target)
        generated[target] = [named, ""] + body if body and named else body
    return generated


def context_line(context: dict[str, Any], target: str) -> str | None:
    """The servers `target` ran against, with the versions it read from them, or None."""
    found = [f"{label} {context[key]}" for key, label in CONTEXT_LINES.get(target, ()) if context.get(key)]
    return f"Servers, as the bench read them: {', '.join(found)}." if found else None


def splice(readme: str, generated: dict[str, list[str]]) -> str:
    """`readme` with each marked block's body replaced; a block without markers, or markers
    without a block, is an error (the README would silently go stale)."""
    found = {m.group("name") for m in MARKER.finditer(readme)}
    missing = sorted(n for n, body in generated.items() if body and n not in found)
    if missing:
        raise ReadmeError(f"README has no results block for: {', '.join(missing)}")
    unknown = sorted(found - set(generated))
    if unknown:
        raise ReadmeError(f"README has results blocks nothing generates: {', '.join(unknown)}")

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        body = "\n".join(generated[name])
        return f"<!-- results:{name}:begin -->\n{body}\n<!-- results:{name}:end -->"

    return MARKER.sub(replace, readme)
