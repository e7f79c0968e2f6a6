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

and `summary`, the root README's one table: a row per area with how often ours is ahead of
the best baseline (a peer, a crate users would pick instead, a raw client, SQL) in the same
group and tier, which baseline is fastest most often, and the geometric mean and range of
the ratio (the best baseline's median over our best median). `DOCUMENTS` says which file
holds which block: README.md the summary, docs/results.md the full tables.

The prose around the blocks is hand-written; it names ids and files, never figures of one
snapshot (they go stale: the tables carry the figures).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from . import humanize
from .compare import CALIBRATION_ID
from .criterion import tier_sort_key
from .registry import Group
from .markdown import cell, table
from .report import PEER_HEADERS, _ours_for_peer, peer_comparison

Results = dict[str, dict[str, Any]]

# Run-context keys a target's block names first: what the bench read from the servers it ran
# against (`--bench live_backends` records each server's version).
CONTEXT_LINES: dict[str, tuple[tuple[str, str], ...]] = {
    "live_backends": (("postgres", "PostgreSQL"), ("mariadb", "MariaDB"), ("redis", "Redis")),
}

MARKER = re.compile(r"<!-- results:(?P<name>[a-z0-9_-]+):begin -->\n.*?<!-- results:(?P=name):end -->", re.S)


# The files holding generated blocks, relative to the repository root: the README has the
# summary (and the machine line), docs/results.md every target's tables. A file that does
# not exist is skipped; together they must hold every block the snapshot fills.
DOCUMENTS = ("README.md", "docs/results.md")

# Implementations that are what a user would pick instead of ours: the reference servers and
# libraries (peers), other crates, raw clients and SQL/Redis baselines. An id is a baseline
# when any dotted part of its implementation is named here (`proto-blue-repo.k256`,
# `create_record.official-pds`); every other compared implementation is one of ours
# (variants such as `scalar`/`simd` included). A new peer is added here.
BASELINES = frozenset(
    {
        "official-pds", "atproto-repo-js", "atproto-repo", "atrium-repo", "proto-blue-repo",
        "jacquard-repo", "rsky-repo", "serde_ipld_dagcbor", "serde_ipld_dagcbor-0.6", "serde_cbor",
        "ciborium", "atproto-dasl", "base64-crate", "base64-simd", "crc-crate", "crc32fast",
        "btreeset", "sqlite", "postgres", "redis", "raw", "prefect-sqlite", "prefect-postgres",
        "libsecp256k1",
    }
)


def is_baseline(implementation: str) -> bool:
    """True when `implementation` is a peer or baseline rather than ours (see BASELINES)."""
    return implementation in BASELINES or any(part in BASELINES for part in implementation.split("."))


def summary_block(results: Results, registry: dict[str, Group]) -> list[str]:
    """One row per area: in each (group, tier) where ours and a baseline both ran, the ratio
    of the baseline's median to ours, taken against the baseline closest to us. Ours is our
    best row of the cell, except against a peer whose units.toml `peers` entry names the
    rows of ours that do its unit of work (`same_as`): then the slowest of those, so a
    durable peer is never set against our non-durable row."""
    cells: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for full_id, result in results.items():
        group = registry.get(result["group"])
        if group is None or group.target == "*" or result["role"] != "compare" or result["median_ns"] <= 0:
            continue
        cells[(result["group"], result["tier"])][result["implementation"]] = full_id
    areas: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
    for (group_name, tier), ids in sorted(cells.items()):
        ours = [results[i]["median_ns"] for name, i in ids.items() if not is_baseline(name)]
        if not ours:
            continue
        against = []
        for name, full_id in ids.items():
            if not is_baseline(name):
                continue
            same = [results[i]["median_ns"] for i in _ours_for_peer(results, registry, full_id)]
            mine = max(same) if same else min(ours)
            against.append((results[full_id]["median_ns"] / mine, name))
        if against:
            ratio, best = min(against)
            where = f"{group_name}/{tier}" if tier else group_name
            areas[home_target(registry[group_name])].append((ratio, best, where))
    rows = []
    for area in sorted(areas):
        ratios = areas[area]
        ahead = sum(1 for r, _, _ in ratios if r > 1)
        fastest = Counter(b for _, b, _ in ratios).most_common(1)[0][0]
        geomean = math.exp(sum(math.log(r) for r, _, _ in ratios) / len(ratios))
        low, high = min(ratios), max(ratios)
        rows.append(
            [
                f"[{area}](docs/results.md#{area})",
                f"{ahead} of {len(ratios)}",
                f"`{fastest}`",
                humanize.ratio(geomean),
                f"{humanize.ratio(low[0])} (`{low[2]}`) … {humanize.ratio(high[0])} (`{high[2]}`)",
            ]
        )
    if not rows:
        return ["No compared group has both our rows and a baseline's in this snapshot."]
    return table(
        ["area", "ours ahead (group/tier)", "fastest baseline, most often", "ratio, geomean", "ratio range"], rows
    )


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
    generated = {
        "machine": machine_block(snapshot, file_name),
        "summary": summary_block(snapshot["results"], registry),
    }
    for target in targets:
        body = target_block(snapshot["results"], registry, target)
        named = context_line(snapshot.get("context", {}), target)
        generated[target] = [named, ""] + body if body and named else body
    return generated


def context_line(context: dict[str, Any], target: str) -> str | None:
    """The servers `target` ran against, with the versions it read from them, or None."""
    found = [f"{label} {context[key]}" for key, label in CONTEXT_LINES.get(target, ()) if context.get(key)]
    return f"Servers, as the bench read them: {', '.join(found)}." if found else None


def splice(readme: str, generated: dict[str, list[str]], elsewhere: frozenset[str] = frozenset()) -> str:
    """`readme` with each marked block's body replaced; a block without markers (unless
    another document holds it: `elsewhere`), or markers without a block, is an error (the
    results would silently go stale)."""
    found = {m.group("name") for m in MARKER.finditer(readme)}
    missing = sorted(n for n, body in generated.items() if body and n not in found and n not in elsewhere)
    if missing:
        raise ReadmeError(f"no results block for: {', '.join(missing)}")
    unknown = sorted(found - set(generated))
    if unknown:
        raise ReadmeError(f"results blocks nothing generates: {', '.join(unknown)}")

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        body = "\n".join(generated[name])
        return f"<!-- results:{name}:begin -->\n{body}\n<!-- results:{name}:end -->"

    return MARKER.sub(replace, readme)


def updates(root: Path, snapshot: dict[str, Any], file_name: str, registry: dict[str, Group]) -> dict[Path, tuple[str, str]]:
    """{document: (current text, regenerated text)} for each of DOCUMENTS that exists and has
    blocks; every block the snapshot fills must be in one of them (ReadmeError otherwise). No
    document with blocks at all gives {} (a tree without generated tables)."""
    generated = blocks(snapshot, file_name, registry)
    texts = {root / name: (root / name).read_text(encoding="utf-8") for name in DOCUMENTS if (root / name).is_file()}
    texts = {path: text for path, text in texts.items() if MARKER.search(text)}
    held = {path: frozenset(m.group("name") for m in MARKER.finditer(text)) for path, text in texts.items()}
    out = {}
    for path, text in texts.items():
        elsewhere = frozenset().union(*(names for other, names in held.items() if other != path))
        try:
            out[path] = (text, splice(text, generated, elsewhere))
        except ReadmeError as error:
            raise ReadmeError(f"{path.relative_to(root)}: {error}") from None
    return out
