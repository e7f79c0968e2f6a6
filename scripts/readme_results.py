#!/usr/bin/env python3
"""Regenerate (or check) the generated result tables from a bench-history snapshot.

    python3 scripts/readme_results.py [--snapshot bench-history/bench-<UTC>.json] [--check]
        [--root DIR] [--units FILE]

The tables live between `<!-- results:<name>:begin -->` / `<!-- results:<name>:end -->`
markers (see atbench_snapshot/readme.py): README.md holds the one summary table (a row per
area), docs/results.md every target's full tables; the prose around them is hand-written.
Default snapshot: the newest bench-<UTC>.json in bench-history/. `--check` writes nothing
and exits 1 when a document differs from what the snapshot gives (CI runs it), so neither
can quote tables older than the committed history. bench_snapshot.py calls the same code
after writing a snapshot. Exit status: 0 up to date / written, 1 stale (--check), 2 unusable
input. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from atbench_snapshot import history, readme, registry

REPO_ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="readme_results.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="repository root")
    parser.add_argument("--snapshot", type=Path, help="snapshot JSON (default: newest in ROOT/bench-history)")
    parser.add_argument("--units", type=Path, help="units registry (default ROOT/benches/units.toml)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a document is stale; write nothing")
    return parser.parse_args(argv)


def regenerate(root: Path, snapshot_path: Path | None, units_path: Path) -> dict[Path, tuple[str, str]]:
    """{document: (current text, regenerated text)} (readme.DOCUMENTS)."""
    if snapshot_path is None:
        files = history.snapshot_files(root / "bench-history")
        if not files:
            raise history.HistoryError(f"no snapshot in {root / 'bench-history'}")
        snapshot_path = files[-1]
    snapshot = history.load_snapshot(snapshot_path)
    warnings: list[str] = []
    units = registry.load_registry(units_path, warnings)
    return readme.updates(root, snapshot, snapshot_path.name, units)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    units_path = args.units or args.root / "benches" / "units.toml"
    try:
        documents = regenerate(args.root, args.snapshot, units_path)
    except (OSError, history.HistoryError, registry.RegistryError, readme.ReadmeError) as error:
        print(f"readme_results: error: {error}", file=sys.stderr)
        return 2
    if not documents:
        print(f"readme_results: error: none of {', '.join(readme.DOCUMENTS)} has a results block", file=sys.stderr)
        return 2
    stale = [path for path, (current, updated) in documents.items() if current != updated]
    if args.check:
        for path in stale:
            print(
                f"readme_results: {path} does not match the newest snapshot; "
                "run python3 scripts/readme_results.py and commit the result",
                file=sys.stderr,
            )
        if stale:
            return 1
        for path in documents:
            print(f"{path} matches the snapshot")
        return 0
    for path, (current, updated) in documents.items():
        if path in stale:
            path.write_text(updated, encoding="utf-8")
            print(f"wrote {path}")
        else:
            print(f"{path} already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
