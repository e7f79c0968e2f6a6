"""Pairs where undecided (pairing.undecided / sequential_verdict / false_positive_rate, and
remeasure._extend): the rule, its stated false-positive rate checked by simulation, and the
rule on captured null data (fixtures/null-pairs.json: the control rows of the committed A/B
reports)."""

from __future__ import annotations

import json
import random
import unittest

from atbench_snapshot import pairing

from .helpers import FIXTURES


class RuleTest(unittest.TestCase):
    def test_borderline_rows_get_more_pairs_clear_ones_do_not(self) -> None:
        self.assertTrue(pairing.undecided([1.03, 1.03, 1.035, 1.025, 1.03], 0.02))  # 3 %: in (2 %, 4 %]
        self.assertFalse(pairing.undecided([1.10, 1.11, 1.09, 1.10, 1.12], 0.02))  # past twice the floor
        self.assertFalse(pairing.undecided([1.03, 0.99, 1.035, 1.025, 1.03], 0.02))  # a pair dissents
        self.assertFalse(pairing.undecided([1.01, 1.01, 1.012, 1.01, 1.01], 0.02))  # within the floor
        self.assertTrue(pairing.undecided([0.97, 0.97, 0.965, 0.975, 0.97], 0.02))  # faster, borderline

    def test_the_extended_verdict_is_a_sign_test(self) -> None:
        self.assertEqual(pairing.needed(15), 12)
        real = [1.03] * 13 + [0.99] * 2  # 13 of 15 slower: a verdict
        self.assertEqual(pairing.sequential_verdict(real, 0.02), "slower")
        drift = [1.03] * 5 + [1.01, 0.99, 0.98, 1.02, 0.99, 1.0, 0.98, 1.03, 0.99, 1.01]  # the first 5 by chance
        self.assertEqual(pairing.sequential_verdict(drift, 0.02), "same")
        self.assertEqual(pairing.sequential_verdict([1.03] * 5, 0.02), pairing.verdict([1.03] * 5, 0.02))

    def test_extended_rows_are_judged_by_the_sequential_rule(self) -> None:
        m = pairing.Measured("codec.x/ours/1", "t", False, (100.0,) * 15, tuple([103.0] * 5 + [99.0, 101.0] * 5))
        self.assertEqual(pairing.analyse([m]).rows[0].verdict, "same")  # one-stage rule: a dissent
        self.assertEqual(pairing.analyse([m], extended={m.id}).rows[0].verdict, "same")
        good = pairing.Measured("codec.x/ours/1", "t", False, (100.0,) * 15, tuple([103.0] * 13 + [99.0] * 2))
        self.assertEqual(pairing.analyse([good], extended={good.id}).rows[0].verdict, "slower")


class FalsePositiveRateTest(unittest.TestCase):
    def test_the_stated_rate_is_the_exact_one_and_simulation_agrees(self) -> None:
        self.assertAlmostEqual(pairing.false_positive_rate(5), 0.0625)
        self.assertAlmostEqual(pairing.false_positive_rate(15), 22 / 2048)  # 1.07 %
        # Null rows: each pair's ratio symmetric around 1 (no change), floor 0: only the sign
        # test decides. The sequence (5 pairs, then 10 more where all 5 agreed) flags ~1.07 %.
        rng = random.Random(48)
        trials, flagged, one_stage = 40_000, 0, 0
        for _ in range(trials):
            ratios = [1 + rng.gauss(0, 0.01) for _ in range(15)]
            first = ratios[:5]
            if pairing.verdict(first, 0.0) != "same":
                one_stage += 1
                if pairing.sequential_verdict(ratios, 0.0) != "same":
                    flagged += 1
        self.assertAlmostEqual(one_stage / trials, 0.0625, delta=0.005)
        self.assertAlmostEqual(flagged / trials, pairing.false_positive_rate(15), delta=0.003)


class CapturedNullTest(unittest.TestCase):
    def test_captured_controls_are_never_flagged_outright(self) -> None:
        """71 control rows of the committed A/B reports (no change reached them): at the 2 %
        minimum floor, the one-stage rule would flag 3 (4.2 %); every one of the 3 sits in
        (bar, 2 x bar], so the sequential rule gives it more pairs instead of a verdict."""
        rows = json.loads((FIXTURES / "null-pairs.json").read_text())["rows"]
        self.assertEqual(len(rows), 71)
        one_stage = undecided = outright = 0
        for row in rows:
            ratios = [row["min"], row["ratio"], row["ratio"], row["ratio"], row["max"]]  # direction and median as captured
            noise = (row["noise_pct"] or 0) / 100
            if pairing.verdict(ratios, 0.02, noise) != "same":
                one_stage += 1
                if pairing.undecided(ratios, 0.02, noise):
                    undecided += 1
                else:
                    outright += 1
        self.assertEqual((one_stage, undecided, outright), (3, 3, 0))


if __name__ == "__main__":
    unittest.main()
