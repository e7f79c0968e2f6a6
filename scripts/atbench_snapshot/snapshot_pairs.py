"""bench_snapshot.py's entry into the paired re-measurement (remeasure.py).

Owns the snapshot's choices: the baseline snapshot whose commit is re-measured (--against-tag,
--baseline, else the newest earlier snapshot, whatever its machine: the pairs run here), the
targets (those the change reaches that have ids in this snapshot, plus --remeasure), the ids
(this snapshot's ids of each target) and the preset (--quick or BENCH_QUICK). Answers the
snapshot's "paired" record, or None with the reason there are no verdicts.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from . import drive, history, pairing, remeasure
from .registry import Group


def _baseline_path(args: argparse.Namespace, history_dir: Path, file_stamp: str) -> Path | None:
    if args.against_tag:
        return history.tagged_snapshot(history_dir, args.against_tag)
    if args.baseline:
        return args.baseline
    return history.previous_snapshot(history_dir, file_stamp)


def _quick(args: argparse.Namespace) -> bool:
    value = os.environ.get("BENCH_QUICK", "")
    return bool(args.quick or (value and value != "0"))


def run_pairs(
    args: argparse.Namespace,
    history_dir: Path,
    file_stamp: str,
    results: dict[str, Any],
    units: dict[str, Group],
    target_dir: Path,
) -> tuple[dict[str, Any] | None, str | None]:
    """(the "paired" record, None) or (None, why there is none)."""
    path = _baseline_path(args, history_dir, file_stamp)
    if path is None:
        return None, "no earlier snapshot in bench-history to re-measure against"
    baseline = history.load_snapshot(path)
    commit = (baseline.get("git") or {}).get("commit")
    if not commit:
        return None, f"{path.name} records no commit to re-measure"
    root = args.root.resolve()
    plan = remeasure.plan(root, commit)
    known = sorted(plan.workspace.bench_dirs)
    unknown = sorted(set(args.remeasure) - set(known))
    if unknown:
        raise remeasure.RemeasureError(f"--remeasure {', '.join(unknown)}: not a bench target (known: {', '.join(known)})")
    head_name, base_name = remeasure.renaming(history_dir, baseline.get("results"))
    why: dict[str, str] = {}
    skipped: dict[str, str] = {}
    selections: dict[str, drive.Selection] = {}
    for target in known:
        reason = plan.touched.get(target) or ("re-measured by hand (--remeasure)" if target in args.remeasure else None)
        if reason is None:
            continue
        ids = remeasure.ids_of_target(results, target, units, known)
        if not ids or all(i.startswith("calibrate.") for i in ids):
            skipped[target] = f"{reason}; but this snapshot has no result of it (run `cargo bench --bench {target}`)"
            continue
        wanted = set(ids)
        why[target] = reason
        selections[target] = drive.Selection(
            wanted=wanted.__contains__,
            control=remeasure.control_rule(plan, target, units),
            base_name=base_name,
            head_name=head_name,
            expected=ids,
        )
    settings = drive.Settings(pairs=args.pairs, quick=_quick(args))
    if selections:
        base, head = remeasure.build_both(root, plan, sorted(selections), args.features, target_dir.resolve())
        result = remeasure.execute(
            plan, base, head, selections, why, settings, target_dir.resolve() / "paired" / "runs", skipped=skipped,
            max_pairs=getattr(args, "max_pairs", None),
        )
    else:
        result = remeasure.Result(plan, {}, pairing.analyse([]), {}, {}, {}, args.pairs, skipped)
    return result.record(path.name), None
