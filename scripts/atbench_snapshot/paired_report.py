"""latest.md's paired parts: the opening verdicts, the paired table, the floor-probe table.

Owns, from the snapshot's "paired" record (remeasure.Result.record) alone, so a page built
from the JSON says the same:
  - the opening lines: what was re-measured and why, what read "code unchanged", the floor
    ("this run could see changes above N %") and the controls that set it, the verdict count
    and the flagged rows; or, without a re-measurement, why there are no verdicts;
  - the full paired table (every re-measured row, controls marked);
  - the floor-probe table: per units.toml `floor_probes` entry, each tier's baseline row
    against its probe (the same statement through an independent mainstream client), the
    ratio baseline / probe, flagged past FLOOR_PROBE_LIMIT;
  - the one-line summary bench_snapshot.py prints.
"""

from __future__ import annotations

from typing import Any

from . import humanize
from .criterion import tier_sort_key
from .markdown import cell, table
from .registry import Group

FLOOR_PROBE_LIMIT = 1.5

Results = dict[str, dict[str, Any]]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def row_cells(row: dict[str, Any]) -> list[str]:
    word = row["verdict"] if row["verdict"] == "same" else f"**{row['verdict']}**"
    return [
        f"`{row['id']}`",
        row["target"] + (" (control)" if row["control"] else ""),
        humanize.duration(_median(row["base_ns"])),
        humanize.duration(_median(row["head_ns"])),
        f"{row['ratio']:.3f}",
        f"{row['min']:.3f} – {row['max']:.3f}",
        "–" if row.get("noise_pct") is None else f"{row['noise_pct']:.1f} %",
        word,
    ]


HEADERS = ["id", "target", "baseline", "this tree", "ratio (median)", "pairs min – max", "own noise", "verdict"]


def counts(paired: dict[str, Any]) -> dict[str, int]:
    ours = [r for r in paired["rows"] if not r["control"]]
    return {word: sum(1 for r in ours if r["verdict"] == word) for word in ("slower", "faster", "same")}


def opening(paired: dict[str, Any] | None, why_not: str | None, results: Results) -> list[str]:
    """The first section of latest.md."""
    lines = ["", "## Verdicts (paired re-measurement)", ""]
    if paired is None:
        return lines + [
            f"No verdicts: not re-measured ({cell(why_not or 'no baseline')}). Medians only; the "
            "cross-run deltas below are information, not verdicts. Verdicts come from re-measuring the "
            "baseline commit beside this tree: run `python3 scripts/bench_snapshot.py` without `--no-remeasure`."
        ]
    base = paired["baseline"]
    head = paired["head"]
    remeasured = {t: n for t, n in paired["targets"].items() if n["remeasured"]}
    unchanged = sorted(t for t, n in paired["targets"].items() if not n["remeasured"] and n["why"] == "code unchanged")
    skipped = {t: n["why"] for t, n in paired["targets"].items() if not n["remeasured"] and n["why"] != "code unchanged"}
    against = (
        f"the baseline commit `{base['commit'][:12]}` (of {base['snapshot']}) rebuilt and measured here beside "
        f"this tree (`{head['commit'][:12]}`{' + uncommitted changes' if head['dirty'] else ''})"
    )
    if not remeasured:
        lines.append(
            f"**No verdicts: nothing re-measured.** The change since the baseline commit `{base['commit'][:12]}` "
            f"(of {base['snapshot']}) reaches no bench target that ran here: its ids read \"code unchanged\"."
        )
    else:
        c = counts(paired)
        spread = paired["controls_spread_pct"]
        controls = sum(1 for r in paired["rows"] if r["control"])
        floor_note = (
            f"the controls' spread {spread:.1f} % over {controls} control rows"
            if spread is not None
            else "no control row ran, so only the 2 % minimum"
        )
        lines += [
            f"**{c['slower']} slower, {c['faster']} faster, {c['same']} same** of "
            f"{c['slower'] + c['faster'] + c['same']} ids re-measured, against {against}: "
            f"{paired['pairs']} pairs per id, the two builds seconds apart.",
            "",
            f"**Each row is held to the floor of its kind of work** (the larger of 2 % and the spread of "
            f"that kind's controls, the rows the change cannot reach; all controls' floor, "
            f"{paired['floor_pct']:.1f} % from {floor_note}, where a kind has none). A verdict needs every pair to agree in "
            "direction and the median paired ratio past the floor and past the row's own noise (how far "
            "one build's measurements of it moved from pair to pair).",
        ]
    lines.append("")
    for target, note in sorted(remeasured.items()):
        unpaired = note.get("unpaired") or []
        extra = f"; {len(unpaired)} id(s) only one build runs, unpaired" if unpaired else ""
        mode = f", {note['mode']}" if note.get("mode") else ""
        lines.append(f"- Re-measured **{target}**{mode}: {cell(note['why'])}{extra}.")
    for target, why in sorted(skipped.items()):
        lines.append(f"- Not re-measured **{target}**: {cell(why)}.")
    if unchanged:
        lines.append(f"- Code unchanged (no verdict, not re-measured): {', '.join(unchanged)}.")
    flagged = [r for r in paired["rows"] if r["verdict"] != "same"]
    if flagged:
        lines += [""] + table(HEADERS, [row_cells(r) for r in flagged])
    return lines


def closing(paired: dict[str, Any] | None, results: Results, registry: dict[str, Group]) -> list[str]:
    """The full paired table and the floor-probe table (each only when it has rows)."""
    lines: list[str] = []
    if paired and paired["rows"]:
        lines += [
            "",
            "## Paired re-measurement: every row",
            "",
            "ratio = this tree / baseline per pair (above 1 is slower); controls set the floor and never get a verdict.",
            "",
        ] + table(HEADERS, [row_cells(r) for r in paired["rows"]])
    lines += floor_probes(results, registry)
    return lines


def floor_probe_rows(results: Results, registry: dict[str, Group]) -> list[dict[str, Any]]:
    """One entry per (group, baseline implementation, probe implementation, tier) present in
    the results: both medians and the ratio baseline / probe."""
    rows = []
    for name, group in sorted(registry.items()):
        for baseline, probe in sorted(group.floor_probes.items()):
            tiers = sorted(
                {r["tier"] for r in results.values() if r["group"] == name and r["implementation"] == baseline},
                key=tier_sort_key,
            )
            for tier in tiers:
                suffix = f"/{tier}" if tier else ""
                base_id, probe_id = f"{name}/{baseline}{suffix}", f"{name}/{probe}{suffix}"
                if base_id not in results or probe_id not in results:
                    continue
                base_ns, probe_ns = results[base_id]["median_ns"], results[probe_id]["median_ns"]
                rows.append({"baseline": base_id, "probe": probe_id, "baseline_ns": base_ns, "probe_ns": probe_ns,
                             "ratio": base_ns / probe_ns if probe_ns > 0 else float("inf")})
    return rows


def floor_probes(results: Results, registry: dict[str, Group]) -> list[str]:
    rows = floor_probe_rows(results, registry)
    if not rows:
        return []
    flagged = sum(1 for r in rows if r["ratio"] > FLOOR_PROBE_LIMIT)
    lines = [
        "",
        "## Baselines against their floor probes",
        "",
        "Each baseline row beside the same statement on the same data through an independent mainstream "
        f"client (units.toml `floor_probes`), same run. A baseline more than {FLOOR_PROBE_LIMIT:g}x its probe is "
        f"a defect of the bench to fix or explain: {flagged} of {len(rows)} here.",
        "",
    ]
    table_rows = []
    for r in rows:
        ratio = humanize.ratio(r["ratio"])
        table_rows.append([
            f"`{r['baseline']}`", humanize.duration(r["baseline_ns"]), f"`{r['probe']}`", humanize.duration(r["probe_ns"]),
            f"**{ratio} ⚠**" if r["ratio"] > FLOOR_PROBE_LIMIT else ratio,
        ])
    return lines + table(["baseline row", "median", "floor probe", "probe median", "baseline / probe"], table_rows)


def summary_line(paired: dict[str, Any] | None, why_not: str | None) -> str:
    if paired is None:
        return f"no verdicts: not re-measured ({why_not})"
    c = counts(paired)
    measured = sorted(t for t, n in paired["targets"].items() if n["remeasured"])
    if not measured:
        return "no verdicts: the change reaches no bench target that ran (code unchanged)"
    return (
        f"{c['slower']} slower, {c['faster']} faster, {c['same']} same (paired, {paired['pairs']} pairs, "
        f"floor {paired['floor_pct']:.1f} %) in {', '.join(measured)}"
    )


def paired_cell(full_id: str, result: dict[str, Any], paired: dict[str, Any] | None, targets_of) -> str:
    """The "paired" column of the full results table for one id."""
    if paired is None:
        return "—"
    rows = [r for r in paired["rows"] if r["id"] == full_id]
    if rows:
        return "; ".join(
            (f"**{r['verdict']}**" if r["verdict"] != "same" else "same") + f" {r['ratio']:.3f}"
            + (" (control)" if r["control"] else "")
            for r in rows
        )
    notes = [paired["targets"].get(t) for t in targets_of(full_id)]
    if notes and all(n is not None and not n["remeasured"] and n["why"] == "code unchanged" for n in notes):
        return "code unchanged"
    return "not paired"
