"""Shared test scaffolding: fixture paths, a throwaway repository root, and in-process runs
of bench_snapshot.main with captured output."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import bench_snapshot

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CRITERION = FIXTURES / "criterion-0.8.2"
UNITS = FIXTURES / "units.toml"

# Timestamps of successive snapshots in tests.
T1, T2, T3 = "2026-11-30T19:00:00Z", "2026-11-30T20:00:00Z", "2026-11-30T21:00:00Z"


def make_root(base: Path, units_text: str | None = None) -> Path:
    """A repository root under `base` with benches/units.toml (the fixture registry by default)."""
    root = base / "repo"
    (root / "benches").mkdir(parents=True)
    (root / "benches" / "units.toml").write_text(units_text if units_text is not None else UNITS.read_text())
    return root


def run_snapshot(root: Path, run: str | Path, label: str, now: str, *extra: str) -> tuple[int, str, str]:
    """bench_snapshot.main on a captured run (name like "run-a", or a directory); (status, stdout, stderr).
    With --no-remeasure (no builds: these tests are about the snapshot) unless `extra` holds
    "--remeasure-here"."""
    criterion_dir = run if isinstance(run, Path) else CRITERION / run
    argv = [
        "--root",
        str(root),
        "--target-dir",
        str(root / "target"),
        "--criterion-dir",
        str(criterion_dir),
        "--label",
        label,
        "--now",
        now,
        *(extra if "--remeasure-here" in extra else ("--no-remeasure", *extra)),
    ]
    argv = [a for a in argv if a != "--remeasure-here"]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = bench_snapshot.main(argv)
    return status, stdout.getvalue(), stderr.getvalue()


def stamp_of(now: str) -> str:
    return now.replace("-", "").replace(":", "")


def snapshot_json(root: Path, now: str) -> dict[str, Any]:
    return json.loads((root / "bench-history" / f"bench-{stamp_of(now)}.json").read_text())


def latest_md(root: Path) -> str:
    """The newest snapshot's full page (bench-<UTC>.md): every section the tests read. latest.md
    is the reviewer's page, its first screen and a summary (reviewer_md)."""
    pages = sorted((root / "bench-history").glob("bench-*.md"))
    return pages[-1].read_text()


def reviewer_md(root: Path) -> str:
    return (root / "bench-history" / "latest.md").read_text()


def copy_run(run: str, destination: Path) -> Path:
    """A writable copy of a captured run, for tests that alter it."""
    shutil.copytree(CRITERION / run, destination)
    return destination


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def latency_sidecar(full_id: str, callers: int, p50: float) -> dict[str, object]:
    """A latency sidecar as the bench harness writes it (target/atbench/latency/*.json)."""
    return {
        "id": full_id,
        "callers": callers,
        "ops": 10000,
        "ops_per_sec": 5e5,
        "mean_ns": p50 * 1.2,
        "p50_ns": p50,
        "p95_ns": p50 * 3,
        "p99_ns": p50 * 10,
        "max_ns": p50 * 40,
    }


def md_row(markdown: str, first_cell: str) -> str:
    """The markdown table row whose first cell is `first_cell` (exactly one must exist)."""
    rows = [line for line in markdown.splitlines() if line.startswith(f"| {first_cell} |")]
    if len(rows) != 1:
        raise AssertionError(f"expected one row starting {first_cell!r}, found {rows}")
    return rows[0]


def md_section(markdown: str, heading: str) -> str:
    """The text from the `## heading` line up to the next `## ` heading."""
    start = markdown.index(f"## {heading}")
    end = markdown.find("\n## ", start + 1)
    return markdown[start:] if end < 0 else markdown[start:end]
