"""scripts/bench_ab.py: the report, argument errors, and end-to-end runs on the fixture bench
(fixtures/ab_bench): two builds of identical code give no verdict; B made slower on purpose for
one id is flagged on that id alone. The pairing rule itself is tested in test_pairing.py."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import bench_ab
from atbench_snapshot import builds, pairing, remeasure, targets

from .helpers import FIXTURES

AB_BENCH = FIXTURES / "ab_bench"
REPO = Path(__file__).resolve().parents[2]
FIXTURE_TARGET = REPO / "target" / "ab-fixture-target"


def main_quietly(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = bench_ab.main(argv)
        except SystemExit as exit_:
            status = int(exit_.code or 0)
    return status, out.getvalue(), err.getvalue()


def git_repo(path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")


class ReportTest(unittest.TestCase):
    def test_report_says_pairs_and_floor_and_puts_flagged_rows_first(self) -> None:
        measured = [
            pairing.Measured("x.a/i/1", "t", False, (100.0, 100.0, 100.0), (101.0, 100.0, 99.0)),
            pairing.Measured("x.b/i/1", "t", False, (100.0, 100.0, 100.0), (150.0, 151.0, 149.0)),
            pairing.Measured("calibrate.cpu/fixed/1k", "t", True, (100.0, 100.0, 100.0), (103.0, 104.0, 103.5)),
        ]
        ws = targets.Workspace({}, {}, {"t": "benches"})
        plan = remeasure.Plan("a" * 40, "b" * 40, True, [], targets.classify(ws, []), {"t": None}, {}, ws)
        result = remeasure.Result(plan, {"t": "named with --bench"}, pairing.analyse(measured), {"t": "driven"},
                                  {"t": ["x.new/i/1"]}, {"t": 12.0}, 3)
        meta = {"created": "2026-12-02T00:00:00Z", "a_sha": "a" * 40, "b_sha": "b" * 40, "a_subject": "base",
                "b_subject": "change", "dirty": "yes", "machine": "M", "command": "c"}
        text = bench_ab.report(result, meta)
        table = [line for line in text.splitlines() if line.startswith("| `")]
        self.assertTrue(table[0].startswith("| `x.b/i/1`") and table[0].endswith("| **slower** |"), table)
        self.assertTrue(table[-1].startswith("| `calibrate.cpu/fixed/1k` | t (control) |"), table)
        self.assertIn("**1 slower, 0 faster, 1 same** (B against A, 3 pairs per id", text)
        # The control moved 3.5 %: that, not the 2 % minimum, is the floor.
        self.assertIn("**Floor 3.5 %**", text)
        self.assertIn("+ uncommitted changes", text)
        self.assertIn("only one build runs (not compared): `x.new/i/1`", text)
        self.assertIn("| id | target | A median | B median |", text)


class ArgumentErrorTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name) / "repo"
        shutil.copytree(AB_BENCH, self.root)
        git_repo(self.root)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def expect_error(self, argv: list[str], words: str) -> None:
        status, out, err = main_quietly(argv)
        self.assertEqual(status, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn(words, err)

    def test_unknown_ref(self) -> None:
        self.expect_error(["--root", str(self.root), "--base", "no-such-ref"], "is not a commit")

    def test_bad_values(self) -> None:
        self.expect_error(["--base", "HEAD", "--rounds", "0"], "rounds must be")
        self.expect_error(["--base", "HEAD", "--filter", "("], "not a regular expression")
        self.expect_error(["--base", "HEAD", "--env-b", "=x"], "is not KEY=VALUE")

    def test_dirty_base_worktree(self) -> None:
        sha = subprocess.run(
            ["git", "-C", str(self.root), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()
        target = Path(self._tmp.name) / "target"
        worktree = builds.base_worktree(self.root, sha, target / "paired")
        (worktree / "src" / "lib.rs").write_text("// edited\n")
        self.expect_error(
            ["--root", str(self.root), "--base", "HEAD", "--target-dir", str(target), "--bench", "fixture"],
            "has uncommitted changes",
        )


@unittest.skipIf(shutil.which("cargo") is None, "cargo is not on PATH: no fixture bench to build")
class EndToEndTest(unittest.TestCase):
    """Builds the fixture bench twice (target dir shared under the repository's target/, so
    criterion compiles once) and measures 3 pairs per id; the fixture has no driven mode, so
    this is the per-pair path every baseline older than the mode takes."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name) / "repo"
        shutil.copytree(AB_BENCH, self.root)
        git_repo(self.root)
        self.common = ["--root", str(self.root), "--base", "HEAD", "--bench", "fixture", "--target-dir",
                       str(FIXTURE_TARGET), "--rounds", "3"]

    def tearDown(self) -> None:
        # The base worktree belongs to this throwaway repository: remove it with it.
        shutil.rmtree(FIXTURE_TARGET / "paired" / "base", ignore_errors=True)
        self._tmp.cleanup()

    def verdicts(self, out: str) -> dict[str, str]:
        return {
            line.split("`")[1]: line.rstrip(" |").rsplit("| ", 1)[1] for line in out.splitlines() if line.startswith("| `")
        }

    def test_identical_builds_then_one_slowed_id(self) -> None:
        status, _, err = main_quietly([*self.common, "--filter", "nothing-matches"])
        self.assertEqual(status, 2, err)
        self.assertIn("matches no benchmark", err)
        # A 10 % minimum floor: the test checks the mechanism, not this machine's noise.
        status, out, err = main_quietly([*self.common, "--floor", "10", "--fail-on-slower"])
        self.assertEqual(status, 0, err + out)
        self.assertEqual(set(self.verdicts(out).values()), {"same"}, out)
        self.assertIn("3 pairs per id", out)
        self.assertIn("pair 3 of 3", err)
        argv = [*self.common, "--floor", "10", "--env-b", "AB_FIXTURE_SLOW=1", "--fail-on-slower"]
        status, out, err = main_quietly(argv)
        self.assertEqual(status, 1, err + out)
        self.assertEqual(
            self.verdicts(out),
            {
                "fixture.work/beta/1k": "**slower**",
                "fixture.work/alpha/1k": "same",
                "fixture.work/gamma/1k": "same",
                "calibrate.cpu/fixed/1k": "same",
            },
        )
        self.assertIn("| `calibrate.cpu/fixed/1k` | fixture (control) |", out)
        written = sorted((self.root / "bench-history").glob("ab-*.md"))
        self.assertEqual(written[-1].read_text(), out)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    unittest.main()
