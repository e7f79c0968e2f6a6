"""Peer results (`<target>/atbench/peers/*.json`, written by the probes in peers/): read into
result records, merged beside Criterion's, ranked in the same-run tables and set against our
rows of the same unit of work (units.toml `peers`) in latest.md."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path
from typing import Any

from atbench_snapshot import peers, registry

from .helpers import T1, UNITS, latest_md, make_root, md_row, run_snapshot, snapshot_json, write_json

# The fixture registry with a peer of store.list_records (ours at 1k: run-a's row).
PEER_UNITS = UNITS.read_text().replace(
    '''[groups."store.list_records"]
target = "store"
unit = "list one page of <tier> records"
throughput = "elements"
compare = ["ours"]''',
    '''[groups."store.list_records"]
target = "store"
unit = "list one page of <tier> records"
throughput = "elements"
compare = ["ours", "ref-pds"]

[groups."store.list_records".peers."ref-pds"]
same_as = ["ours"]
note = "the reference PDS's read path"''',
)


def peer_file(**overrides: Any) -> dict[str, Any]:
    value = {
        "id": "store.list_records/ref-pds/1k",
        "peer": "ref-pds",
        "versions": {"ref-pds": "1.2.3"},
        "node": "v20.0.0",
        "created": "2026-11-30T18:00:00Z",
        "callers": 1,
        "ops": 300,
        "runs": [{"ops": 100, "seconds": 0.1, "ops_per_sec": 1000.0}, {"ops": 200, "seconds": 0.25, "ops_per_sec": 800.0}],
        "ops_per_sec": 900.0,
        "mean_ns": 1.1e6,
        "p50_ns": 1.0e6,
        "p95_ns": 2.0e6,
        "p99_ns": 3.0e6,
        "max_ns": 4.0e6,
        "throughput": {"kind": "elements", "per_iteration": 1000},
        "timing": "per-op",
        "verified": True,
        "check": "pages equal ours",
    }
    value.update(overrides)
    return value


class PeerRecords(unittest.TestCase):
    def test_a_peer_file_becomes_a_result_with_its_runs_as_interval(self) -> None:
        full_id, record = peers.to_result(peer_file())
        self.assertEqual(full_id, "store.list_records/ref-pds/1k")
        self.assertEqual((record["group"], record["implementation"], record["tier"]), ("store.list_records", "ref-pds", "1k"))
        self.assertAlmostEqual(record["median_ns"], 1e9 / 900)
        self.assertAlmostEqual(record["ci_lower_ns"], 1e6)
        self.assertAlmostEqual(record["ci_upper_ns"], 1.25e6)
        self.assertAlmostEqual(record["throughput_per_sec"], 900_000)
        self.assertEqual(record["source"], "peer")
        self.assertEqual(record["peer"]["versions"], {"ref-pds": "1.2.3"})
        self.assertEqual(record["latency"]["p95_ns"], 2.0e6)

    def test_batched_rows_keep_their_percentiles_out_of_the_latency_table(self) -> None:
        _, record = peers.to_result(peer_file(timing="batched"))
        self.assertIsNone(record["latency"])

    def test_unverified_incomplete_or_rateless_files_are_left_out(self) -> None:
        self.assertEqual(peers.to_result(peer_file(verified=False)), "not verified")
        incomplete = peer_file()
        del incomplete["p99_ns"]
        self.assertEqual(peers.to_result(incomplete), "missing p99_ns")
        self.assertEqual(peers.to_result(peer_file(runs=[])), "no positive ops_per_sec")
        self.assertEqual(peers.to_result(peer_file(throughput={"kind": "lines"})), "unrecognised throughput")

    def test_reading_a_directory_warns_per_bad_file(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            write_json(directory / "good.json", peer_file())
            write_json(directory / "unverified.json", peer_file(id="store.list_records/ref-pds/10k", verified=False))
            (directory / "broken.json").write_text("{")
            warnings: list[str] = []
            results = peers.read_peers(directory, warnings)
            self.assertEqual(list(results), ["store.list_records/ref-pds/1k"])
            self.assertEqual(len(warnings), 2, warnings)
            self.assertEqual(peers.read_peers(directory / "absent", warnings), {})

    def test_criterion_keeps_an_id_both_report(self) -> None:
        results = {"store.list_records/ref-pds/1k": {"median_ns": 1.0}}
        warnings: list[str] = []
        peers.merge(results, dict([peers.to_result(peer_file())]), warnings)
        self.assertEqual(results["store.list_records/ref-pds/1k"], {"median_ns": 1.0})
        self.assertEqual(len(warnings), 1)


class PeerRegistry(unittest.TestCase):
    def test_a_peer_must_be_compared_and_the_same_unit_as_one_of_ours(self) -> None:
        self.assertEqual(registry.parse_registry(PEER_UNITS)["store.list_records"].peers["ref-pds"]["same_as"], ["ours"])
        for broken in (
            PEER_UNITS.replace('compare = ["ours", "ref-pds"]', 'compare = ["ours"]'),
            PEER_UNITS.replace('same_as = ["ours"]', 'same_as = ["theirs"]'),
            PEER_UNITS.replace('note = "the reference PDS\'s read path"', 'note = ""'),
        ):
            with self.assertRaises(registry.RegistryError):
                registry.parse_registry(broken)


class PeerReport(unittest.TestCase):
    def test_the_snapshot_ranks_the_peer_and_sets_it_against_ours(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = make_root(Path(tmp), PEER_UNITS)
            write_json(root / "target" / "atbench" / "peers" / "store.list_records__ref-pds__1k.json", peer_file())
            status, _, stderr = run_snapshot(root, "run-a", "with a peer", T1)
            self.assertEqual(status, 0, stderr)
            snapshot = snapshot_json(root, T1)
            peer = snapshot["results"]["store.list_records/ref-pds/1k"]
            self.assertEqual((peer["role"], peer["source"]), ("compare", "peer"))
            self.assertEqual(peer["peer"]["check"], "pages equal ours")
            markdown = latest_md(root)
            self.assertIn("## Peers (reference implementations, same run)", markdown)
            self.assertIn("| ref-pds (peer) |", markdown)
            ours_ns = snapshot["results"]["store.list_records/ours/1k"]["median_ns"]
            section = markdown.split("## Peers (reference implementations, same run)")[1]
            described, against_section = section.split("Against our rows")
            self.assertIn("ref-pds 1.2.3; node v20.0.0", md_row(described, "`store.list_records/ref-pds/1k`"))
            against = md_row(against_section, "`store.list_records/ref-pds/1k`")
            self.assertIn("`store.list_records/ours/1k`", against)
            self.assertIn(f"{(1e9 / 900) / ours_ns:.1f}x", against)


if __name__ == "__main__":
    unittest.main()
