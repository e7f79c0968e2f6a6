"""latest.md's first screen: what a reviewer reads before scrolling, at most 30 lines.

Owns, from the snapshot JSON (and the cross-run comparison) alone:
  - the label, head and base commits, same machine or not, the load;
  - the counts ("2 slower, 5 faster, 31 same, 705 code unchanged");
  - the floor of each kind of work (kinds.py), the changes this run could see;
  - what was re-measured and why (one line);
  - the verdict table, slower first, at most 20 rows (fewer when the lines above need the
    room), then "… N more";
  - only the warnings that change the reading: a kind whose rows were judged on another
    kind's floor, ids unpaired, a baseline from another machine.
Under --no-remeasure: the counts only, nothing bold; the cross-run deltas are named only when
the two runs' loads and calibrations agree (`cross_run_comparable`), else why they are not.
Everything else goes below the screen's end marker or into bench-history/<snapshot>.md.
"""

from __future__ import annotations

from typing import Any

from . import machine
from .kinds import KINDS
from .markdown import cell, table

LIMIT = 30
ROWS = 20
END = "<!-- end of the first screen -->"
LOAD_TOLERANCE = 1.0  # 15-minute load averages within this of each other "agree"
ORDER = {"slower": 0, "faster": 1, "same": 2}


def _load(snapshot: dict[str, Any]) -> float | None:
    load = snapshot.get("load")
    return load.get("15m") if isinstance(load, dict) else None


def cross_run_comparable(snapshot: dict[str, Any], baseline: dict[str, Any] | None) -> tuple[bool, str]:
    """Whether cross-run deltas against `baseline` mean anything: both runs' 15-minute loads
    recorded and within LOAD_TOLERANCE, and every shared calibration kernel within
    machine.CALIBRATION_TOLERANCE. (False, why) otherwise."""
    if baseline is None:
        return False, "no earlier snapshot"
    here, there = _load(snapshot), _load(baseline)
    if here is None or there is None:
        return False, "a run's load was not recorded"
    if abs(here - there) > LOAD_TOLERANCE:
        return False, f"loads differ ({here:.1f} here, {there:.1f} there)"
    ours = machine.calibration_medians(snapshot.get("results", {}))
    theirs = machine.calibration_medians(baseline.get("results", {}))
    shared = sorted(set(ours) & set(theirs))
    if not shared:
        return False, "no calibration kernel in both runs"
    for kernel in shared:
        move = ours[kernel] / theirs[kernel] - 1 if theirs[kernel] > 0 else float("inf")
        if abs(move) > machine.CALIBRATION_TOLERANCE:
            return False, f"calibration moved ({kernel} {move * 100:+.0f} %)"
    return True, "loads and calibrations agree"


def _commit(git: dict[str, Any] | None) -> str:
    git = git or {}
    if not git.get("commit"):
        return "unknown"
    return f"`{git['commit'][:12]}`" + (" + uncommitted changes" if git.get("dirty") else "")


def floors_line(paired: dict[str, Any]) -> str:
    kinds = paired.get("floors_by_kind") or {}
    parts = []
    for kind in list(KINDS) + sorted(set(kinds) - set(KINDS)):
        k = kinds.get(kind)
        if k is None:
            parts.append(f"{kind} –")
        elif k["controls_spread_pct"] is None:
            parts.append(f"{kind} {k['floor_pct']:.1f} % (no {kind} control: all controls')")
        else:
            parts.append(f"{kind} {k['floor_pct']:.1f} % ({k['controls']} controls)")
    return "Floors by kind (the changes this run could see): " + " · ".join(parts) + "."


def code_unchanged_ids(paired: dict[str, Any], results: dict[str, Any], targets_of) -> int:
    unchanged = {t for t, n in paired["targets"].items() if not n["remeasured"] and n["why"] == "code unchanged"}
    paired_ids = {r["id"] for r in paired["rows"]}
    return sum(
        1 for i in results
        if i not in paired_ids and (ts := targets_of(i)) and all(t in unchanged for t in ts)
    )


def counts_line(paired: dict[str, Any], unchanged: int) -> str:
    ours = [r for r in paired["rows"] if not r["control"]]
    c = {w: sum(1 for r in ours if r["verdict"] == w) for w in ORDER}
    return (
        f"**{c['slower']} slower, {c['faster']} faster, {c['same']} same, {unchanged} code unchanged** "
        f"({paired['pairs']} pairs per id, the two builds seconds apart; "
        f"{sum(1 for r in paired['rows'] if r['control'])} controls)"
    )


def verdict_rows(paired: dict[str, Any]) -> list[dict[str, Any]]:
    flagged = [r for r in paired["rows"] if r["verdict"] != "same" and not r["control"]]
    return sorted(flagged, key=lambda r: (ORDER[r["verdict"]], -abs(r["ratio"] - 1), r["id"]))


def _cells(row: dict[str, Any]) -> list[str]:
    floor = row.get("floor_pct")
    return [
        f"`{row['id']}`",
        row.get("kind") or "–",
        f"{row['ratio']:.3f}",
        f"{row['min']:.3f} – {row['max']:.3f}",
        "–" if floor is None else f"{floor:.1f} %",
        f"**{row['verdict']}**" + (f" ({row['channel']})" if row.get("channel") else ""),
    ]


def warnings(paired: dict[str, Any]) -> list[str]:
    out = []
    kinds = paired.get("floors_by_kind") or {}
    borrowed = sorted(k for k, v in kinds.items() if v["controls_spread_pct"] is None and v["rows"])
    if borrowed:
        out.append(f"⚠ No control of kind {', '.join(borrowed)} ran: those rows were held to all controls' floor.")
    unpaired = sum(len(n.get("unpaired") or []) for n in paired["targets"].values() if n.get("remeasured"))
    if unpaired:
        out.append(f"⚠ {unpaired} id(s) ran in only one build: unpaired, no verdict.")
    return out


def render(
    snapshot: dict[str, Any],
    baseline: dict[str, Any] | None,
    baseline_file: str | None,
    cross_run: tuple[int, int] | None,
    targets_of,
) -> list[str]:
    """The first screen's lines, ending with the END marker (which is not counted)."""
    paired = snapshot.get("paired")
    results = snapshot.get("results", {})
    load = snapshot.get("load")
    load_text = f"load {load['1m']:.1f} / {load['5m']:.1f} / {load['15m']:.1f} (1/5/15 min)" if load else "load not recorded"
    cores = (snapshot.get("cpu") or {}).get("cores")
    if cores:
        load_text += f" on {cores} cores"
    if baseline is not None:
        differs = machine.differences(snapshot.get("fingerprint") or {}, machine.of_snapshot(baseline))
        same = "same machine" if not differs else "another machine (" + "; ".join(cell(d) for d in differs[:2]) + ")"
    else:
        same = "no baseline"
    base_commit = (paired or {}).get("baseline", {}).get("commit") or ((baseline or {}).get("git") or {}).get("commit")
    base_text = f"`{base_commit[:12]}`" if base_commit else "none"
    lines = [
        f"# Benchmark snapshot {snapshot['created']}: {cell(snapshot['label'])}",
        "",
        f"Head {_commit(snapshot.get('git'))} · base {base_text}"
        + (f" (of {baseline_file})" if baseline_file else "") + f" · {same} · {load_text}.",
        "",
    ]
    comparable, why = cross_run_comparable(snapshot, baseline)
    if paired is None:
        lines.append(f"No verdicts (not re-measured): {len(results)} ids measured, medians only.")
        if cross_run is not None and comparable:
            lines.append(f"Cross-run against {baseline_file} ({why}): {cross_run[0]} moved past the noise rule, "
                         f"{cross_run[1]} within it (information, not verdicts; below).")
        else:
            lines.append(f"No cross-run deltas: {why}.")
        return lines + ["", END]
    remeasured = {t: n for t, n in paired["targets"].items() if n["remeasured"]}
    unchanged = code_unchanged_ids(paired, results, targets_of)
    lines += [counts_line(paired, unchanged), "", floors_line(paired)]
    if remeasured:
        lines.append("Re-measured: " + "; ".join(f"{t} ({cell(n['why'])})" for t, n in sorted(remeasured.items())) + ".")
    else:
        lines.append("Nothing re-measured: the change reaches no bench target that ran.")
    if paired.get("extended"):
        seq = paired.get("sequential") or {}
        lines.append(
            f"{len(paired['extended'])} undecided id(s) got more pairs (up to {seq.get('max_pairs', '?')}; "
            f"sign-test false-positive rate {seq.get('false_positive_rate_pct', '?')} %)."
        )
    notes = warnings(paired)
    rows = verdict_rows(paired)
    room = LIMIT - len(lines) - len(notes) - 6  # banner, blank, header, rule, "… N more", blank
    shown = rows[: max(0, min(ROWS, room))]
    if shown:
        lines += [""] + table(["id", "kind", "ratio", "pairs", "floor", "verdict"], [_cells(r) for r in shown])
        if len(rows) > len(shown):
            lines.append(f"… {len(rows) - len(shown)} more (the paired table below).")
    lines += notes
    return lines + ["", END]
