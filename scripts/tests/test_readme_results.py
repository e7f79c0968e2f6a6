"""Tests of scripts/readme_results.py and the README blocks bench_snapshot.py regenerates.

Run from the repository root (Python 3.11, standard library only):

    python3 -m unittest discover -s scripts/tests -t scripts
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import unittest
from pathlib import Path

import readme_results

from .helpers import T1, T2, latency_sidecar, make_root, md_row, run_snapshot, stamp_of, write_json

README = """# demo

intro prose stays

<!-- results:summary:begin -->
stale summary
<!-- results:summary:end -->

<!-- results:machine:begin -->
stale machine line
<!-- results:machine:end -->
"""

RESULTS = """# results

results prose stays

<!-- results:machine:begin -->
stale machine line
<!-- results:machine:end -->

## hotpath

<!-- results:hotpath:begin -->
stale hotpath table
<!-- results:hotpath:end -->

prose between blocks stays

<!-- results:store:begin -->
<!-- results:store:end -->
"""


def run_readme(root: Path, *extra: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = readme_results.main(["--root", str(root), *extra])
    return status, stdout.getvalue(), stderr.getvalue()


class ReadmeBlocks(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.root = make_root(Path(self.tmp.name))
        (self.root / "README.md").write_text(README)
        (self.root / "docs").mkdir()
        (self.root / "docs" / "results.md").write_text(RESULTS)
        latency_dir = self.root / "target" / "atbench" / "latency"
        write_json(latency_dir / "open.json", latency_sidecar("store.open/ours.nosync", 1, 120))

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def test_snapshot_regenerates_the_blocks_and_keeps_the_prose(self) -> None:
        status, stdout, stderr = run_snapshot(self.root, "run-a", "first", T1)
        self.assertEqual(status, 0, stderr)
        self.assertIn("README.md", stdout)
        self.assertIn("results.md", stdout)
        summary = (self.root / "README.md").read_text()
        self.assertIn("intro prose stays", summary)
        self.assertNotIn("stale", summary)
        self.assertIn(f"bench-{stamp_of(T1)}.json", summary)
        # The README has one table, a row per area; the full tables are in docs/results.md.
        self.assertNotIn("| tier |", summary)
        self.assertIn("No compared group has both our rows and a baseline's", summary)
        text = (self.root / "docs" / "results.md").read_text()
        self.assertIn("results prose stays", text)
        self.assertIn("prose between blocks stays", text)
        self.assertNotIn("stale", text)
        self.assertIn(f"bench-{stamp_of(T1)}.json", text)
        self.assertIn("calibration `calibrate.cpu/fixed/1MiB` =", text)
        # A compared group with two implementations becomes a pivot: tiers down, in
        # units.toml's compare order across, the best cell of each tier in bold.
        self.assertIn("| tier | bitwise | table |", text)
        row = md_row(text, "64B")
        bitwise, table = row.split(" | ")[1:3]
        self.assertTrue(bitwise.startswith("**") and "(1.00x)" in bitwise, row)
        self.assertIn("(1.02x)", table)
        # Concurrent-caller rows get their percentiles; single-implementation rows a list.
        self.assertIn("| `store.open/ours.nosync` |", text)
        self.assertIn("| id | ops/s | p50 | p95 | p99 | CPU/op |", text)
        self.assertIn("`store.list_records/ours/", text)

    def test_check_passes_when_fresh_and_fails_when_stale(self) -> None:
        self.assertEqual(run_snapshot(self.root, "run-a", "first", T1)[0], 0)
        status, _, stderr = run_readme(self.root, "--check")
        self.assertEqual(status, 0, stderr)
        # A newer snapshot the README was not regenerated from makes it stale.
        readme = (self.root / "README.md").read_text()
        self.assertEqual(run_snapshot(self.root, "run-b", "second", T2)[0], 0)
        (self.root / "README.md").write_text(readme)
        status, _, stderr = run_readme(self.root, "--check")
        self.assertEqual(status, 1)
        self.assertIn("does not match", stderr)
        self.assertEqual(run_readme(self.root)[0], 0)
        self.assertEqual(run_readme(self.root, "--check")[0], 0)
        self.assertIn(f"bench-{stamp_of(T2)}.json", (self.root / "README.md").read_text())
        # docs/results.md is checked as well.
        results = (self.root / "docs" / "results.md").read_text()
        (self.root / "docs" / "results.md").write_text(results.replace("| 64B |", "| 64 B |"))
        status, _, stderr = run_readme(self.root, "--check")
        self.assertEqual(status, 1)
        self.assertIn("results.md does not match", stderr)

    def test_a_missing_block_stops_the_snapshot_before_anything_is_written(self) -> None:
        (self.root / "docs" / "results.md").write_text(RESULTS.replace("results:store:", "results:elsewhere:"))
        status, _, stderr = run_snapshot(self.root, "run-a", "first", T1)
        self.assertEqual(status, 2)
        self.assertIn("store", stderr)
        self.assertFalse((self.root / "bench-history").exists())

    def test_a_block_may_sit_in_either_document_but_must_sit_in_one(self) -> None:
        (self.root / "README.md").write_text(README.replace("summary", "gone"))
        status, _, stderr = run_snapshot(self.root, "run-a", "first", T1)
        self.assertEqual(status, 2)
        self.assertIn("summary", stderr)
        (self.root / "README.md").write_text("# demo\n\nno blocks\n")
        (self.root / "docs" / "results.md").write_text(README + RESULTS)
        status, _, stderr = run_snapshot(self.root, "run-b", "first", T1)
        self.assertEqual(status, 0, stderr)
        self.assertEqual(run_readme(self.root, "--check")[0], 0)

    def test_no_snapshot_is_an_error(self) -> None:
        status, _, stderr = run_readme(self.root, "--check")
        self.assertEqual(status, 2)
        self.assertIn("no snapshot", stderr)


if __name__ == "__main__":
    unittest.main()


class ContextLine(unittest.TestCase):
    """The server versions the live bench read head its block; other targets get none."""

    def test_names_the_servers_the_run_read(self) -> None:
        from atbench_snapshot.readme import context_line

        context = {"postgres": "15.14", "mariadb": "10.11.6-MariaDB", "redis": None, "rows": 10000}
        self.assertEqual(
            context_line(context, "live_backends"),
            "Servers, as the bench read them: PostgreSQL 15.14, MariaDB 10.11.6-MariaDB.",
        )
        self.assertIsNone(context_line(context, "store"))
        self.assertIsNone(context_line({}, "live_backends"))


class Summary(unittest.TestCase):
    """The README's one table: a row per area, ours against the closest baseline."""

    def test_a_row_per_area_against_the_closest_baseline(self) -> None:
        from atbench_snapshot.readme import is_baseline, summary_block
        from atbench_snapshot.registry import Group

        def row(group: str, implementation: str, tier: str, ns: float) -> tuple[str, dict]:
            full = f"{group}/{implementation}/{tier}"
            return full, {"group": group, "implementation": implementation, "tier": tier,
                          "role": "compare", "median_ns": ns}

        registry = {
            "store.get": Group("store.get", "store", "u", "none", ("ours.nosync", "ours.fsync", "official-pds"), False,
                               peers={"official-pds": {"same_as": ["ours.nosync", "ours.fsync"], "note": ""}}),
            "codec.crc": Group("codec.crc", "hotpath", "u", "bytes", ("scalar", "simd", "crc32fast"), False),
        }
        results = dict([
            row("store.get", "ours.nosync", "1", 10.0), row("store.get", "ours.fsync", "1", 50.0),
            row("store.get", "official-pds", "1", 100.0),
            row("codec.crc", "scalar", "1K", 40.0), row("codec.crc", "simd", "1K", 10.0),
            row("codec.crc", "crc32fast", "1K", 20.0), row("codec.crc", "simd", "4K", 40.0),
            row("codec.crc", "crc32fast", "4K", 20.0),
        ])
        self.assertTrue(is_baseline("proto-blue-repo.k256") and is_baseline("create_record.official-pds"))
        self.assertFalse(is_baseline("k256.rustcrypto") or is_baseline("ours.nosync"))
        lines = summary_block(results, registry)
        hotpath = next(line for line in lines if line.startswith("| [hotpath]"))
        store = next(line for line in lines if line.startswith("| [store]"))
        # hotpath: 2.00x at 1K (simd against crc32fast), 0.50x at 4K; geomean 1.
        self.assertIn("| 1 of 2 | `crc32fast` | 1.00x |", hotpath)
        # store: the peer names both of ours; the slower (fsync) is set against it.
        self.assertIn("| 1 of 1 | `official-pds` | 2.00x |", store)
