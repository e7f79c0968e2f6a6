"""Same-machine baselines: the fingerprint, the baseline search, withheld verdicts, per-group
calibration kernels, and the id grammar shared with the Rust registry."""

from __future__ import annotations

import json
import tempfile
import tomllib
import unittest
from pathlib import Path

from atbench_snapshot import compare, machine, registry

from .helpers import T1, T2, T3, latest_md, make_root, md_section, run_snapshot, snapshot_json, stamp_of

REPO = Path(__file__).resolve().parents[2]
ID_GRAMMAR = REPO / "benches" / "tests" / "id_grammar.toml"


class MachineCase(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = make_root(Path(self._tmp.name))

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def snapshot(self, run: str, now: str, *extra: str) -> None:
        status, _, stderr = run_snapshot(self.root, run, "test", now, *extra)
        self.assertEqual(status, 0, stderr)

    def edit(self, now: str, change) -> None:
        """Rewrite the committed snapshot stamped `now` (as another machine would have written it)."""
        path = self.root / "bench-history" / f"bench-{stamp_of(now)}.json"
        snapshot = json.loads(path.read_text())
        change(snapshot)
        path.write_text(json.dumps(snapshot))


class BaselineSearchTest(MachineCase):
    def test_fingerprint_recorded(self) -> None:
        self.snapshot("run-a", T1)
        fingerprint = snapshot_json(self.root, T1)["fingerprint"]
        self.assertEqual(set(fingerprint), {"cpu_model", "cores", "cpu_features", "rustc", "calibration"})
        self.assertEqual(list(fingerprint["calibration"]), ["calibrate.cpu/fixed/1MiB"])

    def test_same_machine_same_work_flags_nothing(self) -> None:
        self.snapshot("run-a", T1)
        self.snapshot("run-a", T2)
        verdicts = md_section(latest_md(self.root), "Cross-run deltas")
        self.assertIn("0 regression(s), 0 improvement(s) across runs (not verdicts)", verdicts)
        self.assertIn("the newest same-machine snapshot", verdicts)

    def test_another_machine_gives_no_verdicts_and_says_why(self) -> None:
        self.snapshot("run-a", T1)
        self.edit(T1, lambda s: s["fingerprint"].update(cpu_model="Intel Xeon", cores=4))
        self.snapshot("run-b", T2)
        md = latest_md(self.root)
        opening = md_section(md, "Cross-run deltas")
        self.assertIn("No cross-run deltas: no earlier snapshot ran on this machine.", opening)
        self.assertIn(f"bench-{stamp_of(T1)}.json", opening)
        self.assertIn("CPU Intel Xeon", opening)
        self.assertIn("cores 4", opening)
        self.assertNotIn("regression", md.lower().replace("regression(s)", ""))
        self.assertNotIn("## Changes against", md)
        self.assertIn("## Same-run comparisons", md)
        withheld = snapshot_json(self.root, T2)["verdicts_withheld"]
        self.assertEqual(withheld["nearest"], f"bench-{stamp_of(T1)}.json")
        self.assertIsNone(snapshot_json(self.root, T2)["baseline"])

    def test_feature_difference_is_named(self) -> None:
        self.snapshot("run-a", T1)
        self.edit(T1, lambda s: s["fingerprint"].update(cpu_features=["avx2", "made_up"]))
        self.snapshot("run-a", T2)
        opening = md_section(latest_md(self.root), "Cross-run deltas")
        self.assertIn("adds made_up", opening)

    def test_calibration_more_than_ten_percent_apart_withholds(self) -> None:
        self.snapshot("run-a", T1)

        def slower(snapshot: dict) -> None:
            snapshot["fingerprint"]["calibration"]["calibrate.cpu/fixed/1MiB"] *= 1.2

        self.edit(T1, slower)
        self.snapshot("run-a", T2)
        self.assertIn("calibration `calibrate.cpu/fixed/1MiB` -16.", md_section(latest_md(self.root), "Cross-run deltas"))

    def test_skips_other_machines_to_the_newest_same_machine_snapshot(self) -> None:
        self.snapshot("run-a", T1)
        self.snapshot("run-a", T2)
        self.edit(T2, lambda s: s["fingerprint"].update(rustc="rustc 1.0.0"))
        self.snapshot("run-b", T3)
        self.assertEqual(snapshot_json(self.root, T3)["baseline"]["file"], f"bench-{stamp_of(T1)}.json")

    def test_old_snapshot_without_fingerprint_is_an_unknown_machine(self) -> None:
        self.snapshot("run-a", T1)

        def schema_one(snapshot: dict) -> None:
            snapshot["schema_version"] = 1
            del snapshot["fingerprint"]

        self.edit(T1, schema_one)
        self.snapshot("run-b", T2)
        self.assertIn("unknown machine", md_section(latest_md(self.root), "Cross-run deltas"))
        # Still usable by hand, with the warning above the verdicts.
        first = self.root / "bench-history" / f"bench-{stamp_of(T1)}.json"
        self.snapshot("run-b", T3, "--baseline", str(first))
        verdicts = md_section(latest_md(self.root), "Cross-run deltas")
        self.assertIn("Baseline chosen by hand from a machine that differs", verdicts)
        self.assertIn("2 regression(s), 1 improvement(s) across runs", verdicts)


class DifferencesTest(unittest.TestCase):
    BASE = {
        "cpu_model": "A",
        "cores": 2,
        "cpu_features": ["avx2", "sha_ni"],
        "rustc": "r",
        "calibration": {"calibrate.cpu/fixed/1MiB": 100.0, "calibrate.copy/stream/64MiB": 50.0},
    }

    def test_rules(self) -> None:
        self.assertEqual(machine.differences(self.BASE, dict(self.BASE)), [])
        within = {**self.BASE, "calibration": {"calibrate.cpu/fixed/1MiB": 109.0}}
        self.assertEqual(machine.differences(self.BASE, within), [])
        beyond = {**self.BASE, "calibration": {"calibrate.copy/stream/64MiB": 56.0}}
        self.assertEqual(len(machine.differences(self.BASE, beyond)), 1)
        fewer = {**self.BASE, "cpu_features": ["avx2"]}
        self.assertEqual(machine.differences(self.BASE, fewer), ["CPU features lacks sha_ni"])
        self.assertIn("unknown machine", machine.differences(self.BASE, None)[0])

    def test_cpu_features_from_cpuinfo(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "cpuinfo"
            path.write_text("model name\t: X\nflags\t\t: fpu sse4_2 avx2 hypervisor sha_ni\n")
            self.assertEqual(machine.cpu_features(path), ["avx2", "sha_ni", "sse4_2"])
            self.assertIsNone(machine.cpu_features(Path(tmp) / "absent"))


def result(group: str, median: float) -> dict:
    return {"group": group, "median_ns": median, "ci_lower_ns": median, "ci_upper_ns": median}


class KernelTest(unittest.TestCase):
    def test_group_divides_by_its_named_kernel_else_the_geometric_mean(self) -> None:
        old = {
            "calibrate.cpu/fixed/1MiB": result("calibrate.cpu", 100.0),
            "calibrate.memory_latency/walk/256MiB": result("calibrate.memory_latency", 100.0),
            "repo.mst_add/ours/10k": result("repo.mst_add", 100.0),
            "codec.crc32/fast/16KiB": result("codec.crc32", 100.0),
        }
        new = {
            "calibrate.cpu/fixed/1MiB": result("calibrate.cpu", 110.0),
            "calibrate.memory_latency/walk/256MiB": result("calibrate.memory_latency", 160.0),
            "repo.mst_add/ours/10k": result("repo.mst_add", 160.0),
            "codec.crc32/fast/16KiB": result("codec.crc32", 110.0),
        }
        got = compare.compare(new, old, kernels={"repo.mst_add": "calibrate.memory_latency"})
        rows = {row.id: row for row in got.rows}
        self.assertAlmostEqual(rows["repo.mst_add/ours/10k"].normalised, 0.0)
        self.assertAlmostEqual(rows["codec.crc32/fast/16KiB"].normalised, 1.1 / (1.1 * 1.6) ** 0.5 - 1)
        self.assertAlmostEqual(got.calibration_ratio, (1.1 * 1.6) ** 0.5)


REGISTRY = """
[groups."calibrate.cpu"]
target = "*"
unit = "u"
throughput = "bytes"
compare = ["fixed"]

[groups."a.b"]
target = "x"
unit = "u"
throughput = "none"
compare = ["ours"]
calibration = "{kernel}"
"""


class RegistryRulesTest(unittest.TestCase):
    def test_calibration_key(self) -> None:
        parsed = registry.parse_registry(REGISTRY.format(kernel="calibrate.cpu"))
        self.assertEqual(registry.calibration_kernels(parsed), {"a.b": "calibrate.cpu"})
        with self.assertRaisesRegex(registry.RegistryError, "not a registered calibrate"):
            registry.parse_registry(REGISTRY.format(kernel="calibrate.none"))

    def test_rules_shared_with_the_rust_registry(self) -> None:
        bad_name = '[groups."ab"]\ntarget="x"\nunit="u"\nthroughput="bytes"\nprobe=true\n'
        no_compare = '[groups."a.b"]\ntarget="x"\nunit="u"\nthroughput="bytes"\n'
        for text in (bad_name, no_compare):
            with self.assertRaises(registry.RegistryError):
                registry.parse_registry(text)

    def test_shared_id_list(self) -> None:
        self.assertTrue(ID_GRAMMAR.is_file(), f"the shared id list is missing: {ID_GRAMMAR}")
        grammar = tomllib.loads(ID_GRAMMAR.read_text(encoding="utf-8"))
        self.assertTrue(grammar["valid"] and grammar["invalid"])
        for full_id in grammar["valid"]:
            registry.check_id(full_id)
        for case in grammar["invalid"]:
            with self.assertRaises(registry.RegistryError, msg=f"{case['id']!r} ({case['why']})"):
                registry.check_id(case["id"])

    def test_every_registered_group_of_the_workspace_passes(self) -> None:
        parsed = registry.parse_registry((REPO / "benches" / "units.toml").read_text(encoding="utf-8"))
        self.assertIn("calibrate.cpu", parsed)


if __name__ == "__main__":
    unittest.main()
