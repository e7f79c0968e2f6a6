"""Tests of scripts/bench_charts.py.

Run from the repository root (Python 3.11, standard library only):

    python3 -m unittest discover -s scripts/tests -t scripts

Each test makes a snapshot from the captured Criterion fixtures (plus latency sidecars) in a
temporary directory and charts it.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import unittest
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import bench_charts

from .helpers import T1, T2, make_root, run_snapshot, stamp_of, write_json

SVG = "{http://www.w3.org/2000/svg}"


def latency_sidecar(full_id: str, callers: int, p50: float) -> dict[str, object]:
    return {
        "id": full_id,
        "callers": callers,
        "ops": 10000,
        "ops_per_sec": 5e5,
        "mean_ns": p50 * 1.2,
        "p50_ns": p50,
        "p95_ns": p50 * 3,
        "p99_ns": p50 * 10,
        "max_ns": p50 * 40,
    }


def run_charts(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = bench_charts.main(list(argv))
    return status, stdout.getvalue(), stderr.getvalue()


class TagCounter(HTMLParser):
    """Counts start tags, to check that index.html parses into the expected structure."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.counts[tag] = self.counts.get(tag, 0) + 1


class ChartsTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.base = Path(tmp.name)
        self.root = make_root(self.base)
        latency_dir = self.root / "target" / "atbench" / "latency"
        write_json(latency_dir / "table.json", latency_sidecar("codec.crc32/table/64B", 10, 800))
        write_json(latency_dir / "open.json", latency_sidecar("store.open/ours.nosync", 1, 120))
        self.history = self.root / "bench-history"
        self.out = self.base / "artifacts"

    def snapshot(self, run: str, now: str, label: str = "charts <&> test") -> Path:
        status, _, stderr = run_snapshot(self.root, run, label, now)
        self.assertEqual(status, 0, stderr)
        return self.history / f"bench-{stamp_of(now)}.json"

    def chart(self, name: str) -> ElementTree.Element:
        return ElementTree.parse(self.out / name).getroot()

    def test_files_written_and_svgs_are_well_formed(self) -> None:
        self.snapshot("run-b", T1)
        status, stdout, _ = run_charts("--history-dir", str(self.history), "--out", str(self.out))
        self.assertEqual(status, 0)
        self.assertEqual(sorted(p.name for p in self.out.iterdir()), ["index.html", "latency.svg", "throughput.svg"])
        self.assertIn("wrote", stdout)
        for name in ("latency.svg", "throughput.svg"):
            self.assertEqual(self.chart(name).tag, f"{SVG}svg")

    def test_latency_bars_grouped_by_callers(self) -> None:
        self.snapshot("run-b", T1)
        run_charts("--history-dir", str(self.history), "--out", str(self.out))
        root = self.chart("latency.svg")
        tooltips = [title.text for title in root.iter(f"{SVG}title")]
        self.assertIn("codec.crc32/table/64B p99 = 8.00 µs", tooltips)
        self.assertIn("store.open/ours.nosync p50 = 120 ns", tooltips)
        bars = [t for t in tooltips if " = " in t]
        self.assertEqual(len(bars), 6)  # two ids x p50/p95/p99
        texts = [text.text for text in root.iter(f"{SVG}text")]
        self.assertLess(texts.index("1 caller"), texts.index("10 callers"))
        self.assertLess(texts.index("store.open/ours.nosync"), texts.index("codec.crc32/table/64B"))

    def test_throughput_panels_for_comparison_groups(self) -> None:
        self.snapshot("run-b", T1)
        run_charts("--history-dir", str(self.history), "--out", str(self.out))
        root = self.chart("throughput.svg")
        texts = [text.text for text in root.iter(f"{SVG}text")]
        self.assertIn("codec.crc32 · 64B", texts)
        self.assertIn("2.65 GiB/s (best)", texts)
        self.assertIn("88.6 MiB/s (30.66x slower)", texts)
        self.assertNotIn("store.open · ", " ".join(texts))  # a probe, not a comparison panel
        best = [r for r in root.iter(f"{SVG}rect") if r.findtext(f"{SVG}title", "").startswith("codec.crc32/table/64B")]
        self.assertEqual(best[0].get("fill"), bench_charts.BEST_COLOUR)

    def test_index_html_embeds_charts_and_escapes_text(self) -> None:
        self.snapshot("run-b", T1)
        run_charts("--history-dir", str(self.history), "--out", str(self.out))
        page = (self.out / "index.html").read_text()
        self.assertIn("<dd>charts &lt;&amp;&gt; test</dd>", page)
        self.assertNotIn("charts <&> test", page)
        self.assertIn("<td>CRC-32 (IEEE) of one buffer of &lt;tier&gt; bytes</td>", page)
        counter = TagCounter()
        counter.feed(page)
        self.assertEqual(counter.counts.get("svg"), 2)
        self.assertEqual(counter.counts.get("tr"), 1 + 6)  # header + one row per fixture id

    def test_hostile_text_still_well_formed(self) -> None:
        snapshot_path = self.snapshot("run-a", T1)
        snapshot = json.loads(snapshot_path.read_text())
        odd = dict(snapshot["results"]["codec.crc32/table/64B"], group='x<&>"', implementation="a&b<c>")
        odd["latency"] = latency_sidecar("ignored", 2, 50)
        snapshot["results"]['x<&>"/a&b<c>/64B'] = odd
        edited = self.base / "edited.json"
        edited.write_text(json.dumps(snapshot))
        self.assertEqual(run_charts("--snapshot", str(edited), "--out", str(self.out))[0], 0)
        texts = [
            text.text for name in ("latency.svg", "throughput.svg") for text in self.chart(name).iter(f"{SVG}text")
        ]
        self.assertIn('x<&>"/a&b<c>/64B', texts)
        self.assertIn("a&b<c>", texts)

    def test_newest_snapshot_is_charted_and_empty_latency_has_a_message(self) -> None:
        self.snapshot("run-a", T1, label="older")
        for sidecar in (self.root / "target" / "atbench" / "latency").iterdir():
            sidecar.unlink()
        self.snapshot("run-b", T2, label="newer")
        run_charts("--history-dir", str(self.history), "--out", str(self.out))
        self.assertIn("<dd>newer</dd>", (self.out / "index.html").read_text())
        texts = [text.text for text in self.chart("latency.svg").iter(f"{SVG}text")]
        self.assertIn("No latency sidecars in this snapshot.", texts)

    def test_no_snapshot_is_an_error(self) -> None:
        status, _, stderr = run_charts("--history-dir", str(self.base / "empty"), "--out", str(self.out))
        self.assertEqual(status, 2)
        self.assertIn("no bench-<UTC>.json snapshot", stderr)
        self.assertFalse(self.out.exists())


if __name__ == "__main__":
    unittest.main()
