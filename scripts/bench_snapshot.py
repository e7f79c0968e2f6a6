#!/usr/bin/env python3
"""Snapshot the benchmark results into bench-history/ (entry point).

    python3 scripts/bench_snapshot.py --label "what changed" [--tag vX.Y.Z]
        [--against-tag vX.Y.Z | --baseline FILE] [--noise-floor 5] [--root DIR]
        [--target-dir DIR] [--criterion-dir DIR] [--history-dir DIR] [--units FILE]
        [--now 2026-11-30T20:00:00Z]

Reads Criterion 0.8.2's output (<target>/criterion/**/new/{benchmark,estimates}.json), the
harness sidecars (<target>/atbench/latency/*.json, <target>/atbench/context/*.json), the
peers' results (<target>/atbench/peers/*.json, from BENCH_PEERS=1 runs),
benches/units.toml, bench-history/renames.json and data/MANIFEST.json, and writes
bench-history/bench-<UTC>.json, bench-history/bench-<UTC>.md (the full page) and
bench-history/latest.md (the reviewer's page: a first screen of at most 30 lines, then a
summary; atbench_snapshot/first_screen.py), and
regenerates the result tables of README.md and docs/results.md (scripts/readme_results.py)
when they have them.

Verdicts come only from the paired re-measurement (atbench_snapshot/remeasure.py): the
baseline snapshot (the newest earlier one, or --against-tag / --baseline) names a commit;
that commit is checked out into <target>/paired/base, built with a target dir of its own, and
each id of every bench target the change since that commit can reach is measured on both
builds in pairs, seconds apart (--pairs, default 5). A verdict needs every pair to agree and
the median ratio past the floor (2 % or the spread of the controls of the row's kind of work,
units.toml [kinds], rows the change cannot reach, whichever is larger) and past the row's own
noise (how far one build's measurements of it moved from pair to pair). A row left undecided
(agreeing, within twice its bar) gets 5 more pairs at a time up to --max-pairs and a sign test
(docs/design/verdicts.md). Targets the change does not reach read "code unchanged";
--remeasure TARGET measures one anyway; --no-remeasure skips all of it (medians only, no
verdicts: what CI and a quick look want). The preset of the pairs is the snapshot's:
BENCH_QUICK=1 in the environment, or --quick.

The cross-run deltas against the newest same-machine snapshot (atbench_snapshot/machine.py)
stay in the full table, as information.
<target> is --target-dir, else $CARGO_TARGET_DIR, else <root>/target.

This file owns the command line and the assembly of a snapshot; the work is in the
atbench_snapshot package next to it. Exit status: 0 written, 2 unusable input (no Criterion
output, malformed units.toml or renames.json, unknown baseline tag, snapshot exists) or a
re-measurement that failed (a build, a bench process).
Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from atbench_snapshot import environment, history, machine, paired_report, peers, readme, registry, report, sidecars
from atbench_snapshot.compare import DEFAULT_NOISE_FLOOR, compare
from atbench_snapshot.criterion import CriterionError, read_criterion_dir
from atbench_snapshot.page import regenerate as regenerate_page
from atbench_snapshot.humanize import percentage
from atbench_snapshot.remeasure import RemeasureError
from atbench_snapshot.snapshot_pairs import run_pairs

REPO_ROOT = Path(__file__).resolve().parent.parent
TAG_PATTERN = re.compile(r"^v\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")


def _tag(value: str) -> str:
    if not TAG_PATTERN.match(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a release tag like v1.2.3")
    return value


def _moment(value: str) -> datetime:
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{value!r} is not a UTC time like 2026-11-30T20:00:00Z") from error


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench_snapshot.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", help="what changed since the last snapshot (required unless --rerender)")
    parser.add_argument(
        "--rerender", type=Path, metavar="SNAPSHOT_JSON",
        help="no run: rewrite latest.md from this committed JSON with the current renderer",
    )
    parser.add_argument("--rerender-full", action="store_true", help="with --rerender: the snapshot's .md as well")
    parser.add_argument("--tag", type=_tag, help="mark this snapshot as the release baseline vX.Y.Z")
    by_hand = parser.add_mutually_exclusive_group()
    by_hand.add_argument(
        "--against-tag", type=_tag, help="diff against the snapshot tagged vX.Y.Z instead of the previous one"
    )
    by_hand.add_argument(
        "--baseline", type=Path, help="diff against this snapshot file (by hand, whatever its machine)"
    )
    parser.add_argument(
        "--noise-floor",
        type=percentage,
        default=DEFAULT_NOISE_FLOOR,
        help="percent |Δ time| below which a change is never flagged (default 5)",
    )
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT, help="repository root (default: this script's repository)"
    )
    parser.add_argument("--target-dir", type=Path, help="cargo target dir (default $CARGO_TARGET_DIR or ROOT/target)")
    parser.add_argument("--criterion-dir", type=Path, help="Criterion output (default TARGET/criterion)")
    parser.add_argument("--history-dir", type=Path, help="snapshot directory (default ROOT/bench-history)")
    parser.add_argument("--units", type=Path, help="units-of-work registry (default ROOT/benches/units.toml)")
    parser.add_argument("--now", type=_moment, help="the snapshot's UTC time, for tests (default: now)")
    pairs = parser.add_argument_group("paired re-measurement")
    pairs.add_argument("--no-remeasure", action="store_true", help="no paired re-measurement: medians only, no verdicts")
    pairs.add_argument(
        "--remeasure", action="append", default=[], metavar="TARGET",
        help="also re-measure this bench target though the change does not reach it (repeatable)",
    )
    pairs.add_argument("--pairs", type=_pairs, default=5, help="pairs per id (default 5)")
    pairs.add_argument(
        "--max-pairs", type=_pairs, default=15,
        help="budget of an undecided id: 5 more pairs at a time up to this many in all (default 15; "
        "= --pairs: no extension)",
    )
    pairs.add_argument("--quick", action="store_true", help="quick preset for the pairs (default: BENCH_QUICK)")
    pairs.add_argument("--features", default="bench-internals", help="cargo features of both builds")
    args = parser.parse_args(argv)
    if not args.label and not args.rerender:
        parser.error("--label is required (unless --rerender)")
    return args


def _pairs(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: pairs must be a whole number >= 1")
    return int(value)


def _target_dir(args: argparse.Namespace) -> Path:
    if args.target_dir:
        return args.target_dir
    if os.environ.get("CARGO_TARGET_DIR"):
        return Path(os.environ["CARGO_TARGET_DIR"])
    return args.root / "target"


def _merge_latency(results: dict[str, dict[str, Any]], latency: dict[str, dict[str, Any]], warnings: list[str]) -> None:
    for full_id, result in results.items():
        if result.get("source") == "peer":
            continue
        result["latency"] = latency.get(full_id)
    orphans = sorted(set(latency) - set(results))
    if orphans:
        warnings.append(f"latency sidecars without a Criterion result (ignored): {', '.join(orphans)}")


def _baseline(
    args: argparse.Namespace, history_dir: Path, file_stamp: str, fingerprint: dict[str, Any]
) -> tuple[report.Baseline | None, report.Withheld | None]:
    """The baseline (or None) and, when verdicts are withheld, why."""
    if args.against_tag or args.baseline:
        path = history.tagged_snapshot(history_dir, args.against_tag) if args.against_tag else args.baseline
        by_hand = True
    else:
        path, nearest, differences = history.same_machine_snapshot(history_dir, file_stamp, fingerprint)
        if path is None:
            return None, report.Withheld(nearest.name if nearest else None, differences)
        by_hand = False
    snapshot = history.load_snapshot(path)
    renames = history.load_renames(history_dir / "renames.json")
    old_results = snapshot.get("results", {})
    renamed_results = history.apply_renames(old_results, renames)
    renamed_count = sum(1 for old_id in old_results if history.renamed_id(old_id, renames) != old_id)
    differences = machine.differences(fingerprint, machine.of_snapshot(snapshot)) if by_hand else []
    return (
        report.Baseline(path.name, {**snapshot, "results": renamed_results}, renamed_count, by_hand, differences),
        None,
    )


def _baseline_record(baseline: report.Baseline | None) -> dict[str, Any] | None:
    if baseline is None:
        return None
    return {
        "file": baseline.file_name,
        "tag": baseline.snapshot.get("tag"),
        "renamed_ids": baseline.renamed,
        "by_hand": baseline.by_hand,
        "machine_differences": baseline.differences,
    }


def run(args: argparse.Namespace, argv: list[str]) -> list[Path]:
    """Build and write the snapshot; returns the files written."""
    target_dir = _target_dir(args)
    history_dir = args.history_dir or args.root / "bench-history"
    now = (args.now or datetime.now(UTC)).replace(microsecond=0)
    file_stamp = history.stamp(now)
    warnings: list[str] = []

    results = read_criterion_dir(args.criterion_dir or target_dir / "criterion")
    peers.merge(results, peers.read_peers(target_dir / "atbench" / "peers", warnings), warnings)
    results = dict(sorted(results.items()))
    units = registry.load_registry(args.units or args.root / "benches" / "units.toml", warnings)
    registry.annotate(results, units, warnings)
    _merge_latency(results, sidecars.read_latency(target_dir / "atbench" / "latency", warnings), warnings)
    context = sidecars.read_context(target_dir / "atbench" / "context", warnings)
    env = environment.collect(args.root, warnings)
    fingerprint = machine.fingerprint(env["cpu"], env["rustc"], results)
    baseline, withheld = _baseline(args, history_dir, file_stamp, fingerprint)

    snapshot: dict[str, Any] = {
        "schema_version": history.SCHEMA_VERSION,
        "label": args.label,
        "tag": args.tag,
        "created": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python3 scripts/bench_snapshot.py " + shlex.join(argv),
        **env,
        "fingerprint": fingerprint,
        "context": context,
        "noise_floor": args.noise_floor,
        "baseline": _baseline_record(baseline),
        "verdicts_withheld": None if withheld is None else {"nearest": withheld.nearest, "differences": withheld.differences},
        "results": results,
        "warnings": warnings,
    }
    kernels = registry.calibration_kernels(units)
    comparison = compare(results, baseline.snapshot["results"], args.noise_floor, kernels) if baseline else None
    paired, why_not = (None, "--no-remeasure") if args.no_remeasure else run_pairs(args, history_dir, file_stamp, results, units, target_dir)
    if paired is not None:
        snapshot["paired"] = paired
    full, latest = _pages(snapshot, comparison, baseline, units, args.noise_floor, withheld, why_not, file_stamp)
    # The README's and docs/results.md's blocks, computed before anything is written, so a
    # document that lacks a block stops the run with nothing half-written.
    documents = readme.updates(args.root, snapshot, f"bench-{file_stamp}.json", units)
    written = history.write_snapshot(history_dir, file_stamp, snapshot, full, latest)
    for path, (current, updated) in documents.items():
        if updated != current:
            path.write_text(updated, encoding="utf-8")
            written.append(path)
    written.append(regenerate_page(written[0], args.root, args.criterion_dir or target_dir / "criterion"))
    for warning in warnings:
        print(f"bench_snapshot: warning: {warning}", file=sys.stderr)
    if withheld is not None and withheld.nearest:
        print(f"no same-machine snapshot (newest: {withheld.nearest}): no cross-run deltas")
    print(paired_report.summary_line(paired, why_not))
    return written


def _pages(snapshot, comparison, baseline, units, noise_floor, withheld, why_not, file_stamp) -> tuple[str, str]:
    """(bench-<stamp>.md, latest.md) of a snapshot."""
    paired, results = snapshot.get("paired"), snapshot["results"]
    parts = dict(
        opening=paired_report.opening(paired, why_not, results), closing=paired_report.closing(paired, results, units)
    )
    full = report.render(snapshot, comparison, baseline, units, noise_floor, withheld, **parts)
    latest = report.render(
        snapshot, comparison, baseline, units, noise_floor, withheld, **parts, full=False, full_name=f"bench-{file_stamp}.md"
    )
    return full, latest


def rerender(args: argparse.Namespace) -> list[Path]:
    """latest.md (and with --rerender-full bench-<stamp>.md) again from a snapshot's JSON (no
    bench, no build)."""
    path = args.rerender
    history_dir = args.history_dir or path.parent
    snapshot = history.load_snapshot(path)
    warnings: list[str] = []
    units = registry.load_registry(args.units or args.root / "benches" / "units.toml", warnings)
    record = snapshot.get("baseline") or {}
    baseline = None
    if record.get("file") and (history_dir / record["file"]).is_file():
        old = history.load_snapshot(history_dir / record["file"])
        renames = history.load_renames(history_dir / "renames.json")
        baseline = report.Baseline(
            record["file"], {**old, "results": history.apply_renames(old.get("results", {}), renames)},
            record.get("renamed_ids", 0), bool(record.get("by_hand")), record.get("machine_differences") or [],
        )
    withheld_record = snapshot.get("verdicts_withheld")
    withheld = report.Withheld(withheld_record.get("nearest"), withheld_record.get("differences", [])) if withheld_record else None
    kernels = registry.calibration_kernels(units)
    noise_floor = snapshot.get("noise_floor", DEFAULT_NOISE_FLOOR)
    comparison = compare(snapshot["results"], baseline.snapshot["results"], noise_floor, kernels) if baseline else None
    stamp = path.stem.removeprefix("bench-")
    why_not = None if snapshot.get("paired") else "--no-remeasure"
    full, latest = _pages(snapshot, comparison, baseline, units, noise_floor, withheld, why_not, stamp)
    latest_path = history_dir / "latest.md"
    latest_path.write_text(latest, encoding="utf-8")
    written = [latest_path]
    if args.rerender_full:
        path.with_suffix(".md").write_text(full, encoding="utf-8")
        written.append(path.with_suffix(".md"))
    return written


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        written = rerender(args) if args.rerender else run(args, argv)
    except (CriterionError, registry.RegistryError, history.HistoryError, readme.ReadmeError, RemeasureError) as error:
        print(f"bench_snapshot: error: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
