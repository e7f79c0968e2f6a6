#!/usr/bin/env python3
"""The report page of one benchmark snapshot (entry point).

    python3 scripts/bench_charts.py [--history-dir bench-history] [--snapshot FILE]
        [--units benches/units.toml] [--criterion-dir target/criterion] [--out bench-artifacts]

Writes OUT/index.html for the newest bench-history/bench-<UTC>.json (or --snapshot FILE, e.g.
an older one): a self-contained page (inline SVG and CSS, a few lines of script, nothing
fetched) with the machine, the commits, the paired verdicts and the controls' floor first,
then a section per comparison group (log-scale bars, peers, floor probes, adjacent probes,
latency curves, each id's history on this machine, links to Criterion's own report).
bench_snapshot.py writes the same page after each snapshot. The page is built by
atbench_snapshot/page.py; this file owns the command line only. Exit status: 0 written,
2 no or unreadable snapshot. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from atbench_snapshot.history import HistoryError, snapshot_files
from atbench_snapshot.page import SIZE_BUDGET, Sources, write_page

REPO_ROOT = Path(__file__).resolve().parent.parent


def newest_snapshot(history_dir: Path) -> Path:
    files = snapshot_files(history_dir)
    if not files:
        raise HistoryError(f"no bench-<UTC>.json snapshot in {history_dir} (run scripts/bench_snapshot.py first)")
    return files[-1]


def _default_criterion_dir() -> Path:
    target = Path(os.environ["CARGO_TARGET_DIR"]) if os.environ.get("CARGO_TARGET_DIR") else REPO_ROOT / "target"
    return target / "criterion"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_charts.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--history-dir", type=Path, default=REPO_ROOT / "bench-history", help="where the snapshots are")
    parser.add_argument("--snapshot", type=Path, help="the page of this snapshot JSON instead of the newest one")
    parser.add_argument("--units", type=Path, default=REPO_ROOT / "benches" / "units.toml", help="for floor_probes")
    parser.add_argument("--criterion-dir", type=Path, help="Criterion's output, for links (default TARGET/criterion)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-artifacts", help="output directory")
    args = parser.parse_args(argv)
    sources = Sources(args.history_dir, args.units, args.criterion_dir or _default_criterion_dir())
    try:
        written = write_page(args.snapshot or newest_snapshot(args.history_dir), args.out, sources)
    except HistoryError as error:
        print(f"bench_charts: error: {error}", file=sys.stderr)
        return 2
    size = written.stat().st_size
    print(f"wrote {written} ({size / 1024:.0f} KiB)")
    if size > SIZE_BUDGET:
        print(f"bench_charts: warning: the page is over its {SIZE_BUDGET // 1024 // 1024} MiB budget", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
