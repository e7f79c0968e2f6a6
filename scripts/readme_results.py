#!/usr/bin/env python3
"""Regenerate (or check) the result tables in README.md from a bench-history snapshot.

    python3 scripts/readme_results.py [--snapshot bench-history/bench-<UTC>.json] [--check]
        [--root DIR] [--readme FILE] [--units FILE]

The tables live between `<!-- results:<name>:begin -->` / `<!-- results:<name>:end -->`
markers (see atbench_snapshot/readme.py); the prose around them is hand-written.
Default snapshot: the newest bench-<UTC>.json in bench-history/. `--check` writes nothing
and exits 1 when README.md differs from what the snapshot gives (CI runs it), so the README
cannot quote tables older than the committed history. bench_snapshot.py calls the same code
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
    parser.add_argument("--readme", type=Path, help="README to update (default ROOT/README.md)")
    parser.add_argument("--units", type=Path, help="units registry (default ROOT/benches/units.toml)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the README is stale; write nothing")
    return parser.parse_args(argv)


def regenerate(root: Path, snapshot_path: Path | None, readme_path: Path, units_path: Path) -> tuple[str, str]:
    """(current README text, regenerated README text)."""
    if snapshot_path is None:
        files = history.snapshot_files(root / "bench-history")
        if not files:
            raise history.HistoryError(f"no snapshot in {root / 'bench-history'}")
        snapshot_path = files[-1]
    snapshot = history.load_snapshot(snapshot_path)
    warnings: list[str] = []
    units = registry.load_registry(units_path, warnings)
    current = readme_path.read_text(encoding="utf-8")
    generated = readme.blocks(snapshot, snapshot_path.name, units)
    return current, readme.splice(current, generated)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    readme_path = args.readme or args.root / "README.md"
    units_path = args.units or args.root / "benches" / "units.toml"
    try:
        current, updated = regenerate(args.root, args.snapshot, readme_path, units_path)
    except (OSError, history.HistoryError, registry.RegistryError, readme.ReadmeError) as error:
        print(f"readme_results: error: {error}", file=sys.stderr)
        return 2
    if args.check:
        if current != updated:
            print(
                f"readme_results: {readme_path} does not match the newest snapshot; "
                "run python3 scripts/readme_results.py and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"{readme_path} matches the snapshot")
        return 0
    if current != updated:
        readme_path.write_text(updated, encoding="utf-8")
        print(f"wrote {readme_path}")
    else:
        print(f"{readme_path} already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
