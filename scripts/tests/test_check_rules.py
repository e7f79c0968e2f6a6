"""Tests of scripts/check_rules.py on small trees written here.

Run from the repository root (Python 3.11, standard library only):

    python3 -m unittest discover -s scripts/tests -t scripts
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import unittest
from pathlib import Path

import check_rules

CARGO = '[package]\nname = "demo"\nversion = "0.1.0"\n'
DATETIME = "pub const DAYS_0000_03_01_TO_EPOCH: i64 = 719_468;\nconst ERA: i64 = 146_097;\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


class Rules(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        write(self.root, {"crates/codec/Cargo.toml": CARGO, "crates/codec/src/lib.rs": "pub mod datetime;\n",
                          "crates/codec/src/datetime.rs": DATETIME})

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def run_rules(self, *rules: str) -> tuple[int, str]:
        out = io.StringIO()
        args = ["--root", str(self.root)] + [f"--rule={r}" for r in rules]
        with contextlib.redirect_stdout(out):
            status = check_rules.main(args)
        return status, out.getvalue()

    def crate(self, files: dict[str, str]) -> None:
        write(self.root, {"crates/demo/Cargo.toml": CARGO, **{f"crates/demo/{k}": v for k, v in files.items()}})

    # --- circles ---

    def test_two_siblings_naming_each_other_are_a_circle(self) -> None:
        self.crate({
            "src/lib.rs": "mod a;\nmod b;\n",
            "src/a.rs": "use crate::b::B;\npub struct A;\n",
            "src/b.rs": "pub struct B;\nfn f() -> crate::a::A { crate::a::A }\n",
        })
        status, out = self.run_rules("circles")
        self.assertEqual(status, 1)
        self.assertIn("import circle: crates/demo/src/a.rs <-> crates/demo/src/b.rs", out)

    def test_super_and_grouped_uses_are_edges_between_siblings(self) -> None:
        self.crate({
            "src/lib.rs": "mod m;\n",
            "src/m/mod.rs": "mod x;\nmod y;\n",
            "src/m/x.rs": "use super::{y::{Y, Z as W}, Q};\npub struct X;\n",
            "src/m/y.rs": "use super::x::X;\npub struct Y;\npub struct Z;\n",
        })
        status, out = self.run_rules("circles")
        self.assertEqual(status, 1)
        self.assertIn("crates/demo/src/m/x.rs <-> crates/demo/src/m/y.rs", out)

    def test_a_childs_super_is_not_a_circle_and_neither_are_tests_or_comments(self) -> None:
        self.crate({
            "src/lib.rs": "mod parent;\npub struct Error;\n",
            # The parent uses its child; the child names its parent and the crate root.
            "src/parent/mod.rs": "mod child;\nuse child::C;\npub struct P;\n",
            "src/parent/child.rs": "use super::P;\nuse crate::Error;\npub struct C;\n",
            # Paths in comments, strings and an inline test module's `super::*` are no edges.
            "src/other.rs": "// crate::parent::P\nconst S: &str = \"crate::parent::P\";\n"
                            "#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        })
        status, out = self.run_rules("circles")
        self.assertEqual(status, 0, out)
        self.assertIn("circles: 0 found", out)

    def test_a_circle_through_a_parent_and_its_child_counts(self) -> None:
        # hotpath/mod.rs -> its child sample.rs -> manifest.rs -> hotpath/mod.rs.
        self.crate({
            "src/lib.rs": "pub mod hotpath;\npub mod manifest;\n",
            "src/hotpath/mod.rs": "mod sample;\npub use sample::S;\npub struct Kind;\n",
            "src/hotpath/sample.rs": "use crate::manifest::M;\npub struct S;\n",
            "src/manifest.rs": "use crate::hotpath::Kind;\npub struct M;\n",
        })
        status, out = self.run_rules("circles")
        self.assertEqual(status, 1)
        self.assertIn("src/hotpath/mod.rs <-> crates/demo/src/hotpath/sample.rs <-> crates/demo/src/manifest.rs", out)

    def test_path_attributes_and_bench_targets_are_followed(self) -> None:
        self.crate({
            "benches/area/main.rs": "mod one;\n#[path = \"two_impl.rs\"]\nmod two;\n",
            "benches/area/one.rs": "pub fn f() { crate::two::g() }\n",
            "benches/area/two_impl.rs": "pub fn g() { crate::one::f() }\n",
        })
        status, out = self.run_rules("circles")
        self.assertEqual(status, 1)
        self.assertIn("crates/demo/benches/area/one.rs <-> crates/demo/benches/area/two_impl.rs", out)

    def test_an_allowed_circle_passes_and_a_stale_allowance_fails(self) -> None:
        self.crate({
            "src/lib.rs": "mod a;\nmod b;\n",
            "src/a.rs": "use crate::b::B;\npub struct A;\n",
            "src/b.rs": "use crate::a::A;\npub struct B;\n",
        })
        allow = self.root / "scripts" / "check_rules.allow"
        allow.parent.mkdir()
        allow.write_text("circle crates/demo/src/b.rs crates/demo/src/a.rs: issue 99 splits them\n")
        status, out = self.run_rules("circles")
        self.assertEqual(status, 0, out)
        self.assertIn("(allowed: issue 99 splits them)", out)
        (self.root / "crates/demo/src/b.rs").write_text("pub struct B;\n")
        status, out = self.run_rules("circles")
        self.assertEqual(status, 1)
        self.assertIn("is gone: remove its line", out)
        allow.write_text("circle crates/demo/src/b.rs crates/demo/src/a.rs\n")
        self.assertEqual(self.run_rules("circles")[0], 1)

    # --- dates, long files, units, links ---

    def test_the_date_marker_lives_in_one_file(self) -> None:
        self.assertEqual(self.run_rules("dates")[0], 0)
        self.crate({"src/lib.rs": "const Z: i64 = 719468; // days\n"})
        status, out = self.run_rules("dates")
        self.assertEqual(status, 1)
        self.assertIn("crates/demo/src/lib.rs", out)

    def test_a_long_file_needs_a_reason(self) -> None:
        self.crate({"src/lib.rs": "\n" * 701})
        status, out = self.run_rules("long")
        self.assertEqual(status, 1)
        self.assertIn("crates/demo/src/lib.rs: 701 lines", out)
        allow = self.root / "scripts" / "check_rules.allow"
        allow.parent.mkdir()
        allow.write_text("long crates/demo/src/lib.rs: one generated table\n")
        self.assertEqual(self.run_rules("long")[0], 0)
        (self.root / "crates/demo/src/lib.rs").write_text("\n" * 700)
        status, out = self.run_rules("long")
        self.assertEqual(status, 1)
        self.assertIn("no longer over 700", out)

    def test_unit_lines_stay_short(self) -> None:
        write(self.root, {"benches/units.toml": '[groups."a.b"]\nunit = "short"\n\n[groups."a.c"]\nunit = "' + "x" * 200 + '"\n'})
        status, out = self.run_rules("units")
        self.assertEqual(status, 1)
        self.assertIn("(a.c)", out)
        self.assertIn("bench-history/notes/a.c.md", out)
        self.assertNotIn("(a.b)", out)

    def test_links_name_files_that_exist(self) -> None:
        write(self.root, {
            "docs/design/store.md": "# store\n",
            "README.md": "[store](docs/design/store.md) [x](docs/design/store.md#lanes) [w](https://example.org/a.md)\n"
                         "```\n[not a link](nowhere.md)\n```\n",
        })
        self.crate({"src/lib.rs": "//! See docs/design/store.md.\n"})
        self.assertEqual(self.run_rules("links")[0], 0, self.run_rules("links")[1])
        write(self.root, {"docs/results.md": "[gone](design/knot.md), targets in `../shared/spec/store.md`\n"})
        self.crate({"src/lib.rs": "//! The layout: `spec/store.md`, docs/design/repo.md.\n"})
        status, out = self.run_rules("links")
        self.assertEqual(status, 1)
        self.assertIn("docs/results.md: link to a missing file: design/knot.md", out)
        self.assertIn("docs/results.md: `../shared/spec/store.md` is not in the repository", out)
        self.assertIn("`spec/store.md` is not in the repository", out)
        self.assertIn("names a missing document: docs/design/repo.md", out)

    def test_the_repository_passes(self) -> None:
        """The rules hold on this tree (what .ci/run checks)."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = check_rules.main([])
        self.assertEqual(status, 0, out.getvalue())


if __name__ == "__main__":
    unittest.main()
