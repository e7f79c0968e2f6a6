"""Tests of the report page: scripts/bench_charts.py and atbench_snapshot/page.py, pagedata.py, svg.py.

Run from the repository root (Python 3.11, standard library only):

    python3 -m unittest discover -s scripts/tests -t scripts

Most tests render the fixture history of report_fixture.py; the Criterion-link and snapshot
tests go through bench_snapshot.py on the captured Criterion runs; the budget test renders
the newest committed snapshot of bench-history/. The browser test is test_report_browser.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import tempfile
import unittest
from html.parser import HTMLParser
from pathlib import Path

import bench_charts
from atbench_snapshot import page, pagedata, svg

from . import report_fixture
from .helpers import CRITERION, T1, make_root, run_snapshot, stamp_of

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_charts(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = bench_charts.main(list(argv))
    return status, stdout.getvalue(), stderr.getvalue()


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text, of a page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def having(self, attribute: str) -> list[dict[str, str | None]]:
        return [attrs for _, attrs in self.tags if attribute in attrs]


def bar_widths(html: str, group: str, tier: str) -> dict[str, float]:
    """{id: bar width in percent} of the bar rows of one tier."""
    found = {}
    for match in re.finditer(r'<div class="r" id="r-([^"]+)" data-id="[^"]+" data-row>.*?width:([\d.]+)%', html):
        full_id = match.group(1)
        if full_id.startswith(group + "/") and full_id.endswith("/" + tier):
            found[full_id] = float(match.group(2))
    return found


class FixturePageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        base = Path(cls.tmp.name)
        cls.history = base / "bench-history"
        cls.newest = report_fixture.write_history(cls.history)
        cls.out = base / "out"
        status, cls.stdout, _ = run_charts(
            "--history-dir", str(cls.history), "--units", str(base / "units.toml"), "--out", str(cls.out)
        )
        assert status == 0
        cls.html = (cls.out / "index.html").read_text(encoding="utf-8")
        cls.elements = Elements(cls.html)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_writes_only_the_page_for_the_newest_snapshot(self) -> None:
        self.assertEqual([p.name for p in self.out.iterdir()], ["index.html"])
        self.assertIn("wrote", self.stdout)
        self.assertIn(report_fixture.NEWEST, self.html)

    def test_every_group_has_a_section_under_its_area_and_in_the_contents(self) -> None:
        sections = [a["data-group"] for a in self.elements.having("data-group")]
        self.assertEqual(sections, list(report_fixture.GROUPS))
        toc = {a["data-for"] for a in self.elements.having("data-for")}
        for group in report_fixture.GROUPS:
            self.assertIn(f"g-{group}", toc)
            self.assertIn(f"area-{group.split('.')[0]}", toc)

    def test_every_id_is_one_filterable_row(self) -> None:
        rows = [a["data-id"] for a in self.elements.having("data-row")]
        ids = json.loads(self.newest.read_text())["results"]
        self.assertEqual(sorted(rows), sorted(ids))

    def test_bars_are_log_scale_so_a_thousandfold_ratio_keeps_both_bars_visible(self) -> None:
        widths = bar_widths(self.html, report_fixture.THOUSANDFOLD_GROUP, "4KiB")
        best, worst = widths["codec.crc32/table-256/4KiB"], widths["codec.crc32/bitwise/4KiB"]
        self.assertGreater(best, 5.0)  # percent of the track: well over a pixel
        self.assertLess(worst / best, 10)  # linear bars would be 1000x apart
        self.assertLess(best, widths["codec.crc32/table/4KiB"])
        self.assertLess(widths["codec.crc32/table/4KiB"], worst)
        self.assertIn("204 µs · 1000.00x", self.html)
        self.assertIn("204 ns · best", self.html)

    def test_peers_floor_probes_and_adjacent_probes(self) -> None:
        peer_row = re.search(r'id="r-store.get_record/official-pds/callers-1".*?</div>', self.html, re.S).group(0)
        self.assertIn('<span class="tag peer">peer</span>', peer_row)
        self.assertIn('class="b peer"', peer_row)
        floor = re.search(r'<div class="r fr" id="r-live.pg_point_select/psql/callers-10".*?</div>', self.html, re.S).group(0)
        self.assertIn("floor: psql", floor)
        self.assertIn("raw/psql 1.20x", floor)
        self.assertNotIn("<i class=", floor)  # a line, not a bar
        raw_row = re.search(r'id="r-live.pg_point_select/raw/callers-10".*?</div>', self.html, re.S).group(0)
        self.assertIn('class="fl"', raw_row)
        for pattern in (
            r'<tr id="r-store.get_record/index-only/callers-1"[^>]*>.*?implementation not in compare',
            r'<tr id="r-store.open/ours"[^>]*>.*?the group is a probe',
            r"Not in benches/units.toml.*?mystery.thing/x/1k.*?the group is not in units.toml",
        ):
            self.assertIsNotNone(re.search(pattern, self.html, re.S), pattern)

    def test_first_screen_has_machine_commits_verdicts_largest_first_and_floor(self) -> None:
        first = self.html[: self.html.index("</header>")]
        self.assertIn("Fixture CPU", first)
        self.assertIn("Head: <b>ccccc</b>", first)
        self.assertIn("bbbbbbbbbbbb", first)  # the paired baseline commit
        self.assertIn("1 slower</b>, <b class=faster>1 faster</b>, 1 the same", first)
        slower, faster = first.index("1.25x slower"), first.index("1.25x faster")
        self.assertLess(slower, faster)  # 1.25 (table) before 1/0.80 = 1.25 (get_record): equal, by id
        self.assertIn("Floor <b>3.1 %</b> <span class=muted>(the larger of 2 % and the controls' spread, 3.1 %)", first)
        self.assertIn("calibrate.cpu/fixed/1MiB", first[first.index("Controls"):])
        self.assertIn("live_backends</b>: not re-measured", first)
        self.assertIn("3 snapshot(s) of this fingerprint", first)

    def test_history_uses_same_machine_snapshots_and_marks_paired_verdicts(self) -> None:
        row = re.search(r'id="r-codec.crc32/table/64B".*?</div>', self.html, re.S).group(0)
        title = re.search(r"<title>(.*?)</title>", row, re.S).group(1)
        self.assertEqual(title.count("\n") + 1, 3)  # the other machine's snapshot is left out
        self.assertIn("(paired: slower)", title)
        self.assertEqual(row.count(f'fill="{svg.VERDICT_COLOURS["slower"]}"'), 2)  # 19:00 and 20:00 both paired it slower

    def test_latency_curves_join_the_callers_of_one_id(self) -> None:
        figure = re.search(r'<figure data-id="(store.get_record/ours/[^"]+)"><figcaption>(.*?)</figcaption>(.*?)</figure>', self.html)
        self.assertEqual(figure.group(1).split(), [f"store.get_record/ours/callers-{n}" for n in (1, 10, 100)])
        self.assertEqual(figure.group(2), "store.get_record/ours")
        self.assertEqual(figure.group(3).count("<polyline"), 3)  # p50, p95, p99
        self.assertIn("p99 at 100 caller(s): 180 µs", figure.group(3))

    def test_text_is_escaped_and_nothing_is_fetched(self) -> None:
        self.assertIn("fixture &lt;snapshot&gt; &amp; co", self.html)
        self.assertNotIn("fixture <snapshot>", self.html)
        for fetching in ("<link", " src=", "url(", "http://", "https://", "@import"):
            self.assertNotIn(fetching, self.html)


class PageUnitsTest(unittest.TestCase):
    def test_family_key_strips_the_callers_part(self) -> None:
        cases = {
            "appview.completed_50/index.callers-10/100k": ("appview.completed_50/index/100k", 10),
            "live.pg_update/raw/callers-100": ("live.pg_update/raw", 100),
            "xrpc.firehose/fanout/consumers-10": ("xrpc.firehose/fanout", 10),
            "xrpc.route/health/c50": ("xrpc.route/health", 50),
            "live.s3_get/ours/16KiB": ("live.s3_get/ours/16KiB", None),
            "store.open/ours.nosync": ("store.open/ours.nosync", None),
        }
        for full_id, expected in cases.items():
            self.assertEqual(pagedata.family_key(full_id), expected, full_id)

    def test_decades_leave_room_left_of_the_smallest_value(self) -> None:
        self.assertEqual(svg.decades(10.2, 204000), (0, 6))
        self.assertEqual(svg.decades(100.0, 100.0), (1, 2))
        first, last = svg.decades(3.0, 3000.0)
        self.assertGreater(svg.fraction(3.0, first, last), 0.05)

    def test_without_paired_the_page_says_so(self) -> None:
        snapshot = report_fixture.snapshot("2026-11-30T20:00:00Z", 1.0, "c", report_fixture.FINGERPRINT, None)
        html = page.render(snapshot, "bench-20261130T200000Z.json", page.Sources(), Path("."))
        self.assertIn("No paired re-measurement in this snapshot", html)
        self.assertNotIn("tag slower", html.split("</header>")[1].split("<section")[1])

    def test_paired_without_controls_still_renders(self) -> None:
        paired = report_fixture.paired("bench-x.json", "b" * 40, "c" * 40)
        paired["controls_spread_pct"] = None
        paired["rows"] = [r for r in paired["rows"] if not r["control"]]
        snapshot = report_fixture.snapshot("2026-11-30T20:00:00Z", 1.0, "c", report_fixture.FINGERPRINT, paired)
        html = page.render(snapshot, "bench-20261130T200000Z.json", page.Sources(), Path("."))
        self.assertIn("(the larger of 2 % and no controls measured)", html)
        self.assertIn("No control rows recorded.", html)
        self.assertIn("1.25x slower", html)

    def test_an_id_at_one_number_of_callers_gets_a_percentile_strip(self) -> None:
        snapshot = report_fixture.snapshot("2026-11-30T20:00:00Z", 1.0, "c", report_fixture.FINGERPRINT, None)
        snapshot["results"]["codec.crc32/table/64B"]["latency"] = report_fixture.latency(50, 900.0)
        html = page.render(snapshot, "bench-20261130T200000Z.json", page.Sources(), Path("."))
        row = re.search(r'<tr data-id="codec.crc32/table/64B"><td>codec.crc32/table/64B</td>(.*?)</tr>', html, re.S)
        self.assertIsNotNone(row)
        self.assertIn("<td class=num>50</td><td class=num>900 ns</td><td class=num>2.25 µs</td><td class=num>5.40 µs</td>", row.group(1))
        self.assertEqual(row.group(1).count("<circle"), 3)
        self.assertNotIn('<figure data-id="codec.crc32/table/64B"', html)

    def test_hostile_ids_stay_escaped(self) -> None:
        snapshot = report_fixture.snapshot("2026-11-30T20:00:00Z", 1.0, "c", report_fixture.FINGERPRINT, None)
        odd = dict(snapshot["results"]["codec.crc32/table/64B"], group='x<&>"', implementation="a&b<c>")
        snapshot["results"]['x<&>"/a&b<c>/64B'] = odd
        html = page.render(snapshot, "x.json", page.Sources(), Path("."))
        self.assertNotIn("a&b<c>", html)
        self.assertIn('data-id="x&lt;&amp;&gt;&quot;/a&amp;b&lt;c&gt;/64B"', html)
        Elements(html)  # parses

    def test_no_snapshot_is_an_error(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            status, _, stderr = run_charts("--history-dir", str(Path(tmp) / "none"), "--out", str(Path(tmp) / "out"))
            self.assertEqual(status, 2)
            self.assertIn("no bench-<UTC>.json snapshot", stderr)
            self.assertFalse((Path(tmp) / "out").exists())


class SnapshotPageTest(unittest.TestCase):
    def test_snapshot_writes_the_page_and_links_criterion_reports_of_the_same_run(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = make_root(Path(tmp))
            criterion = root / "target" / "criterion"
            shutil.copytree(CRITERION / "run-b", criterion)
            report = criterion / "codec.crc32" / "table" / "64B" / "report" / "index.html"
            report.parent.mkdir(parents=True)
            report.write_text("<html>criterion</html>")
            status, stdout, stderr = run_snapshot(root, criterion, "page", T1)
            self.assertEqual(status, 0, stderr)
            self.assertIn("bench-artifacts/index.html", stdout)
            html = (root / "bench-artifacts" / "index.html").read_text()
            self.assertIn('href="../target/criterion/codec.crc32/table/64B/report/index.html"', html)
            self.assertEqual(html.count("/report/index.html"), 1)
            # An older snapshot's page does not link a run that measured something else.
            snapshot = json.loads((root / "bench-history" / f"bench-{stamp_of(T1)}.json").read_text())
            snapshot["results"]["codec.crc32/table/64B"]["median_ns"] *= 2
            older = Path(tmp) / "older.json"
            older.write_text(json.dumps(snapshot))
            out = Path(tmp) / "older-page"
            self.assertEqual(run_charts("--snapshot", str(older), "--criterion-dir", str(criterion), "--out", str(out))[0], 0)
            self.assertNotIn("/report/index.html", (out / "index.html").read_text())


class SizeBudgetTest(unittest.TestCase):
    def test_page_of_the_newest_committed_snapshot_is_within_budget(self) -> None:
        history_dir = REPO_ROOT / "bench-history"
        newest = bench_charts.newest_snapshot(history_dir)
        with tempfile.TemporaryDirectory() as tmp:
            sources = page.Sources(history_dir, REPO_ROOT / "benches" / "units.toml", None)
            written = page.write_page(newest, Path(tmp), sources)
            size = written.stat().st_size
            ids = len(json.loads(newest.read_text())["results"])
            html = written.read_text(encoding="utf-8")
        self.assertLess(size, page.SIZE_BUDGET, f"{newest.name}: {size} bytes")
        self.assertEqual(html.count(" data-row>"), ids)


if __name__ == "__main__":
    unittest.main()
