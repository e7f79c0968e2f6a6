"""scripts/instructions.py: the id mapping and summary reading on captured gungraun output,
the gate's rules (growth past the threshold, ids added or gone, unseen features recorded), and,
where the pinned runner and valgrind are installed, two real runs giving identical counts."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path

import instructions

from tests.helpers import FIXTURES

CAPTURE = FIXTURES / "instructions-capture"


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = instructions.main(list(argv))
    return status, out.getvalue(), err.getvalue()


class IdsAndSummaries(unittest.TestCase):
    def test_case_ids_map_to_atbench_ids(self) -> None:
        self.assertEqual(instructions.atbench_id("crc32", "fast__16KiB"), "instructions.crc32/fast/16KiB")
        self.assertEqual(instructions.atbench_id("mst_add", "ours_cold__10k"), "instructions.mst_add/ours.cold/10k")
        self.assertEqual(instructions.atbench_id("decode_block", "ours__4096_mix"),
                         "instructions.decode_block/ours/4096-mix")
        for bad in (None, "", "fast", "fast_16KiB", "__16KiB"):
            with self.assertRaises(instructions.UsageError, msg=repr(bad)):
                instructions.atbench_id("crc32", bad)

    def test_captured_summaries_read_as_instruction_counts(self) -> None:
        counts = instructions.read_summaries(CAPTURE)
        self.assertEqual(counts, {
            "instructions.crc32/fast/16KiB": 7679,
            "instructions.decode_block/ours/4096-mix": 12003352,
            "instructions.mst_add/ours.cold/10k": 964152,
        })
        instructions.check_registered(counts)

    def test_an_unregistered_id_is_refused(self) -> None:
        with self.assertRaises(instructions.UsageError):
            instructions.check_registered({"instructions.crc32/bitwise/16KiB": 1})
        with self.assertRaises(instructions.UsageError):
            instructions.check_registered({"instructions.nothing/ours/1": 1})

    def test_an_empty_home_is_an_error(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, self.assertRaises(instructions.UsageError):
            instructions.read_summaries(Path(tmp))

    def test_cargo_config_gives_each_workspace_crate_one_codegen_unit(self) -> None:
        args = instructions.cargo_config()
        self.assertEqual(args[0::2], ["--config"] * len(instructions.WORKSPACE_PACKAGES))
        self.assertIn("profile.bench.package.repo.codegen-units=1", args[1::2])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(instructions.main(["cargo-config"]), 0)
        self.assertEqual(out.getvalue().split(), args)

    def test_the_pinned_version_comes_from_the_workspace(self) -> None:
        version = instructions.pinned_version()
        self.assertRegex(version, r"^\d+\.\d+\.\d+$")


class Gate(unittest.TestCase):
    BASE = {"instructions.a/x/1": 1000, "instructions.b/y/2": 2_000_000}

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.history = self.tmp / "instructions.json"

    def counts_file(self, name: str, counts: dict[str, int]) -> Path:
        path = self.tmp / name
        path.write_text(json.dumps(counts))
        return path

    def gate(self, command: str, counts: dict[str, int], features: str = "avx2+sha_ni") -> tuple[int, str]:
        status, out, err = run_main(command, "--counts", str(self.counts_file(f"{command}.json", counts)),
                                    "--history", str(self.history), "--features", features)
        return status, out + err

    def test_unseen_features_are_recorded_not_failed(self) -> None:
        status, out = self.gate("check", self.BASE)
        self.assertEqual(status, 0, out)
        self.assertIn("no committed counts for features avx2+sha_ni", out)
        entry = json.loads(self.history.read_text())["entries"]["avx2+sha_ni"]
        self.assertEqual(entry["counts"], self.BASE)
        self.assertEqual(entry["cpu_features"], ["avx2", "sha_ni"])

    def test_growth_past_one_percent_fails_and_every_delta_is_printed(self) -> None:
        self.gate("update", self.BASE)
        grown = {"instructions.a/x/1": 1011, "instructions.b/y/2": 2_010_000}
        status, out = self.gate("check", grown)
        self.assertEqual(status, 1, out)
        self.assertIn("instructions.a/x/1 grew +1.10%", out)
        self.assertIn("+0.50%", out)  # b's change, printed though within the threshold
        self.assertNotIn("instructions.b/y/2 grew", out)

    def test_within_the_threshold_or_fewer_instructions_passes(self) -> None:
        self.gate("update", self.BASE)
        status, out = self.gate("check", {"instructions.a/x/1": 1010, "instructions.b/y/2": 1_000_000})
        self.assertEqual(status, 0, out)
        self.assertIn("-50.00%", out)

    def test_added_or_removed_ids_fail_until_updated(self) -> None:
        self.gate("update", self.BASE)
        status, out = self.gate("check", {"instructions.a/x/1": 1000, "instructions.c/z/3": 5})
        self.assertEqual(status, 1, out)
        self.assertIn("instructions.c/z/3 has no committed count", out)
        self.assertIn("instructions.b/y/2 no longer runs", out)

    def test_update_rewrites_only_this_features_entry(self) -> None:
        self.gate("update", self.BASE, features="avx2")
        self.gate("update", {"instructions.a/x/1": 7}, features="sse4_2")
        self.gate("update", {"instructions.a/x/1": 9}, features="avx2")
        entries = json.loads(self.history.read_text())["entries"]
        self.assertEqual(entries["avx2"]["counts"], {"instructions.a/x/1": 9})
        self.assertEqual(entries["sse4_2"]["counts"], {"instructions.a/x/1": 7})

    def test_compare_exits_one_unless_identical(self) -> None:
        a = self.counts_file("a.json", self.BASE)
        b = self.counts_file("b.json", self.BASE)
        c = self.counts_file("c.json", {**self.BASE, "instructions.a/x/1": 1001})
        self.assertEqual(run_main("compare", str(a), str(b))[0], 0)
        self.assertEqual(run_main("compare", str(a), str(c))[0], 1)

    def test_a_bad_counts_file_is_a_one_line_error(self) -> None:
        bad = self.tmp / "bad.json"
        bad.write_text('{"x": "many"}')
        status, _, err = run_main("check", "--counts", str(bad), "--history", str(self.history))
        self.assertEqual(status, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)


def _runner_ready() -> bool:
    return instructions.runner_path().exists() and shutil.which("valgrind") is not None


@unittest.skipUnless(_runner_ready() or os.environ.get("BENCH_REQUIRE_LIVE") == "1",
                     "the pinned gungraun-runner is not in target/tools (python3 scripts/instructions.py "
                     "install) or valgrind is missing")
class TwoRuns(unittest.TestCase):
    def test_two_runs_count_exactly_the_same(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            first = instructions.run(out=Path(tmp) / "first.json")
            second = instructions.run(out=Path(tmp) / "second.json")
        self.assertGreaterEqual(len(first), 12)
        self.assertEqual(first, second)


if __name__ == "__main__":
    unittest.main()
