"""Files -> crates -> bench targets -> rows (atbench_snapshot/targets.py) on this workspace's real
cargo metadata and units.toml; the floor-probe table on fixture rows; and a snapshot whose
change reaches no bench target (nothing re-measured, no build)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from atbench_snapshot import paired_report, registry, targets

from .helpers import FIXTURES, T1, T2, latest_md, md_section, run_snapshot, snapshot_json

REPO = Path(__file__).resolve().parents[2]


@unittest.skipIf(shutil.which("cargo") is None, "cargo is not on PATH: no metadata")
class WorkspaceMapTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.ws = targets.workspace(REPO)
        cls.modules = targets.target_modules(cls.ws, REPO)
        cls.uses = targets.target_crates(cls.ws, REPO, cls.modules)
        cls.units = registry.load_registry(REPO / "benches" / "units.toml", [])

    def touched(self, *files: str) -> dict[str, str | None]:
        return targets.touched_targets(self.ws, self.uses, targets.classify(self.ws, list(files)), self.modules)

    def reached(self, *files: str) -> set[str]:
        return {t for t, why in self.touched(*files).items() if why}

    def control(self, full_id: str, target: str, *files: str) -> bool:
        change = targets.classify(self.ws, list(files))
        return targets.is_control(full_id, target, self.ws, self.uses, change, self.units, self.modules)

    def test_members_and_targets_from_metadata(self) -> None:
        self.assertEqual(self.ws.crate_dirs["codec"], "crates/codec")
        self.assertNotIn("benches", self.ws.crate_dirs)
        self.assertTrue({"hotpath", "repo", "store", "xrpc"} <= set(self.ws.bench_dirs))
        self.assertEqual(self.ws.bench_dirs["store"], "benches/benches/store")
        self.assertIn("sonic-rs", self.ws.third_party)
        self.assertIn("store", self.ws.crate_deps["xrpc"])

    def test_targets_use_what_they_name(self) -> None:
        self.assertTrue({"codec", "convert"} <= self.uses["hotpath"])
        self.assertNotIn("store", self.uses["hotpath"])  # linked, never named
        self.assertTrue({"store", "repo"} <= self.uses["store"])
        self.assertIn("xrpc", self.uses["xrpc"])
        self.assertFalse({"xrpc", "appview", "gateway"} & self.uses["repo"])
        self.assertIn("callers", self.modules["store"])
        self.assertNotIn("callers", self.modules["hotpath"])

    def test_a_crate_reaches_the_targets_that_use_it(self) -> None:
        # --bench knot drives git against an in-process atpds, so it names xrpc too.
        self.assertEqual(self.reached("crates/xrpc/src/lib.rs"), {"xrpc", "knot"})
        self.assertEqual(self.reached("crates/knot/src/lib.rs"), {"knot"})
        self.assertIn("hotpath", self.reached("crates/codec/src/base64.rs"))
        self.assertNotIn("hotpath", self.reached("crates/store/src/lib.rs"))
        self.assertIn("store", self.reached("crates/repo/src/lib.rs"))  # store depends on repo
        why = self.touched("crates/xrpc/src/routes.rs", "crates/xrpc/src/net.rs")["xrpc"]
        self.assertEqual(why, "crates/xrpc changed (src/net.rs, src/routes.rs)")

    def test_bench_code_harness_build_inputs_and_inert_files(self) -> None:
        self.assertEqual(self.reached("benches/benches/store/read.rs"), {"store"})
        callers = self.reached("benches/src/callers.rs")
        self.assertIn("store", callers)
        self.assertNotIn("hotpath", callers)
        self.assertEqual(self.reached("Cargo.lock"), set(self.ws.bench_dirs))
        self.assertEqual(self.reached("README.md", "scripts/bench_snapshot.py", "bench-history/latest.md",
                                      "benches/units.toml", "crates/store/README.md", ".ci/run"), set())

    def test_controls(self) -> None:
        codec = "crates/codec/src/crc32.rs"
        self.assertTrue(self.control("json.parse/sonic-rs/sql", "hotpath", codec))  # a third-party crate
        self.assertTrue(self.control("codec.crc32/crc32fast/64B", "hotpath", codec))
        self.assertFalse(self.control("codec.crc32/fast/64B", "hotpath", codec))  # ours, in the diff
        self.assertTrue(self.control("calibrate.cpu/fixed/1MiB", "hotpath", codec))
        self.assertFalse(self.control("calibrate.cpu/fixed/1MiB", "hotpath", "benches/src/calibrate.rs"))
        # A crate outside the diff: codec does not depend on convert.
        self.assertTrue(self.control("codec.crc32/fast/64B", "hotpath", "crates/convert/src/lib.rs"))
        self.assertTrue(self.control("store.apply_commit/official-pds/callers-1", "store", "crates/store/src/lib.rs"))
        self.assertTrue(self.control("live.redis_set/raw/callers-1", "live_backends", "crates/store/src/lib.rs"))
        # The target's own bench code reaches every row but the kernels.
        self.assertFalse(self.control("json.parse/sonic-rs/sql", "hotpath", "benches/benches/hotpath/json_parse.rs"))
        self.assertTrue(self.control("calibrate.cpu/fixed/1MiB", "hotpath", "benches/benches/hotpath/json_parse.rs"))

    def test_by_hand_targets_compare_ours_against_the_same_controls(self) -> None:
        change = targets.forced(self.ws, self.uses, ["hotpath"])
        control = lambda i: targets.is_control(i, "hotpath", self.ws, self.uses, change, self.units, self.modules)  # noqa: E731
        self.assertFalse(control("codec.crc32/fast/64B"))
        self.assertTrue(control("codec.crc32/crc32fast/64B"))
        self.assertTrue(control("calibrate.cpu/fixed/1MiB"))


class FloorProbeTableTest(unittest.TestCase):
    UNITS = """
[groups."live.pg_point_select"]
target = "live_backends"
unit = "one point select"
throughput = "none"
compare = ["ours", "raw"]
floor_probes = { raw = "psql" }
"""

    def result(self, full_id: str, ns: float) -> dict:
        group, implementation, tier = full_id.split("/")
        return {"group": group, "implementation": implementation, "tier": tier, "median_ns": ns}

    def test_ratio_per_tier_flagged_past_one_and_a_half(self) -> None:
        units = registry.parse_registry(self.UNITS)
        self.assertEqual(units["live.pg_point_select"].floor_probes, {"raw": "psql"})
        results = {
            i: self.result(i, ns)
            for i, ns in {
                "live.pg_point_select/raw/callers-1": 112_000.0,
                "live.pg_point_select/psql/callers-1": 60_000.0,
                "live.pg_point_select/raw/callers-10": 30_000.0,
                "live.pg_point_select/psql/callers-10": 25_000.0,
                "live.pg_point_select/raw/callers-100": 9_000.0,  # no probe at this tier: no row
            }.items()
        }
        text = "\n".join(paired_report.floor_probes(results, units))
        self.assertIn("1 of 2 here", text)
        self.assertIn("| `live.pg_point_select/raw/callers-1` | 112 µs | `live.pg_point_select/psql/callers-1` | "
                      "60.0 µs | **1.87x ⚠** |", text)
        self.assertIn("| 30.0 µs | `live.pg_point_select/psql/callers-10` | 25.0 µs | 1.20x |", text)
        self.assertNotIn("callers-100", text)
        self.assertEqual(paired_report.floor_probes({}, units), [])

    def test_bad_floor_probes_rejected(self) -> None:
        for bad in ('floor_probes = { raw = 3 }', 'floor_probes = { raw = "raw" }', 'floor_probes = { "Raw!" = "psql" }'):
            with self.assertRaises(registry.RegistryError):
                registry.parse_registry(self.UNITS.replace('floor_probes = { raw = "psql" }', bad))


@unittest.skipIf(shutil.which("cargo") is None, "cargo is not on PATH: no metadata")
class NothingTouchedTest(unittest.TestCase):
    """A snapshot against a baseline at the same commit: the change reaches no bench target, so
    nothing is built or measured and every id reads "code unchanged"."""

    def test_code_unchanged(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            shutil.copytree(FIXTURES / "ab_bench", root)
            (root / "benches" / "units.toml").write_text((FIXTURES / "units.toml").read_text())
            # As in the real repository, the report page the snapshot writes is not tracked.
            (root / ".gitignore").write_text("/bench-artifacts\n")
            for args in (["init", "-q"], ["add", "-A"],
                         ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base"]):
                subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
            self.assertEqual(run_snapshot(root, "run-a", "first", T1)[0], 0)
            (root / "NOTES.md").write_text("docs only\n")  # an inert change: reaches nothing
            status, out, err = run_snapshot(root, "run-a", "second", T2, "--remeasure-here")
            self.assertEqual(status, 0, err)
            self.assertIn("no verdicts: the change reaches no bench target that ran (code unchanged)", out)
            paired = snapshot_json(root, T2)["paired"]
            self.assertEqual(paired["targets"], {"fixture": {"remeasured": False, "why": "code unchanged"}})
            self.assertEqual(paired["rows"], [])
            self.assertEqual([f for f in paired["changed_files"] if not f.startswith("bench-history/")], ["NOTES.md"])
            md = latest_md(root)
            self.assertIn("**No verdicts: nothing re-measured.**", md_section(md, "Verdicts (paired"))
            self.assertIn("| code unchanged |", md)
            json.dumps(paired)  # the record is plain JSON


if __name__ == "__main__":
    unittest.main()
