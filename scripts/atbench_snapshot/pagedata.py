"""What the report page (page.py) shows, gathered from one snapshot and its surroundings.

Owns:
  - the comparison groups of a snapshot, by area: per tier the rows units.toml `compare`
    ranks (peers marked), the `floor_probes` rows (drawn as a line, never ranked), and the
    adjacent probes kept apart; the group's shared log axis;
  - latency families: ids that differ only in their number of concurrent callers
    (`.callers-N` variants, `callers-N` / `consumers-N` / `cN` tiers) put together as one
    curve of p50/p95/p99 against callers;
  - each id's history: its median in every committed snapshot of the same machine
    fingerprint (machine.differences is empty) up to this one, ids renamed through
    renames.json, with that snapshot's paired verdict when it has one;
  - links to Criterion's own report of an id, only where target/criterion holds one whose
    median is this snapshot's (an older snapshot's page does not link a newer run).

Every input beyond the snapshot is optional: what cannot be read is a warning on the page.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import history, humanize, machine, svg
from .criterion import CriterionError, read_measurement, split_id, tier_sort_key

Results = dict[str, dict[str, Any]]
CALLERS_PART = re.compile(r"^(?:callers|consumers|c)-?(\d+)$")
FLOOR_FLAG = 1.5


@dataclass
class Row:
    id: str
    implementation: str
    median_ns: float
    rate: str
    peer: bool = False
    link: str | None = None
    paired: dict[str, Any] | None = None
    history: list[tuple[float, str | None, str]] = field(default_factory=list)
    why: str = ""


@dataclass
class Floor:
    probe: Row
    baseline: str
    ratio: float | None  # baseline median / probe median at this tier

    @property
    def flagged(self) -> bool:
        return self.ratio is not None and self.ratio > FLOOR_FLAG


@dataclass
class Tier:
    name: str
    rows: list[Row]
    floors: list[Floor]

    @property
    def best(self) -> float:
        return min(r.median_ns for r in self.rows)


@dataclass
class Family:
    label: str
    ids: list[str]
    records: list[dict[str, Any]]


@dataclass
class Group:
    name: str
    area: str
    unit: str
    tiers: list[Tier]
    probes: list[Row]
    unregistered: list[Row]
    families: list[Family]
    axis: tuple[int, int] | None
    latency_axis: tuple[int, int] | None = None
    callers_axis: tuple[int, int] | None = None

    @property
    def ids(self) -> list[str]:
        rows = [r for t in self.tiers for r in t.rows] + [f.probe for t in self.tiers for f in t.floors]
        return [r.id for r in rows + self.probes + self.unregistered]


def load_floor_probes(units_path: Path | None, warnings: list[str]) -> dict[str, dict[str, str]]:
    """{group: {baseline implementation: probe implementation}} from units.toml `floor_probes`."""
    if units_path is None or not units_path.is_file():
        return {}
    try:
        document = tomllib.loads(units_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        warnings.append(f"{units_path}: unreadable ({error}); no floor probes drawn")
        return {}
    floors: dict[str, dict[str, str]] = {}
    for name, table in (document.get("groups") or {}).items():
        probes = table.get("floor_probes") if isinstance(table, dict) else None
        if probes is None:
            continue
        if not isinstance(probes, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in probes.items()):
            warnings.append(f'{units_path}: [groups."{name}"] floor_probes is not a table of strings; ignored')
            continue
        floors[name] = dict(probes)
    return floors


def _same_measurement(ours: float, theirs: float) -> bool:
    return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-9)


def criterion_links(criterion_dir: Path | None, results: Results, out_dir: Path) -> dict[str, str]:
    """{id: href relative to out_dir} of Criterion's report of each id measured in this snapshot."""
    if criterion_dir is None or not criterion_dir.is_dir():
        return {}
    links: dict[str, str] = {}
    for path in sorted(criterion_dir.rglob("new/benchmark.json")):
        report = path.parent.parent / "report" / "index.html"
        if not report.is_file():
            continue
        try:
            full_id, measured = read_measurement(path)
        except CriterionError:
            continue
        result = results.get(full_id)
        if result is not None and _same_measurement(result["median_ns"], measured["median_ns"]):
            links[full_id] = Path(os.path.relpath(report, out_dir)).as_posix()
    return links


def _paired_verdicts(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    paired = snapshot.get("paired")
    if not isinstance(paired, dict):
        return {}
    return {row["id"]: row for row in paired.get("rows") or [] if isinstance(row, dict) and isinstance(row.get("id"), str)}


def history_series(
    history_dir: Path | None, snapshot_path: Path, snapshot: dict[str, Any], warnings: list[str]
) -> tuple[dict[str, list[tuple[float, str | None, str]]], int]:
    """({id: [(median ns, paired verdict or None, label)] oldest first}, snapshots used): the
    committed snapshots of this one's machine fingerprint up to it, and this one."""
    current = machine.of_snapshot(snapshot)
    match = history.SNAPSHOT_NAME.match(snapshot_path.name)
    created = snapshot.get("created", "")
    older: list[tuple[str, dict[str, Any]]] = []
    renames: dict[str, str] = {}
    if history_dir is not None and history_dir.is_dir():
        try:
            renames = history.load_renames(history_dir / "renames.json")
        except history.HistoryError as error:
            warnings.append(f"history: {error}; ids not renamed")
        for path in history.snapshot_files(history_dir):
            if path.resolve() == snapshot_path.resolve():
                continue
            stamp = history.SNAPSHOT_NAME.match(path.name).group(1)
            if match is not None and stamp >= match.group(1):
                continue
            try:
                other = history.load_snapshot(path)
            except history.HistoryError as error:
                warnings.append(f"history: {error}; left out")
                continue
            if match is None and other.get("created", "") >= created:
                continue
            if current is None or machine.differences(current, machine.of_snapshot(other)):
                continue
            try:
                results = history.apply_renames(other.get("results", {}), renames)
            except history.HistoryError as error:
                warnings.append(f"history: {path.name}: {error}; left out")
                continue
            older.append((other.get("created", path.name), {**other, "results": results}))
    series: dict[str, list[tuple[float, str | None, str]]] = defaultdict(list)
    for label, other in [*older, (created or snapshot_path.name, snapshot)]:
        verdicts = _paired_verdicts(other)
        for full_id, result in other.get("results", {}).items():
            median = result.get("median_ns")
            if isinstance(median, (int, float)) and median > 0:
                series[full_id].append((float(median), (verdicts.get(full_id) or {}).get("verdict"), label))
    return dict(series), len(older) + 1


def _rate(result: dict[str, Any]) -> str:
    kind = result["throughput"]["kind"] if result.get("throughput") else None
    return humanize.rate(result.get("throughput_per_sec"), kind)


def family_key(full_id: str) -> tuple[str, int | None]:
    """(family label, callers written in the id or None): the id without its callers part."""
    group, implementation, tier = split_id(full_id)
    base, dot, variant = implementation.rpartition(".")
    found = CALLERS_PART.match(variant) if dot else None
    if found:
        return "/".join(p for p in (group, base, tier) if p), int(found.group(1))
    found = CALLERS_PART.match(tier)
    if found:
        return f"{group}/{implementation}", int(found.group(1))
    return full_id, None


def latency_families(results: Results, ids: list[str]) -> list[Family]:
    """The latency curves of a group's ids that carry a latency sidecar."""
    families: dict[str, Family] = {}
    for full_id in ids:
        latency = results[full_id].get("latency")
        if not latency:
            continue
        label, _ = family_key(full_id)
        family = families.setdefault(label, Family(label, [], []))
        family.ids.append(full_id)
        family.records.append(latency)
    for family in families.values():
        order = sorted(range(len(family.ids)), key=lambda i: family.records[i]["callers"])
        family.ids = [family.ids[i] for i in order]
        family.records = [family.records[i] for i in order]
    return [families[k] for k in sorted(families)]


def _latency_axes(families: list[Family]) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    values = [r[k] for f in families for r in f.records for k in ("p50_ns", "p95_ns", "p99_ns") if r[k] > 0]
    callers = [r["callers"] for f in families for r in f.records if r["callers"] > 0]
    if not values or not callers:
        return None, None
    y_axis = svg.decades(min(values), max(values), margin=0.0)
    x_axis = (0, max(math.ceil(math.log10(max(callers))), 1))
    return y_axis, x_axis


def _why_apart(group_rows: list[dict[str, Any]]) -> str:
    if all(r["role"] == "probe" for r in group_rows):
        return "the group is a probe"
    return "implementation not in compare"


def build_groups(
    results: Results,
    floor_probes: dict[str, dict[str, str]],
    links: dict[str, str],
    series: dict[str, list[tuple[float, str | None, str]]],
    paired: dict[str, dict[str, Any]],
) -> list[Group]:
    """Every group of the snapshot, by area then name."""
    by_group: dict[str, list[str]] = defaultdict(list)
    for full_id in sorted(results):
        by_group[results[full_id]["group"]].append(full_id)
    groups = []
    for name in sorted(by_group):
        ids = by_group[name]
        rows = [results[i] for i in ids]
        floors = floor_probes.get(name, {})
        probe_impls = set(floors.values())

        def row(full_id: str) -> Row:
            result = results[full_id]
            return Row(
                full_id,
                result["implementation"],
                result["median_ns"],
                _rate(result),
                result.get("source") == "peer",
                links.get(full_id),
                paired.get(full_id),
                series.get(full_id, []),
            )

        tiers: dict[str, list[Row]] = defaultdict(list)
        floor_rows: dict[str, dict[str, Row]] = defaultdict(dict)
        probes, unregistered = [], []
        for full_id in ids:
            result = results[full_id]
            if result["implementation"] in probe_impls:
                floor_rows[result["tier"]][result["implementation"]] = row(full_id)
            elif result.get("role") == "compare":
                tiers[result["tier"]].append(row(full_id))
            elif result.get("role") == "probe":
                probes.append(row(full_id))
                probes[-1].why = _why_apart(rows)
            else:
                unregistered.append(row(full_id))
                unregistered[-1].why = "the group is not in units.toml"
        for tier_name, probe_by_impl in floor_rows.items():
            if tier_name not in tiers:
                probes.extend(probe_by_impl.values())
                for probe in probe_by_impl.values():
                    probe.why = "floor probe without a compared row at its tier"
        tier_list = []
        for tier_name in sorted(tiers, key=tier_sort_key):
            tier_rows = sorted(tiers[tier_name], key=lambda r: (r.median_ns, r.id))
            tier_floors = []
            for baseline, probe_impl in sorted(floors.items()):
                probe = floor_rows.get(tier_name, {}).get(probe_impl)
                if probe is None:
                    continue
                base = next((r for r in tier_rows if r.implementation == baseline), None)
                ratio = base.median_ns / probe.median_ns if base and probe.median_ns > 0 else None
                tier_floors.append(Floor(probe, baseline, ratio))
            tier_list.append(Tier(tier_name, tier_rows, tier_floors))
        medians = [r.median_ns for t in tier_list for r in t.rows] + [f.probe.median_ns for t in tier_list for f in t.floors]
        medians = [m for m in medians if m > 0]
        axis = svg.decades(min(medians), max(medians)) if medians else None
        families = latency_families(results, ids)
        latency_axis, callers_axis = _latency_axes(families)
        groups.append(
            Group(
                name,
                name.split(".", 1)[0],
                next((r["unit"] for r in rows if r.get("unit")), "") or "",
                tier_list,
                probes,
                unregistered,
                families,
                axis,
                latency_axis,
                callers_axis,
            )
        )
    return groups
