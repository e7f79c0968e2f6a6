"""The paired engine end to end (remeasure.execute over drive.py's driven mode) on a stand-in
bench executable whose head build is made slower on chosen ids: floors by kind, the extension
of undecided ids, and the first screen of the result (issue 48 items 1, 3, 6).

The stand-in (FAKE) announces FAKE_IDS and answers each `measure` with a fastest sample of
100 ns x FAKE_FACTORS[id] (1 when absent), so the pairs are exact and the test is about the
rules, not about this machine. The instruction-count channel is not part of it (not built).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

from atbench_snapshot import drive, first_screen, kinds, remeasure, targets
from atbench_snapshot.builds import Build

REPO = Path(__file__).resolve().parents[2]

FAKE = textwrap.dedent(
    """\
    import json, os, sys
    home = os.environ["CRITERION_HOME"]
    factors = json.loads(os.environ.get("FAKE_FACTORS", "{}"))
    for full_id in os.environ["FAKE_IDS"].split(","):
        print("atbench-paired " + json.dumps({"event": "ready", "id": full_id}), flush=True)
        for line in sys.stdin:
            words = line.split()
            if words == ["next"]:
                break
            ns = 100.0 * factors.get(full_id, 1.0)
            where = os.path.join(home, *full_id.split("/"), "new")
            os.makedirs(where, exist_ok=True)
            with open(os.path.join(where, "benchmark.json"), "w") as out:
                json.dump({"full_id": full_id, "throughput": None}, out)
            interval = {"lower_bound": ns, "upper_bound": ns}
            with open(os.path.join(where, "estimates.json"), "w") as out:
                json.dump({"median": {"point_estimate": ns, "confidence_interval": interval}}, out)
            with open(os.path.join(where, "sample.json"), "w") as out:
                json.dump({"sampling_mode": "Linear", "iters": [1.0, 2.0], "times": [ns, 2 * ns]}, out)
            print("atbench-paired " + json.dumps({"event": "measured", "id": full_id}), flush=True)
        else:
            sys.exit(0)
    print("atbench-paired " + json.dumps({"event": "done"}), flush=True)
    """
)

IDS = [
    "codec.base64_encode/scalar/16KiB",  # cpu: the function a change slows
    "codec.crc32/fast/16KiB",  # cpu, untouched by the change
    "segment.append_live/ours.fsync/4096",  # io: an fsync path
    "calibrate.cpu/fixed/1MiB",
    "calibrate.copy/stream/64MiB",
    "calibrate.fsync/file/4KiB",
]
CONTROLS = {"calibrate.cpu/fixed/1MiB", "calibrate.copy/stream/64MiB", "calibrate.fsync/file/4KiB"}
# The noise of the run: the copy kernel 14 % off, the CPU kernel 1 %, fsync 6 %.
MACHINE = {"calibrate.copy/stream/64MiB": 0.86, "calibrate.cpu/fixed/1MiB": 1.01, "calibrate.fsync/file/4KiB": 1.06}


class EndToEndTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.kinds = kinds.load(REPO / "benches" / "units.toml")

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def build(self, name: str) -> Build:
        exe = self.tmp / f"{name}.py"
        exe.write_text(f"#!{sys.executable}\n" + FAKE)
        exe.chmod(0o755)
        return Build(name, name * 4, self.tmp, {"hotpath": exe}, driven=True)

    def run_pairs(self, head_factors: dict[str, float], max_pairs: int = 15) -> dict:
        settings = drive.Settings(pairs=5, env={"FAKE_IDS": ",".join(IDS)},
                                  head_env={"FAKE_FACTORS": json.dumps(head_factors)})
        selection = drive.Selection(wanted=lambda i: True, control=CONTROLS.__contains__, expected=IDS)
        ws = targets.Workspace({}, {}, {"hotpath": "benches/benches/hotpath.rs"})
        touched = {"hotpath": "crates/codec changed (src/base64/scalar.rs)"}
        plan = remeasure.Plan("b" * 40, "h" * 40, False, ["crates/codec/src/base64/scalar.rs"],
                              targets.classify(ws, []), touched, {}, ws)
        with contextlib.redirect_stderr(io.StringIO()):
            result = remeasure.execute(plan, self.build("base"), self.build("head"), {"hotpath": selection},
                                       touched, settings, self.tmp / "runs", kind_of=self.kinds.of,
                                       max_pairs=max_pairs)
        self.result = result
        return result.record("bench-20261207T000000Z.json")

    def verdicts(self, record: dict) -> dict[str, str]:
        return {r["id"]: r["verdict"] for r in record["rows"] if r["verdict"] != "same"}

    def test_identical_builds_give_nothing(self) -> None:
        record = self.run_pairs(dict(MACHINE))
        self.assertEqual(self.verdicts(record), {})
        self.assertEqual(record["extended"], [])

    def test_a_5_percent_cpu_slowdown_is_flagged_on_its_id_alone(self) -> None:
        record = self.run_pairs({**MACHINE, "codec.base64_encode/scalar/16KiB": 1.05})
        self.assertEqual(self.verdicts(record), {"codec.base64_encode/scalar/16KiB": "slower"})
        # One floor for all would be the copy kernel's 14 %: the 5 % would read "same".
        self.assertAlmostEqual(record["floor_pct"], 14.0, places=1)
        self.assertAlmostEqual(record["floors_by_kind"]["cpu"]["floor_pct"], 2.0)
        self.assertAlmostEqual(record["floors_by_kind"]["memory"]["floor_pct"], 14.0, places=1)

    def test_an_fsync_slowdown_is_flagged_by_pairs(self) -> None:
        record = self.run_pairs({**MACHINE, "segment.append_live/ours.fsync/4096": 1.30})
        self.assertEqual(self.verdicts(record), {"segment.append_live/ours.fsync/4096": "slower"})
        row = next(r for r in record["rows"] if r["id"] == "segment.append_live/ours.fsync/4096")
        self.assertEqual(row["kind"], "io")
        self.assertAlmostEqual(row["floor_pct"], 6.0, places=1)

    def test_an_undecided_id_gets_more_pairs_within_the_budget(self) -> None:
        record = self.run_pairs({**MACHINE, "codec.crc32/fast/16KiB": 1.03})  # in (2 %, 4 %]: undecided
        self.assertEqual(record["extended"], ["codec.crc32/fast/16KiB"])
        row = next(r for r in record["rows"] if r["id"] == "codec.crc32/fast/16KiB")
        self.assertEqual(len(row["ratios"]), 15)
        self.assertEqual(row["verdict"], "slower")  # 15 of 15 agree past the floor
        self.assertEqual(record["sequential"]["false_positive_rate_pct"], 1.07)
        no_budget = self.run_pairs({**MACHINE, "codec.crc32/fast/16KiB": 1.03}, max_pairs=5)
        self.assertEqual(no_budget["extended"], [])

    def test_the_first_screen_of_the_result(self) -> None:
        record = self.run_pairs({**MACHINE, "codec.base64_encode/scalar/16KiB": 1.05})
        snapshot = {"created": "2026-12-07T12:00:00Z", "label": "slower base64", "git": {"commit": "h" * 40},
                    "cpu": {"cores": 2}, "load": {"1m": 0.4, "5m": 0.5, "15m": 0.5},
                    "results": {i: {} for i in IDS}, "paired": record, "fingerprint": {}}
        lines = first_screen.render(snapshot, None, record["baseline"]["snapshot"], None, lambda i: ["hotpath"])
        text = "\n".join(lines)
        self.assertIn("**1 slower, 0 faster, 2 same, 0 code unchanged**", text)
        self.assertIn("cpu 2.0 % (1 controls)", text)
        self.assertIn("| `codec.base64_encode/scalar/16KiB` | cpu | 1.050 |", text)
        self.assertLessEqual(len(lines), first_screen.LIMIT)


if __name__ == "__main__":
    unittest.main()
