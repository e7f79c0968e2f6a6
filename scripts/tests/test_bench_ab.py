"""scripts/bench_ab.py: the verdict rule, the report, argument errors, captured Criterion
output of a real A/B, and an end-to-end run on the fixture bench (fixtures/ab_bench) where B
is made slower on purpose for one id."""

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
from atbench_snapshot.criterion import read_criterion_dir

from .helpers import FIXTURES

CAPTURE = FIXTURES / "ab-capture"
AB_BENCH = FIXTURES / "ab_bench"
REPO = Path(__file__).resolve().parents[2]
FIXTURE_TARGET = REPO / "target" / "ab-fixture-target"


def medians(run: Path) -> dict[str, float]:
    return {i: r["median_ns"] for i, r in read_criterion_dir(run).items()}


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


class VerdictTest(unittest.TestCase):
    def test_every_round_must_agree_and_pass_the_floor(self) -> None:
        self.assertEqual(bench_ab.verdict([1.10, 1.12, 1.11], 0.02)[2], "slower")
        self.assertEqual(bench_ab.verdict([0.80, 0.82, 0.81], 0.02)[2], "faster")
        self.assertEqual(bench_ab.verdict([1.10, 0.99, 1.11], 0.02)[2], "same")  # one round dissents
        self.assertEqual(bench_ab.verdict([1.01, 1.015, 1.012], 0.02)[2], "same")  # within the floor
        # The spread raises the floor: every round slower, but by less than they scatter.
        middle, spread, word = bench_ab.verdict([1.05, 1.20, 1.06], 0.02)
        self.assertAlmostEqual(spread, 0.15)
        self.assertEqual((middle, word), (1.06, "same"))

    def test_captured_rounds(self) -> None:
        a = [medians(CAPTURE / "a" / f"round-{k}") for k in (1, 2, 3)]
        b = [medians(CAPTURE / "b" / f"round-{k}") for k in (1, 2, 3)]
        rows = bench_ab.analyse(a, b, 0.02)
        self.assertEqual([r.id for r in rows][0], "fixture.work/beta/1k")
        by_id = {r.id: r for r in rows}
        self.assertEqual(by_id["fixture.work/beta/1k"].verdict, "slower")
        self.assertGreater(by_id["fixture.work/beta/1k"].median_ratio, 4)
        for other in ("fixture.work/alpha/1k", "fixture.work/gamma/1k"):
            self.assertEqual(by_id[other].verdict, "same")
        beta = by_id["fixture.work/beta/1k"]
        self.assertEqual(beta.ratios, [y / x for x, y in zip(beta.a_ns, beta.b_ns, strict=True)])

    def test_report_puts_flagged_rows_first(self) -> None:
        rows = bench_ab.analyse([{"x.a/i/1": 100.0, "x.b/i/1": 100.0}], [{"x.a/i/1": 100.0, "x.b/i/1": 150.0}], 0.02)
        meta = {
            "created": "2026-12-02T00:00:00Z",
            "rounds": "1",
            "a_sha": "a" * 40,
            "b_sha": "b" * 40,
            "a_subject": "base",
            "b_subject": "change",
            "dirty": "yes",
            "machine": "M",
            "command": "c",
        }
        text = bench_ab.report(rows, meta, ["x.new/i/1"], [], 0.02)
        table = [line for line in text.splitlines() if line.startswith("| `")]
        self.assertTrue(table[0].startswith("| `x.b/i/1`") and table[0].endswith("| **slower** |"))
        self.assertIn("**1 slower, 0 faster, 1 same**", text)
        self.assertIn("+ uncommitted changes", text)
        self.assertIn("Only in B (not compared): `x.new/i/1`", text)


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
        worktree = bench_ab.base_worktree(self.root, sha, target / "ab")
        (worktree / "src" / "lib.rs").write_text("// edited\n")
        self.expect_error(
            ["--root", str(self.root), "--base", "HEAD", "--target-dir", str(target), "--bench", "fixture"],
            "has uncommitted changes",
        )


@unittest.skipIf(shutil.which("cargo") is None, "cargo is not on PATH: no fixture bench to build")
class EndToEndTest(unittest.TestCase):
    """Builds the fixture bench twice (target dir shared under the repository's target/) and runs
    three rounds; B sets AB_FIXTURE_SLOW=1, which makes beta ten times the work."""

    def test_flags_exactly_the_slowed_id(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            shutil.copytree(AB_BENCH, root)
            git_repo(root)
            common = ["--root", str(root), "--base", "HEAD", "--bench", "fixture", "--target-dir", str(FIXTURE_TARGET)]
            status, _, err = main_quietly([*common, "--filter", "nothing-matches"])
            self.assertEqual(status, 2, err)
            self.assertIn("matches no benchmark", err)
            # A 10 % floor: the test checks the mechanism, not this machine's noise.
            argv = [*common, "--rounds", "3", "--floor", "10", "--env-b", "AB_FIXTURE_SLOW=1", "--fail-on-slower"]
            status, out, err = main_quietly(argv)
            self.assertEqual(status, 1, err)
            verdicts = {
                line.split("`")[1]: line.rstrip(" |").rsplit("| ", 1)[1]
                for line in out.splitlines()
                if line.startswith("| `")
            }
            self.assertEqual(
                verdicts,
                {"fixture.work/beta/1k": "**slower**", "fixture.work/alpha/1k": "same", "fixture.work/gamma/1k": "same"},
            )
            self.assertIn("round 3/3: B", err)
            written = list((root / "bench-history").glob("ab-*.md"))
            self.assertEqual(len(written), 1)
            self.assertEqual(written[0].read_text(), out)
            # The base worktree belongs to this throwaway repository: remove it with it.
            for worktree in (FIXTURE_TARGET / "ab").glob("base-*"):
                shutil.rmtree(worktree, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    unittest.main()
