"""The kind of work of every id (units.toml `[kinds]`, atbench_snapshot/kinds.py), the floor
of each kind (pairing.py), and latest.md's first screen (first_screen.py) on the committed
history."""

from __future__ import annotations

import json
import sys
import tempfile
import unittest
from pathlib import Path

from atbench_snapshot import first_screen, kinds, pairing

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "benches" / "units.toml"
HISTORY = REPO / "bench-history"
NEW_KERNELS = ["calibrate.fsync/file/4KiB", "calibrate.loopback/tcp/64B", "calibrate.threads/handoff/1k"]


def newest_snapshot() -> Path:
    return sorted(HISTORY.glob("bench-*.json"))[-1]


class ClassificationTest(unittest.TestCase):
    def setUp(self) -> None:
        self.kinds = kinds.load(UNITS)

    def test_every_id_and_control_has_a_kind(self) -> None:
        """Every id of the newest committed snapshot, every compared implementation of every
        group in units.toml, and the new kernels: a new group without a `[kinds]` match fails."""
        import tomllib

        groups = tomllib.loads(UNITS.read_text(encoding="utf-8"))["groups"]
        ids = set(json.loads(newest_snapshot().read_text(encoding="utf-8"))["results"]) | set(NEW_KERNELS)
        ids |= {f"{name}/{impl}" for name, spec in groups.items() for impl in spec.get("compare", [])}
        self.assertEqual(kinds.unclassified(ids, self.kinds), [])

    def test_the_kernels_span_the_kinds(self) -> None:
        kernels = [i for i in json.loads(newest_snapshot().read_text())["results"] if i.startswith("calibrate.")]
        covered = {self.kinds.of(i) for i in kernels + NEW_KERNELS}
        self.assertEqual(covered, set(kinds.KINDS))

    def test_precedence_matches_the_rust_side(self) -> None:
        # The same examples as benches/src/registry.rs every_group_has_a_kind_of_work.
        self.assertEqual(self.kinds.of("calibrate.fsync/file/4KiB"), "io")
        self.assertEqual(self.kinds.of("codec.crc32/fast/16KiB"), "cpu")
        self.assertEqual(self.kinds.of("store.get_record/ours/callers-10"), "threads")
        self.assertEqual(self.kinds.of("store.get_record/official-pds/callers-10"), "network")
        self.assertEqual(self.kinds.of("segment.append_live/ours.fsync/4096"), "io")
        self.assertEqual(self.kinds.of("appview.point_lookup/postgres/300"), "network")
        self.assertEqual(self.kinds.of("calibrate.copy/stream/64MiB"), "memory")

    def test_an_unclassified_id_is_reported_and_a_bad_kind_refused(self) -> None:
        table = kinds.parse({"codec.*": "cpu"})
        self.assertEqual(kinds.unclassified(["codec.crc32/fast/1", "newarea.op/x/1"], table), ["newarea.op/x/1"])
        with self.assertRaises(kinds.KindsError):
            kinds.parse({"codec.*": "gpu"})


def m(i: str, kind: str, control: bool, head: tuple[float, ...]) -> pairing.Measured:
    return pairing.Measured(i, "hotpath", control, (100.0,) * len(head), head, kind)


class FloorByKindTest(unittest.TestCase):
    def test_a_cpu_row_is_held_to_the_cpu_controls_not_to_memory_bandwidth(self) -> None:
        """The issue's case: the copy kernel moved 14 %; a 5 % CPU change is still seen."""
        measured = [
            m("codec.x/ours/1", "cpu", False, (105.0, 105.5, 104.8, 105.2, 105.1)),
            m("codec.x/raw/1", "cpu", True, (101.0, 100.5, 101.2, 100.8, 101.0)),
            m("calibrate.cpu/fixed/1MiB", "cpu", True, (100.5, 99.8, 100.2, 100.4, 100.1)),
            m("calibrate.copy/stream/64MiB", "memory", True, (86.0, 88.0, 85.0, 87.0, 86.0)),
            m("store.x/ours/1", "io", False, (108.0, 109.0, 107.0, 108.5, 108.0)),
        ]
        outcome = pairing.analyse(measured)
        by_id = {r.id: r for r in outcome.rows}
        self.assertAlmostEqual(outcome.floor, 0.14)  # the old single floor
        self.assertAlmostEqual(outcome.kinds["cpu"].floor, 0.02)
        self.assertEqual(by_id["codec.x/ours/1"].verdict, "slower")
        # io has no control: held to all controls' floor (14 %), so its 8 % reads "same".
        self.assertIsNone(outcome.kinds["io"].spread)
        self.assertAlmostEqual(by_id["store.x/ours/1"].floor, 0.14)
        self.assertEqual(by_id["store.x/ours/1"].verdict, "same")
        record = pairing.record(outcome)
        self.assertEqual(record["floors_by_kind"]["memory"]["floor_pct"], 14.0)
        self.assertEqual(record["floors_by_kind"]["io"]["controls_spread_pct"], None)

    def test_kind_of_fills_unnamed_kinds(self) -> None:
        measured = [pairing.Measured("calibrate.copy/stream/64MiB", "t", True, (100.0,), (120.0,))]
        outcome = pairing.analyse(measured, kind_of=kinds.load(UNITS).of)
        self.assertEqual(outcome.rows[0].kind, "memory")


def paired_record(rows: int) -> dict:
    measured = [m(f"codec.x{k}/ours/1", "cpu", False, (110.0 + k,) * 5) for k in range(rows)]
    measured += [m(f"codec.y{k}/ours/1", "cpu", False, (90.0,) * 5) for k in range(3)]
    measured += [m("calibrate.cpu/fixed/1MiB", "cpu", True, (100.5,) * 5)]
    record = pairing.record(pairing.analyse(measured))
    return {
        "baseline": {"snapshot": "bench-20261201T000000Z.json", "commit": "b" * 40},
        "head": {"commit": "c" * 40, "dirty": False},
        "pairs": 5,
        "targets": {"hotpath": {"remeasured": True, "why": "crates/codec changed", "unpaired": []},
                    "store": {"remeasured": False, "why": "code unchanged"}},
        **record,
    }


class FirstScreenTest(unittest.TestCase):
    def snapshot(self, paired) -> dict:
        results = {f"store.z{k}/ours/1": {} for k in range(7)}
        return {"created": "2026-12-07T12:00:00Z", "label": "a change", "git": {"commit": "c" * 40},
                "cpu": {"cores": 2}, "load": {"1m": 0.5, "5m": 0.6, "15m": 0.7}, "results": results,
                "paired": paired, "fingerprint": {}}

    def render(self, snapshot) -> list[str]:
        lines = first_screen.render(snapshot, None, "bench-20261201T000000Z.json", None,
                                    lambda i: ["store"] if i.startswith("store.") else ["hotpath"])
        self.assertEqual(lines[-1], first_screen.END)
        return lines[:-1]

    def test_at_most_30_lines_slower_first_then_n_more(self) -> None:
        lines = self.render(self.snapshot(paired_record(30)))
        self.assertLessEqual(len(lines) + 1, first_screen.LIMIT)  # + the banner above it
        text = "\n".join(lines)
        self.assertIn("**30 slower, 3 faster, 0 same, 7 code unchanged**", text)
        self.assertIn("cpu 2.0 % (1 controls)", text)
        rows = [line for line in lines if line.startswith("| `")]
        self.assertLessEqual(len(rows), first_screen.ROWS)
        self.assertTrue(all("slower" in r for r in rows))  # slower first; the faster ones below
        self.assertIn(f"… {33 - len(rows)} more", text)

    def test_no_remeasure_is_counts_only_nothing_bold(self) -> None:
        lines = self.render(self.snapshot(None))
        text = "\n".join(lines)
        self.assertNotIn("**", text)
        self.assertIn("No verdicts (not re-measured): 7 ids measured", text)
        self.assertIn("No cross-run deltas: no earlier snapshot", text)

    def test_cross_run_only_when_loads_and_calibrations_agree(self) -> None:
        here = {"load": {"15m": 0.7}, "results": {"calibrate.cpu/fixed/1MiB": {"median_ns": 100.0}}}
        calm = {"load": {"15m": 1.2}, "results": {"calibrate.cpu/fixed/1MiB": {"median_ns": 104.0}}}
        loaded = {"load": {"15m": 6.0}, "results": calm["results"]}
        moved = {"load": {"15m": 0.9}, "results": {"calibrate.cpu/fixed/1MiB": {"median_ns": 130.0}}}
        self.assertTrue(first_screen.cross_run_comparable(here, calm)[0])
        self.assertFalse(first_screen.cross_run_comparable(here, loaded)[0])
        self.assertIn("calibration moved", first_screen.cross_run_comparable(here, moved)[1])
        self.assertFalse(first_screen.cross_run_comparable(here, {"results": calm["results"]})[0])


class CommittedLatestTest(unittest.TestCase):
    def test_committed_latest_is_the_new_renderer_of_the_newest_snapshot_and_small(self) -> None:
        latest = (HISTORY / "latest.md").read_text(encoding="utf-8")
        self.assertLess(len(latest.encode("utf-8")), 100_000)
        screen = latest.split(first_screen.END)[0].splitlines()
        self.assertLessEqual(len(screen), first_screen.LIMIT)
        self.assertIn(newest_snapshot().stem.replace("bench-", "bench-"), latest)
        # Rendering it again changes nothing (no bench, no build).
        import subprocess

        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / newest_snapshot().name
            copy.write_bytes(newest_snapshot().read_bytes())
            record = json.loads(copy.read_text()).get("baseline") or {}
            if record.get("file"):
                (Path(tmp) / record["file"]).write_bytes((HISTORY / record["file"]).read_bytes())
            (Path(tmp) / "renames.json").write_bytes((HISTORY / "renames.json").read_bytes())
            subprocess.run([sys.executable, str(REPO / "scripts" / "bench_snapshot.py"), "--rerender", str(copy),
                            "--units", str(UNITS)], check=True, capture_output=True)
            self.assertEqual((Path(tmp) / "latest.md").read_text(encoding="utf-8"), latest)


if __name__ == "__main__":
    unittest.main()


class WaitKernelsTest(unittest.TestCase):
    def test_wait_kernels_are_controls_but_not_the_fingerprint(self) -> None:
        from atbench_snapshot import machine

        results = {i: {"median_ns": 1.0} for i in NEW_KERNELS + ["calibrate.cpu/fixed/1MiB"]}
        self.assertEqual(list(machine.calibration_medians(results)), ["calibrate.cpu/fixed/1MiB"])
