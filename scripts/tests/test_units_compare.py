"""Every `compare` entry of benches/units.toml names rows the benches really write.

Implementations are named at run time (e.g. `appview.rest_*` rows are
`<server>.callers-<n>`, built with format!), so no source lists them; the newest committed
snapshot in bench-history/ does. For each group with rows there, each entry must be a row's
implementation, or its `.nonidentical` demotion (a peer whose bytes differed from ours in that
run, units.toml's repo notes). An entry that matches no row fails when rows of the group
extend it (`appview` beside `appview.callers-1`: the ids' name, cut short) or when no bench
source spells it as a literal; a literal one the snapshot predates (a new peer) passes until
a snapshot holds its rows. Groups without rows in the snapshot (new, or live-only) are not
checked here.

Run from the repository root: python3 -m unittest discover -s scripts/tests -t scripts
"""

from __future__ import annotations

import json
import tomllib
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "benches" / "units.toml"
HISTORY = REPO / "bench-history"
DEMOTED = ".nonidentical"


def newest_snapshot() -> Path:
    return sorted(HISTORY.glob("bench-*.json"))[-1]


def bench_literals() -> str:
    """The text of every bench source (the literals an implementation may be spelled in)."""
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "benches").rglob("*.rs")))


def unmatched(groups: dict, rows: dict[str, set[str]], sources: str) -> list[str]:
    """`group: entry` for each compare entry that names no row (the rules in the module doc)."""
    bad = []
    for name, spec in sorted(groups.items()):
        present = rows.get(name)
        if not present:
            continue
        for entry in spec.get("compare", []):
            if entry in present or entry + DEMOTED in present:
                continue
            extended = any(p.startswith(entry + ".") for p in present)
            if extended or f'"{entry}"' not in sources:
                bad.append(f"{name}: {entry!r} matches no row (rows: {sorted(present)})")
    return bad


class CompareEntriesTest(unittest.TestCase):
    maxDiff = None

    def test_every_compare_entry_names_rows_of_the_newest_snapshot(self) -> None:
        groups = tomllib.loads(UNITS.read_text(encoding="utf-8"))["groups"]
        results = json.loads(newest_snapshot().read_text(encoding="utf-8"))["results"]
        rows: dict[str, set[str]] = {}
        for result in results.values():
            rows.setdefault(result["group"], set()).add(result["implementation"])
        self.assertEqual(unmatched(groups, rows, bench_literals()), [])

    def test_a_name_cut_short_or_misspelt_fails_and_a_new_literal_waits(self) -> None:
        rows = {"a.rest": {"srv.callers-1", "srv.callers-10"}, "a.peer": {"ours", "peer.nonidentical"}}
        groups = {
            "a.rest": {"compare": ["srv", "srv.callers-1"]},
            "a.peer": {"compare": ["ours", "peer", "new-peer", "typo"]},
            "a.unrun": {"compare": ["anything"]},
        }
        bad = unmatched(groups, rows, 'let x = "srv"; let y = "new-peer";')
        self.assertEqual([b.split(" matches")[0] for b in bad], ["a.peer: 'typo'", "a.rest: 'srv'"])


if __name__ == "__main__":
    unittest.main()
