"""The pairing rule (atbench_snapshot/pairing.py) on numbers and on captured Criterion output of
a real A/B (fixtures/ab-capture), and the driven protocol (drive.py) against a stand-in bench
executable that speaks it, with ids only one build runs."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

from atbench_snapshot import drive, pairing
from atbench_snapshot.builds import Build
from atbench_snapshot.criterion import read_criterion_dir

from .helpers import FIXTURES

CAPTURE = FIXTURES / "ab-capture"


def medians(run: Path) -> dict[str, float]:
    return {i: r["median_ns"] for i, r in read_criterion_dir(run).items()}


class RuleTest(unittest.TestCase):
    def test_every_pair_must_agree_and_pass_the_floor(self) -> None:
        self.assertEqual(pairing.verdict([1.10, 1.12, 1.11], 0.02), "slower")
        self.assertEqual(pairing.verdict([0.80, 0.82, 0.81], 0.02), "faster")
        self.assertEqual(pairing.verdict([1.10, 0.99, 1.11], 0.02), "same")  # one pair dissents
        self.assertEqual(pairing.verdict([1.01, 1.015, 1.012], 0.02), "same")  # within the floor
        self.assertEqual(pairing.verdict([1.05, 1.06, 1.07], 0.065), "same")  # a floor raised by the controls
        self.assertEqual(pairing.verdict([], 0.02), "same")

    def test_a_row_noisier_than_its_move_is_not_flagged(self) -> None:
        # Captured on a loaded 2-core VM (a throwaway commit that made repo::cbor::json::to_json
        # render five times, floor 31.9 %): the slowed function's row moved past its own noise;
        # mst_add/100k and mst_build/1k, which the commit cannot reach, had every pair agree
        # by chance but moved less than their own measurements of one build did.
        slowed = pairing.Measured(
            "repo.cbor_to_json/ours/post", "repo", False,
            (1238.124, 1312.079, 1257.302, 1239.501, 1256.851), (2713.856, 2709.325, 2939.452, 2763.661, 2718.452),
        )
        by_chance = pairing.Measured(
            "repo.mst_add/ours/100k", "repo", False,
            (6161.361, 6335.342, 6498.418, 6037.593, 6304.356), (6456.26, 11633.302, 12217.325, 9663.824, 6675.68),
        )
        build_noise = pairing.Measured(
            "repo.mst_build/ours/1k", "repo", False,
            (671443.722, 390415.25, 378175.75, 935694.75, 1058829.125),
            (379065.4, 381705.4, 373254.6, 392468.375, 378952.0),
        )
        outcome = pairing.analyse([slowed, by_chance, build_noise], minimum=0.319)
        verdicts = {row.id: row.verdict for row in outcome.rows}
        self.assertEqual(verdicts["repo.cbor_to_json/ours/post"], "slower")
        self.assertEqual(verdicts["repo.mst_add/ours/100k"], "same")
        self.assertEqual(verdicts["repo.mst_build/ours/1k"], "same")
        self.assertEqual(pairing.verdict([1.6, 1.8, 1.9], 0.02, noise=0.9), "same")
        self.assertEqual(pairing.verdict([0.5, 0.55, 0.52], 0.02, noise=0.95), "same")  # 1/0.52 - 1 < 0.95
        self.assertEqual(pairing.verdict([0.5, 0.55, 0.52], 0.02, noise=0.3), "faster")

    def test_controls_set_the_floor_and_are_never_flagged(self) -> None:
        measured = [
            pairing.Measured("a.x/ours/1", "t", False, (100.0,) * 3, (106.0, 107.0, 105.0)),
            pairing.Measured("a.y/ours/1", "t", False, (100.0,) * 3, (103.0, 103.5, 103.0)),
            pairing.Measured("calibrate.cpu/fixed/1", "t", True, (100.0,) * 3, (96.0, 95.0, 97.0)),
            pairing.Measured("a.x/raw/1", "t", True, (100.0,) * 3, (101.0, 102.0, 101.0)),
        ]
        outcome = pairing.analyse(measured)
        self.assertAlmostEqual(outcome.controls_spread, 0.04)  # the kernel's median moved 4 %
        self.assertAlmostEqual(outcome.floor, 0.04)
        by_id = {r.id: r.verdict for r in outcome.rows}
        self.assertEqual(by_id, {"a.x/ours/1": "slower", "a.y/ours/1": "same", "calibrate.cpu/fixed/1": "same",
                                 "a.x/raw/1": "same"})
        self.assertEqual(outcome.rows[0].id, "a.x/ours/1")
        self.assertEqual((outcome.count("slower"), outcome.count("same"), outcome.controls), (1, 1, 2))
        record = pairing.record(outcome)
        self.assertEqual(record["floor_pct"], 4.0)
        self.assertEqual(record["rows"][0]["ratios"], [1.06, 1.07, 1.05])
        self.assertEqual(set(record["rows"][0]), {"id", "target", "control", "ratios", "ratio", "min", "max", "kind", "floor_pct",
                                                  "noise_pct", "verdict", "base_ns", "head_ns"})

    def test_no_controls_leaves_the_minimum(self) -> None:
        outcome = pairing.analyse([pairing.Measured("a.x/ours/1", "t", False, (100.0,), (101.0,))])
        self.assertIsNone(outcome.controls_spread)
        self.assertEqual(outcome.floor, pairing.DEFAULT_MINIMUM)

    def test_captured_pairs(self) -> None:
        """Three pairs of a real run where B's beta did five times the rounds; gamma, which
        did the same work in both builds, stands as the control."""
        a = [medians(CAPTURE / "a" / f"round-{k}") for k in (1, 2, 3)]
        b = [medians(CAPTURE / "b" / f"round-{k}") for k in (1, 2, 3)]
        measured = [
            pairing.Measured(i, "fixture", i.endswith("gamma/1k"), tuple(r[i] for r in a), tuple(r[i] for r in b))
            for i in sorted(a[0])
        ]
        outcome = pairing.analyse(measured)
        by_id = {r.id: r for r in outcome.rows}
        self.assertEqual(outcome.rows[0].id, "fixture.work/beta/1k")
        self.assertEqual(by_id["fixture.work/beta/1k"].verdict, "slower")
        self.assertGreater(by_id["fixture.work/beta/1k"].ratio, 4)
        self.assertEqual(by_id["fixture.work/alpha/1k"].verdict, "same")
        gamma = by_id["fixture.work/gamma/1k"]
        self.assertAlmostEqual(outcome.floor, max(0.02, abs(gamma.ratio - 1)))
        beta = by_id["fixture.work/beta/1k"]
        self.assertEqual(list(beta.ratios), [y / x for x, y in zip(beta.base_ns, beta.head_ns, strict=True)])


class OpeningTest(unittest.TestCase):
    """latest.md's first lines from a "paired" record: what was re-measured and why, what reads
    "code unchanged", the floor, the flagged rows."""

    def test_opening_lines(self) -> None:
        from atbench_snapshot import paired_report, remeasure, targets

        measured = [
            pairing.Measured("a.x/ours/1", "store", False, (100.0,) * 3, (110.0, 111.0, 109.0)),
            pairing.Measured("a.y/ours/1", "store", False, (100.0,) * 3, (100.0, 101.0, 99.0)),
            pairing.Measured("calibrate.cpu/fixed/1", "store", True, (100.0,) * 3, (103.0, 103.0, 103.0)),
        ]
        ws = targets.Workspace({}, {}, {"store": "s", "hotpath": "h", "xrpc": "x"})
        touched = {"store": "crates/store changed (src/lib.rs)", "hotpath": None, "xrpc": "crates/xrpc changed (src/a.rs)"}
        plan = remeasure.Plan("b" * 40, "h" * 40, False, ["crates/store/src/lib.rs"], targets.classify(ws, []),
                              touched, {}, ws)
        result = remeasure.Result(plan, {"store": touched["store"]}, pairing.analyse(measured), {"store": "driven"},
                                  {"store": []}, {"store": 30.0}, 3, {"xrpc": "no result in this snapshot"})
        record = result.record("bench-20261204T200448Z.json")
        self.assertEqual(record["targets"]["hotpath"], {"remeasured": False, "why": "code unchanged"})
        self.assertEqual(record["baseline"], {"snapshot": "bench-20261204T200448Z.json", "commit": "b" * 40})
        text = "\n".join(paired_report.opening(record, None, {}))
        self.assertIn("**1 slower, 0 faster, 1 same** of 2 ids re-measured", text)
        self.assertIn("all controls' floor, 3.0 %", text)
        self.assertIn("the controls' spread 3.0 % over 1 control rows", text)
        self.assertIn("- Re-measured **store**, driven: crates/store changed (src/lib.rs).", text)
        self.assertIn("- Not re-measured **xrpc**: no result in this snapshot.", text)
        self.assertIn("- Code unchanged (no verdict, not re-measured): hotpath.", text)
        flagged = [line for line in text.splitlines() if line.startswith("| `")]
        self.assertEqual(len(flagged), 1)
        self.assertTrue(flagged[0].startswith("| `a.x/ours/1` | store | 100 ns | 110 ns | 1.100 |"), flagged)
        self.assertEqual(paired_report.paired_cell("a.x/ours/1", {}, record, lambda i: ["store"]), "**slower** 1.100")
        self.assertEqual(paired_report.paired_cell("h.z/ours/1", {}, record, lambda i: ["hotpath"]), "code unchanged")


# A stand-in for a bench executable in the driven mode: announces FAKE_IDS in order, answers
# `measure` by writing Criterion's files: a fastest sample of 100 ns (FAKE_SLOW's id: 150 ns).
FAKE = textwrap.dedent(
    """\
    import json, os, sys
    home = os.environ["CRITERION_HOME"]
    for full_id in os.environ["FAKE_IDS"].split(","):
        print("Benchmarking " + full_id)  # Criterion's own chatter, ignored by the driver
        print("atbench-paired " + json.dumps({"event": "ready", "id": full_id}), flush=True)
        for line in sys.stdin:
            words = line.split()
            if words == ["next"]:
                break
            assert words[0] == "measure" and len(words) == 3, words
            ns = 150.0 if os.environ.get("FAKE_SLOW") == full_id else 100.0
            where = os.path.join(home, *full_id.split("/"), "new")
            os.makedirs(where, exist_ok=True)
            with open(os.path.join(where, "benchmark.json"), "w") as out:
                json.dump({"full_id": full_id, "throughput": None}, out)
            interval = {"lower_bound": ns, "upper_bound": ns}
            with open(os.path.join(where, "estimates.json"), "w") as out:
                json.dump({"median": {"point_estimate": ns, "confidence_interval": interval}}, out)
            with open(os.path.join(where, "sample.json"), "w") as out:  # one disturbed sample, then ns each
                json.dump({"sampling_mode": "Linear", "iters": [1.0, 2.0, 3.0], "times": [9 * ns, 2 * ns, 3 * ns]}, out)
            print("atbench-paired " + json.dumps({"event": "measured", "id": full_id}), flush=True)
        else:
            sys.exit(0)
    print("atbench-paired " + json.dumps({"event": "done"}), flush=True)
    """
)


class DrivenProtocolTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def build(self, name: str) -> Build:
        exe = self.tmp / f"{name}.py"
        exe.write_text(f"#!{sys.executable}\n" + FAKE)
        exe.chmod(0o755)
        return Build(name, name * 4, self.tmp, {"t": exe}, driven=True)

    def test_pairs_alternate_and_one_sided_ids_stay_unpaired(self) -> None:
        base, head = self.build("base"), self.build("head")
        # The baseline runs `x.gone` (since removed), the head runs `x.new` (added); both run the rest.
        settings = drive.Settings(pairs=3, env={"FAKE_IDS": "x.a/ours/1,x.gone/ours/1,x.b/ours/1,calibrate.cpu/fixed/1"},
                                  head_env={"FAKE_IDS": "x.a/ours/1,x.new/ours/1,x.b/ours/1,calibrate.cpu/fixed/1",
                                            "FAKE_SLOW": "x.b/ours/1"})
        expected = ["x.a/ours/1", "x.new/ours/1", "x.b/ours/1", "calibrate.cpu/fixed/1"]
        selection = drive.Selection(wanted=lambda i: not i.startswith("x.skip"),
                                    control=lambda i: i.startswith("calibrate."), expected=expected)
        old = os.environ.pop("BENCH_QUICK", None)
        try:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                done = drive.measure_target("t", base, head, selection, settings, self.tmp / "runs")
        finally:
            if old is not None:
                os.environ["BENCH_QUICK"] = old
        self.assertEqual(done.mode, "driven")
        self.assertIn("t: x.b/ours/1: pair 3 of 3, about", err.getvalue())
        self.assertEqual(done.unpaired, ["x.gone/ours/1", "x.new/ours/1"])
        by_id = {m.id: m for m in done.measured}
        self.assertEqual(sorted(by_id), ["calibrate.cpu/fixed/1", "x.a/ours/1", "x.b/ours/1"])
        self.assertEqual(by_id["x.b/ours/1"].head_ns, (150.0,) * 3)
        self.assertEqual(by_id["x.a/ours/1"].base_ns, (100.0,) * 3)
        outcome = pairing.analyse(done.measured)
        self.assertEqual({r.id: r.verdict for r in outcome.rows},
                         {"x.b/ours/1": "slower", "x.a/ours/1": "same", "calibrate.cpu/fixed/1": "same"})

    def test_a_process_that_dies_is_an_error(self) -> None:
        base, head = self.build("base"), self.build("head")
        broken = self.tmp / "broken.py"
        broken.write_text(f"#!{sys.executable}\nimport sys\nprint('panicked', file=sys.stderr)\nsys.exit(101)\n")
        broken.chmod(0o755)
        head = Build("head", "h", self.tmp, {"t": broken}, driven=True)
        selection = drive.Selection(wanted=lambda i: True, control=lambda i: False)
        with self.assertRaises(drive.DriveError) as caught, contextlib.redirect_stderr(io.StringIO()):
            drive.measure_target("t", base, head, selection, drive.Settings(env={"FAKE_IDS": "x.a/ours/1"}),
                                 self.tmp / "runs")
        self.assertIn("panicked", str(caught.exception))

    def test_filter_regex_matches_exactly(self) -> None:
        import re

        regex = drive.filter_regex(["a.b/c/1k", "a.b/c.d/2"])
        self.assertTrue(re.search(regex, "a.b/c/1k"))
        self.assertFalse(re.search(regex, "a.b/c/1kx"))
        self.assertFalse(re.search(regex, "aXb/c/1k"))


if __name__ == "__main__":
    unittest.main()
