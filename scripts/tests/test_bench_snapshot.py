"""Tests of scripts/bench_snapshot.py and the atbench_snapshot package.

Run from the repository root (Python 3.11, standard library only):

    python3 -m unittest discover -s scripts/tests -t scripts

They read the real Criterion 0.8.2 output captured in scripts/tests/fixtures/criterion-0.8.2/
(see the README there: run-a baseline, run-b one regression and one improvement, run-c renames)
and write only to temporary directories.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from atbench_snapshot import compare, criterion, environment, history, humanize, registry, sidecars

from .helpers import (
    CRITERION,
    T1,
    T2,
    T3,
    UNITS,
    copy_run,
    latest_md,
    make_root,
    md_row,
    md_section,
    run_snapshot,
    snapshot_json,
    stamp_of,
    write_json,
)

# Medians (ns) from the captured fixtures' estimates.json.
A = {"cal": 1481781.0, "bitwise": 147.4251407030717, "table": 150.68480010404727}
B = {"cal": 1488298.184057971, "bitwise": 689.2663586480205, "table": 22.48275158770955}
RENAMES = {"codec.crc32/table/64B": "codec.crc32/table-256/64B", "store.list_records/": "store.list_page/"}


class TempRootCase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.base = Path(self.tmp.name)
        self.root = make_root(self.base)

    def snapshot(self, run: str | Path, now: str, *extra: str, label: str = "test") -> None:
        status, _, stderr = run_snapshot(self.root, run, label, now, *extra)
        self.assertEqual(status, 0, stderr)


class CriterionParsingTest(unittest.TestCase):
    def test_full_id_median_and_interval(self) -> None:
        results = criterion.read_criterion_dir(CRITERION / "run-a")
        table = results["codec.crc32/table/64B"]
        self.assertEqual((table["group"], table["implementation"], table["tier"]), ("codec.crc32", "table", "64B"))
        self.assertEqual(table["median_ns"], 150.68480010404727)
        self.assertEqual(table["ci_lower_ns"], 150.38617607649675)
        self.assertEqual(table["ci_upper_ns"], 151.14550549287412)
        self.assertEqual(table["throughput"], {"kind": "bytes", "per_iteration": 64})
        self.assertAlmostEqual(table["throughput_per_sec"], 64 / 150.68480010404727e-9)

    def test_every_fixture_id_sorted(self) -> None:
        self.assertEqual(
            list(criterion.read_criterion_dir(CRITERION / "run-a")),
            [
                "calibrate.cpu/fixed/1MiB",
                "codec.base64_encode/scalar/1KiB",
                "codec.crc32/bitwise/64B",
                "codec.crc32/table/64B",
                "store.list_records/ours/1k",
                "store.open/ours.nosync",
            ],
        )

    def test_elements_and_no_throughput_and_two_part_id(self) -> None:
        results = criterion.read_criterion_dir(CRITERION / "run-a")
        self.assertEqual(
            results["store.list_records/ours/1k"]["throughput"], {"kind": "elements", "per_iteration": 1000}
        )
        opened = results["store.open/ours.nosync"]
        self.assertEqual((opened["implementation"], opened["tier"]), ("ours.nosync", ""))
        self.assertIsNone(opened["throughput"])
        self.assertIsNone(opened["throughput_per_sec"])

    def test_id_comes_from_full_id_not_folder(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            run = copy_run("run-a", Path(tmp) / "copy")
            (run / "codec.crc32" / "table" / "64B").rename(run / "codec_crc32_mangled_folder")
            results = criterion.read_criterion_dir(run)
        self.assertIn("codec.crc32/table/64B", results)
        self.assertEqual(results["codec.crc32/table/64B"]["median_ns"], 150.68480010404727)

    def test_split_id(self) -> None:
        self.assertEqual(
            criterion.split_id("store.apply_commit/ours.nosync/callers-10"),
            ("store.apply_commit", "ours.nosync", "callers-10"),
        )
        self.assertEqual(criterion.split_id("store.open/ours"), ("store.open", "ours", ""))
        self.assertEqual(criterion.split_id("lonely"), ("lonely", "", ""))

    def test_tiers_sort_by_size(self) -> None:
        key = criterion.tier_sort_key
        self.assertEqual(
            sorted(["16KiB", "1MiB", "1KiB", "64B", "256KiB"], key=key), ["64B", "1KiB", "16KiB", "256KiB", "1MiB"]
        )
        self.assertEqual(sorted(["100k", "1m", "1k", "10k"], key=key), ["1k", "10k", "100k", "1m"])
        self.assertEqual(
            sorted(["callers-100", "callers-1", "callers-10"], key=key), ["callers-1", "callers-10", "callers-100"]
        )

    def test_parse_throughput_variants(self) -> None:
        parse = criterion.parse_throughput
        self.assertEqual(parse({"BytesDecimal": 1000}), {"kind": "bytes", "per_iteration": 1000})
        self.assertEqual(parse({"Bits": 64}), {"kind": "bytes", "per_iteration": 8})
        self.assertEqual(
            parse({"ElementsAndBytes": {"elements": 10, "bytes": 640}}), {"kind": "elements", "per_iteration": 10}
        )
        self.assertIsNone(parse(None))
        with self.assertRaises(criterion.CriterionError):
            parse({"Furlongs": 3})

    def test_missing_or_empty_dir(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(criterion.CriterionError, "does not exist"):
                criterion.read_criterion_dir(Path(tmp) / "absent")
            with self.assertRaisesRegex(criterion.CriterionError, "no \\*/new/benchmark.json"):
                criterion.read_criterion_dir(Path(tmp))


class CliErrorTest(TempRootCase):
    def test_missing_criterion_dir_exits_2_with_message(self) -> None:
        status, _, stderr = run_snapshot(self.root, self.base / "nothing-here", "x", T1)
        self.assertEqual(status, 2)
        self.assertIn("no Criterion output", stderr)
        self.assertFalse((self.root / "bench-history").exists())

    def test_bad_tag_is_a_usage_error(self) -> None:
        with self.assertRaises(SystemExit) as raised:
            run_snapshot(self.root, "run-a", "x", T1, "--tag", "release-1")
        self.assertEqual(raised.exception.code, 2)

    def test_never_overwrites_a_snapshot(self) -> None:
        self.snapshot("run-a", T1)
        status, _, stderr = run_snapshot(self.root, "run-b", "again", T1)
        self.assertEqual(status, 2)
        self.assertIn("already exists", stderr)
        self.assertEqual(snapshot_json(self.root, T1)["label"], "test")

    def test_runs_as_a_script_from_the_repo_root(self) -> None:
        script = Path(__file__).resolve().parent.parent / "bench_snapshot.py"
        completed = subprocess.run(
            [
                sys.executable,
                str(script),
                "--root",
                str(self.root),
                "--target-dir",
                str(self.root / "target"),
                "--criterion-dir",
                str(CRITERION / "run-a"),
                "--label",
                "script",
                "--now",
                T1,
                "--no-remeasure",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual(completed.returncode, 0, completed.stderr)
        self.assertIn(f"bench-{stamp_of(T1)}.json", completed.stdout)


class VerdictTest(TempRootCase):
    def setUp(self) -> None:
        super().setUp()
        self.snapshot("run-a", T1, label="baseline")
        self.snapshot("run-b", T2, label="crc32 changes")
        self.md = latest_md(self.root)
        self.table = md_section(self.md, "Changes against")

    def verdict_of(self, full_id: str) -> str:
        # The cross-run column, before the last one (paired: "—" under --no-remeasure).
        return md_row(self.table, f"`{full_id}`").rstrip(" |").rsplit(" | ", 2)[1]

    def test_regression_improvement_and_noise_from_captured_runs(self) -> None:
        self.assertEqual(self.verdict_of("codec.crc32/bitwise/64B"), "regression")
        self.assertEqual(self.verdict_of("codec.crc32/table/64B"), "improvement")
        self.assertEqual(self.verdict_of("calibrate.cpu/fixed/1MiB"), "within noise")
        self.assertEqual(self.verdict_of("store.open/ours.nosync"), "within noise")
        # Overlapping intervals (185.96-187.23 vs 187.07-189.86): within noise.
        self.assertEqual(self.verdict_of("store.list_records/ours/1k"), "within noise")
        # Same work, but +6.5 % with intervals apart: the rule sees a real shift (see fixtures/README.md).
        self.assertEqual(self.verdict_of("codec.base64_encode/scalar/1KiB"), "regression")
        verdicts = md_section(self.md, "Cross-run deltas")
        self.assertIn("2 regression(s), 1 improvement(s) across runs (not verdicts) against bench-20261130T190000Z.json", verdicts)
        self.assertIn("3 within noise, 0 new, 0 vanished", verdicts)
        # The moved rows open the cross-run section, largest |Δ time| first.
        flagged = [line.split("`")[1] for line in verdicts.splitlines() if line.startswith("| `")]
        self.assertEqual(
            flagged, ["codec.crc32/bitwise/64B", "codec.crc32/table/64B", "codec.base64_encode/scalar/1KiB"]
        )
        self.assertLess(self.md.index("## Verdicts (paired"), self.md.index("## Cross-run deltas"))
        self.assertLess(self.md.index("## Cross-run deltas"), self.md.index("## The run"))
        self.assertIn("No verdicts: not re-measured (--no-remeasure).", md_section(self.md, "Verdicts (paired"))
        self.assertNotIn("**", self.md.split("<!-- end of the first screen -->")[0])

    def test_delta_columns(self) -> None:
        row = md_row(self.table, "`codec.crc32/bitwise/64B`")
        expected = "| 689 ns | 147 ns | 88.6 MiB/s | +367.5% | -78.6% | +365.5% | regression | — |"
        self.assertEqual(row, "| `codec.crc32/bitwise/64B` " + expected)
        row = md_row(self.table, "`store.open/ours.nosync`")
        self.assertIn("| — | +0.8% | n/a | +0.4% |", row)  # no throughput declared

    def test_higher_noise_floor_silences_the_small_shift(self) -> None:
        root = make_root(self.base / "second")
        self.assertEqual(run_snapshot(root, "run-a", "a", T1)[0], 0)
        self.assertEqual(run_snapshot(root, "run-b", "b", T2, "--noise-floor", "10")[0], 0)
        table = md_section(latest_md(root), "Changes against")
        self.assertIn("within noise |", md_row(table, "`codec.base64_encode/scalar/1KiB`"))
        self.assertIn("regression |", md_row(table, "`codec.crc32/bitwise/64B`"))
        self.assertEqual(snapshot_json(root, T2)["noise_floor"], 0.1)

    def test_verdict_rule(self) -> None:
        old = {"median_ns": 100.0, "ci_lower_ns": 99.0, "ci_upper_ns": 101.0}
        apart_small = {"median_ns": 103.0, "ci_lower_ns": 102.0, "ci_upper_ns": 104.0}
        overlap_big = {"median_ns": 120.0, "ci_lower_ns": 100.5, "ci_upper_ns": 140.0}
        apart_big = {"median_ns": 80.0, "ci_lower_ns": 79.0, "ci_upper_ns": 81.0}
        self.assertEqual(compare.verdict(apart_small, old, 0.05), "within noise")
        self.assertEqual(compare.verdict(overlap_big, old, 0.05), "within noise")
        self.assertEqual(compare.verdict(apart_big, old, 0.05), "improvement")
        self.assertEqual(compare.verdict(apart_small, old, 0.02), "regression")

    def test_new_and_vanished_without_renames(self) -> None:
        self.snapshot("run-c", T3)
        table = md_section(latest_md(self.root), "Changes against")
        self.assertTrue(md_row(table, "`codec.crc32/table-256/64B`").endswith("| new | — |"))
        self.assertIn(
            "Vanished since the baseline (not in this run): `codec.crc32/table/64B`, `store.list_records/ours/1k`",
            table,
        )


class CalibrationTest(TempRootCase):
    def test_normalisation_math(self) -> None:
        self.assertAlmostEqual(compare.normalised_change(200.0, 100.0, 2.0), 0.0)
        self.assertAlmostEqual(compare.normalised_change(300.0, 100.0, 1.5), 1.0)
        self.assertAlmostEqual(compare.normalised_change(90.0, 100.0, 0.9), 0.0)
        self.assertIsNone(compare.normalised_change(300.0, 100.0, None))

    def test_normalised_delta_from_fixtures(self) -> None:
        current = criterion.read_criterion_dir(CRITERION / "run-b")
        previous = criterion.read_criterion_dir(CRITERION / "run-a")
        result = compare.compare(current, previous)
        self.assertAlmostEqual(result.calibration_ratio, B["cal"] / A["cal"])
        bitwise = next(row for row in result.rows if row.id == "codec.crc32/bitwise/64B")
        self.assertAlmostEqual(bitwise.time, B["bitwise"] / A["bitwise"] - 1)
        self.assertAlmostEqual(bitwise.normalised, (B["bitwise"] / A["bitwise"]) / (B["cal"] / A["cal"]) - 1)
        self.assertAlmostEqual(bitwise.normalised, 3.65488, places=4)

    def test_missing_calibration_reads_na(self) -> None:
        run_b = copy_run("run-b", self.base / "run-b-nocal")
        for path in sorted((run_b / "calibrate.cpu").rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        (run_b / "calibrate.cpu").rmdir()
        self.snapshot("run-a", T1)
        self.snapshot(run_b, T2)
        # Without a calibration kernel the machine cannot be shown to be the same: no verdicts ...
        self.assertIn("no calibration kernel in common", md_section(latest_md(self.root), "Cross-run deltas"))
        # ... unless the baseline is chosen by hand; then Δ vs calibration reads n/a.
        first = self.root / "bench-history" / f"bench-{stamp_of(T1)}.json"
        self.snapshot(run_b, T3, "--baseline", str(first))
        table = md_section(latest_md(self.root), "Changes against")
        self.assertIn("(no kernel on both sides: n/a)", table)
        self.assertIn("| +367.5% | -78.6% | n/a | regression |", md_row(table, "`codec.crc32/bitwise/64B`"))
        self.assertIn("`calibrate.cpu/fixed/1MiB`", table.rsplit("Vanished", 1)[1])


class RenameTest(TempRootCase):
    def test_renames_applied_before_diffing(self) -> None:
        write_json(self.root / "bench-history" / "renames.json", RENAMES)
        self.snapshot("run-a", T1)
        self.snapshot("run-c", T2)
        table = md_section(latest_md(self.root), "Changes against")
        self.assertIn("0 new, 0 vanished", md_section(latest_md(self.root), "Cross-run deltas"))
        self.assertIn("2 id(s) renamed via renames.json", table)
        self.assertIn("| 150 ns | 151 ns |", md_row(table, "`codec.crc32/table-256/64B`"))
        self.assertTrue(md_row(table, "`store.list_page/ours/1k`").endswith("| within noise | — |"))
        # Same work, -8.4 % with intervals apart: flagged as the rule says (see fixtures/README.md).
        self.assertTrue(md_row(table, "`store.open/ours.nosync`").endswith("| improvement | — |"))
        self.assertEqual(
            snapshot_json(self.root, T2)["baseline"],
            {
                "file": f"bench-{stamp_of(T1)}.json",
                "renamed_ids": 2,
                "tag": None,
                "by_hand": False,
                "machine_differences": [],
            },
        )

    def test_exact_prefix_chain_cycle_and_conflict(self) -> None:
        renames = {"a.x/one/1k": "a.x/two/1k", "a.x/two/1k": "a.x/three/1k", "b.y/": "c.z/", "b.y/keep/": "k.k/kept/"}
        self.assertEqual(history.renamed_id("a.x/one/1k", renames), "a.x/three/1k")
        self.assertEqual(history.renamed_id("b.y/ours/1k", renames), "c.z/ours/1k")
        self.assertEqual(history.renamed_id("b.y/keep/1k", renames), "k.k/kept/1k")  # longest prefix wins
        self.assertEqual(history.renamed_id("d.w/ours/1k", renames), "d.w/ours/1k")
        with self.assertRaisesRegex(history.HistoryError, "cycle"):
            history.renamed_id("p.q/a/1", {"p.q/a/1": "p.q/b/1", "p.q/b/1": "p.q/a/1"})
        with self.assertRaisesRegex(history.HistoryError, "both"):
            history.apply_renames({"p.q/a/1": {}, "p.q/b/1": {}}, {"p.q/a/1": "p.q/b/1"})
        renamed = history.apply_renames({"b.y/ours/1k": {"median_ns": 1.0}}, renames)
        self.assertEqual(renamed["c.z/ours/1k"]["group"], "c.z")

    def test_prefix_needs_slash_on_both_sides(self) -> None:
        write_json(self.root / "bench-history" / "renames.json", {"store.list_records/": "store.list_page"})
        self.snapshot("run-a", T1)
        status, _, stderr = run_snapshot(self.root, "run-c", "c", T2)
        self.assertEqual(status, 2)
        self.assertIn("trailing '/'", stderr)


class SidecarTest(TempRootCase):
    LATENCY = {
        "id": "codec.crc32/table/64B",
        "callers": 10,
        "ops": 100000,
        "ops_per_sec": 1.25e6,
        "mean_ns": 900.0,
        "p50_ns": 800,
        "p95_ns": 2000,
        "p99_ns": 5100,
        "max_ns": 90000,
    }

    def test_latency_merged_by_id(self) -> None:
        latency_dir = self.root / "target" / "atbench" / "latency"
        write_json(latency_dir / "whatever-name.json", self.LATENCY)
        write_json(latency_dir / "orphan.json", {**self.LATENCY, "id": "store.gone/ours/callers-1"})
        write_json(latency_dir / "broken.json", {"id": "codec.crc32/bitwise/64B", "callers": 1})
        self.snapshot("run-a", T1)
        results = snapshot_json(self.root, T1)["results"]
        expected = {k: v for k, v in self.LATENCY.items() if k != "id"}
        self.assertEqual(results["codec.crc32/table/64B"]["latency"], expected)
        self.assertIsNone(results["codec.crc32/bitwise/64B"]["latency"])
        warnings = snapshot_json(self.root, T1)["warnings"]
        self.assertIn("latency sidecars without a Criterion result (ignored): store.gone/ours/callers-1", warnings)
        self.assertTrue(any(w.startswith("latency sidecar broken.json: missing or invalid ops") for w in warnings))
        row = md_row(md_section(latest_md(self.root), "Latency"), "`codec.crc32/table/64B`")
        self.assertEqual(
            row,
            "| `codec.crc32/table/64B` | 10 | 100000 | 1.25M | 900 ns | 800 ns | 2.00 µs | 5.10 µs | 90.0 µs | — | — |",
        )

    def test_cpu_per_op_kept_when_valid(self) -> None:
        latency_dir = self.root / "target" / "atbench" / "latency"
        write_json(latency_dir / "a.json", {**self.LATENCY, "cpu_ns_per_op": 1200.0})
        write_json(latency_dir / "b.json", {**self.LATENCY, "id": "codec.crc32/bitwise/64B", "cpu_ns_per_op": "x"})
        self.snapshot("run-a", T1)
        snapshot = snapshot_json(self.root, T1)
        self.assertEqual(snapshot["results"]["codec.crc32/table/64B"]["latency"]["cpu_ns_per_op"], 1200.0)
        self.assertNotIn("cpu_ns_per_op", snapshot["results"]["codec.crc32/bitwise/64B"]["latency"])
        self.assertIn("latency sidecar b.json: invalid cpu_ns_per_op; left out", snapshot["warnings"])
        row = md_row(md_section(latest_md(self.root), "Latency"), "`codec.crc32/table/64B`")
        # 1.2 µs of CPU per operation at 1.25M ops/s: 1.50 cores busy.
        self.assertTrue(row.endswith("| 1.20 µs | 1.50 |"), row)

    def test_context_merged(self) -> None:
        context_dir = self.root / "target" / "atbench" / "context"
        write_json(context_dir / "a-store.json", {"store_pragmas": {"journal_mode": "wal"}, "bench_dir": "/tmp/a"})
        write_json(context_dir / "b-codec.json", {"sha256_backend": "sha2-asm", "bench_dir": "/tmp/b"})
        self.snapshot("run-a", T1)
        snapshot = snapshot_json(self.root, T1)
        self.assertEqual(
            snapshot["context"],
            {"store_pragmas": {"journal_mode": "wal"}, "bench_dir": "/tmp/b", "sha256_backend": "sha2-asm"},
        )
        self.assertIn(
            "context key 'bench_dir' set by both a-store.json and b-codec.json; kept b-codec.json", snapshot["warnings"]
        )
        # Run context lives in the JSON; the page says where.
        self.assertIn("entries in the snapshot JSON (`context`)", latest_md(self.root))

    def test_unreadable_context_is_a_warning(self) -> None:
        warnings: list[str] = []
        context_dir = self.base / "ctx"
        context_dir.mkdir()
        (context_dir / "bad.json").write_text("{nope")
        (context_dir / "list.json").write_text("[1, 2]")
        self.assertEqual(sidecars.read_context(context_dir, warnings), {})
        self.assertEqual(len(warnings), 2)


class ComparisonTableTest(TempRootCase):
    def test_ratios_and_bold_best(self) -> None:
        self.snapshot("run-b", T1)
        section = md_section(latest_md(self.root), "Same-run comparisons")
        crc = section[section.index("### codec.crc32 · 64B") :].split("\n### ")[0]
        self.assertIn("Unit: CRC-32 (IEEE) of one buffer of &lt;tier&gt; bytes", crc)
        self.assertEqual(md_row(crc, "**table**"), "| **table** | **22.5 ns** | **2.65 GiB/s** | **1.00x** |")
        self.assertEqual(md_row(crc, "bitwise"), "| bitwise | 689 ns | 88.6 MiB/s | 30.66x |")
        self.assertLess(crc.index("**table**"), crc.index("| bitwise"))
        self.assertEqual(round(B["bitwise"] / B["table"], 2), 30.66)

    def test_probe_group_listed_apart(self) -> None:
        self.snapshot("run-a", T1)
        md = latest_md(self.root)
        self.assertNotIn("store.open", md_section(md, "Same-run comparisons"))
        probes = md_section(md, "Adjacent probes")
        self.assertEqual(
            md_row(probes, "`store.open/ours.nosync`"), "| `store.open/ours.nosync` | 23.8 ns | — | group is a probe |"
        )
        self.assertEqual(snapshot_json(self.root, T1)["results"]["store.open/ours.nosync"]["role"], "probe")

    def test_implementation_outside_compare_is_a_probe(self) -> None:
        units = UNITS.read_text().replace('compare = ["bitwise", "table", "table-256"]', 'compare = ["table"]')
        root = make_root(self.base / "other", units)
        self.assertEqual(run_snapshot(root, "run-a", "x", T1)[0], 0)
        md = latest_md(root)
        self.assertIn(
            "implementation not in `compare`", md_row(md_section(md, "Adjacent probes"), "`codec.crc32/bitwise/64B`")
        )
        crc = md_section(md, "Same-run comparisons").split("### codec.crc32 · 64B")[1].split("\n### ")[0]
        self.assertNotIn("bitwise", crc)

    def test_unregistered_group_warned_not_crashed(self) -> None:
        units = UNITS.read_text().split('[groups."store.list_records"]')[0]
        root = make_root(self.base / "other", units)
        status, _, stderr = run_snapshot(root, "run-a", "x", T1)
        self.assertEqual(status, 0)
        self.assertIn("groups not in units.toml: store.list_records, store.open", stderr)
        md = latest_md(root)
        unregistered = md_section(md, "⚠ Warning: unregistered groups")
        self.assertEqual(
            md_row(unregistered, "`store.list_records/ours/1k`"),
            "| `store.list_records/ours/1k` | 187 ns | 5.36 Gelem/s |",
        )
        result = snapshot_json(root, T1)["results"]["store.list_records/ours/1k"]
        self.assertEqual((result["role"], result["unit"]), ("unregistered", None))

    def test_registry_validation_and_throughput_check(self) -> None:
        with self.assertRaisesRegex(registry.RegistryError, "throughput must be one of"):
            registry.parse_registry('[groups."a.b"]\ntarget = "x"\nunit = "u"\nthroughput = "furlongs"\n')
        with self.assertRaisesRegex(registry.RegistryError, "unknown keys: comapre"):
            registry.parse_registry('[groups."a.b"]\ntarget = "x"\nunit = "u"\nthroughput = "none"\ncomapre = []\n')
        units = UNITS.read_text().replace('throughput = "none"', 'throughput = "elements"')
        root = make_root(self.base / "other", units)
        self.assertEqual(run_snapshot(root, "run-a", "x", T1)[0], 0)
        self.assertIn(
            "store.open/ours.nosync: Criterion throughput is none, units.toml declares elements",
            snapshot_json(root, T1)["warnings"],
        )


class HistoryTest(TempRootCase):
    def test_no_previous_snapshot(self) -> None:
        self.snapshot("run-a", T1, label="first")
        md = latest_md(self.root)
        self.assertIn("No earlier snapshot in bench-history: medians only.", md)
        self.assertEqual(
            md_row(md_section(md, "Results"), "`codec.crc32/table/64B`"),
            "| `codec.crc32/table/64B` | 151 ns | 150 ns – 151 ns | 405 MiB/s | — |",
        )
        self.assertNotIn("Δ time", md)
        self.assertIsNone(snapshot_json(self.root, T1)["baseline"])

    def test_json_schema_and_files(self) -> None:
        self.snapshot("run-a", T1, label="first | snapshot")
        history_dir = self.root / "bench-history"
        md_path = history_dir / f"bench-{stamp_of(T1)}.md"
        self.assertEqual(md_path.read_text(), latest_md(self.root))
        snapshot = snapshot_json(self.root, T1)
        self.assertEqual(snapshot["schema_version"], 2)
        self.assertEqual((snapshot["label"], snapshot["tag"], snapshot["created"]), ("first | snapshot", None, T1))
        self.assertEqual(snapshot["git"], {"commit": None, "dirty": None})
        self.assertEqual(snapshot["dataset"], {"fingerprint": "none (in-memory sample)"})
        self.assertEqual(snapshot["criterion_version"], "unknown")
        self.assertIsInstance(snapshot["cpu"]["cores"], int)
        self.assertEqual(
            set(snapshot["results"]["codec.crc32/table/64B"]),
            {
                "group",
                "implementation",
                "tier",
                "median_ns",
                "ci_lower_ns",
                "ci_upper_ns",
                "throughput",
                "throughput_per_sec",
                "unit",
                "role",
                "latency",
            },
        )
        md = latest_md(self.root)
        self.assertTrue(md.startswith("<!-- generated by scripts/bench_snapshot.py; do not edit -->\n"))
        self.assertIn("--label 'first | snapshot'", md)
        self.assertIn("- Label: first \\| snapshot", md)

    def test_previous_is_newest_older_snapshot(self) -> None:
        self.snapshot("run-c", "2026-11-30T18:00:00Z")
        self.snapshot("run-a", T1)
        self.snapshot("run-c", T3)
        self.snapshot("run-b", T2)  # written last, but its time sits between T1 and T3
        self.assertEqual(snapshot_json(self.root, T2)["baseline"]["file"], f"bench-{stamp_of(T1)}.json")

    def test_tag_recorded_and_against_tag(self) -> None:
        self.snapshot("run-a", T1, "--tag", "v1.0.0")
        self.snapshot("run-c", T2)
        self.snapshot("run-b", T3, "--against-tag", "v1.0.0")
        self.assertEqual(snapshot_json(self.root, T1)["tag"], "v1.0.0")
        self.assertIn(
            "- Tag: v1.0.0 (release baseline)", (self.root / "bench-history" / f"bench-{stamp_of(T1)}.md").read_text()
        )
        latest = latest_md(self.root)
        self.assertIn(f"## Changes against bench-{stamp_of(T1)}.json", latest)
        self.assertIn("Baseline: tag v1.0.0, ", latest)
        self.assertEqual(snapshot_json(self.root, T3)["baseline"]["tag"], "v1.0.0")
        status, _, stderr = run_snapshot(self.root, "run-b", "x", "2026-12-01T00:00:00Z", "--against-tag", "v9.9.9")
        self.assertEqual(status, 2)
        self.assertIn("no snapshot in", stderr)

    def test_deterministic(self) -> None:
        other = make_root(self.base / "other")
        self.snapshot("run-b", T1)
        self.assertEqual(run_snapshot(other, "run-b", "test", T1)[0], 0)
        first, second = snapshot_json(self.root, T1), snapshot_json(other, T1)
        first.pop("command"), second.pop("command")
        self.assertEqual(first, second)
        self.assertEqual(list(first["results"]), sorted(first["results"]))


class EnvironmentTest(unittest.TestCase):
    def test_criterion_version_from_cargo_lock(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            lock = Path(tmp) / "Cargo.lock"
            lock.write_text(
                'version = 4\n\n[[package]]\nname = "criterion"\nversion = "0.8.2"\n\n'
                '[[package]]\nname = "serde"\nversion = "1.0.228"\n'
            )
            self.assertEqual(environment.criterion_version(lock), "0.8.2")
            self.assertEqual(environment.criterion_version(Path(tmp) / "absent.lock"), "unknown")

    def test_dataset_fingerprint(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            manifest = Path(tmp) / "MANIFEST.json"
            content = b'{"seed": 42, "target_mb": 512, "files": []}\n'
            manifest.write_bytes(content)
            warnings: list[str] = []
            self.assertEqual(
                environment.dataset_fingerprint(manifest, warnings),
                {"fingerprint": "sha256:" + hashlib.sha256(content).hexdigest(), "seed": 42, "target_mb": 512},
            )
            self.assertEqual(
                environment.dataset_fingerprint(Path(tmp) / "none.json", warnings),
                {"fingerprint": "none (in-memory sample)"},
            )
            self.assertEqual(warnings, [])

    def test_git_commit_and_dirty_flag(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            self.assertEqual(environment.git_state(root), {"commit": None, "dirty": None})
            git = ["git", "-C", tmp, "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
            subprocess.run([*git, "init", "-q"], check=True)
            (root / "f.txt").write_text("x")
            subprocess.run([*git, "add", "f.txt"], check=True)
            subprocess.run([*git, "commit", "-q", "-m", "c"], check=True)
            head = subprocess.run(
                [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
            ).stdout.strip()
            self.assertEqual(environment.git_state(root), {"commit": head, "dirty": False})
            (root / "f.txt").write_text("y")
            self.assertEqual(environment.git_state(root), {"commit": head, "dirty": True})

    def test_cpu_model_from_cpuinfo(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            cpuinfo = Path(tmp) / "cpuinfo"
            cpuinfo.write_text(
                "processor\t: 0\nmodel name\t: Test CPU @ 3.0GHz\n\nprocessor\t: 1\nmodel name\t: Test CPU @ 3.0GHz\n"
            )
            self.assertEqual(environment.cpu_info(cpuinfo)["model"], "Test CPU @ 3.0GHz")


class HumanizeTest(unittest.TestCase):
    def test_units(self) -> None:
        self.assertEqual(humanize.duration(22.48), "22.5 ns")
        self.assertEqual(humanize.duration(999.7), "1.00 µs")
        self.assertEqual(humanize.duration(1514.6), "1.51 µs")
        self.assertEqual(humanize.duration(1481781.0), "1.48 ms")
        self.assertEqual(humanize.duration(2.5e9), "2.50 s")
        self.assertEqual(humanize.rate(2.65 * 1024**3, "bytes"), "2.65 GiB/s")
        self.assertEqual(humanize.rate(512.0, "bytes"), "512 B/s")
        self.assertEqual(humanize.rate(5.36e9, "elements"), "5.36 Gelem/s")
        self.assertEqual(humanize.rate(None, None), "—")
        self.assertEqual(humanize.percent(-0.851), "-85.1%")
        self.assertEqual(humanize.percent(None), "n/a")
        self.assertEqual(humanize.ratio(30.657), "30.66x")


if __name__ == "__main__":
    unittest.main()
