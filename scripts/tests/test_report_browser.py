"""The report page in a real browser: Debian's Chromium, headless, driven over the DevTools
protocol by scripts/browser.py.

Run from the repository root with the other scripts' tests:

    python3 -m unittest discover -s scripts/tests -t scripts

Renders the page of report_fixture.py's history and checks, in Chromium: no console error
and no request leaving the page's own file; a section for every group; the filter box hides
exactly the ids that do not match; the bars of a 1,000x ratio are both wider than a pixel and
far less than 1,000x apart (a log scale). Saves target/report-browser/first-screen.png.
Installs Chromium on first use (apt-get, as root); skips with the reason when it cannot, and
fails instead under BENCH_REQUIRE_LIVE=1 (CI).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import unittest
from pathlib import Path

import bench_charts
import browser

from . import report_fixture

REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO_ROOT / "target" / "report-browser" / "first-screen.png"

VISIBLE_ROWS = """[].slice.call(document.querySelectorAll('[data-row]')).map(function(e){
  return [e.getAttribute('data-id'), e.getClientRects().length > 0];})"""


def _chromium_or_skip() -> str:
    try:
        return browser.ensure_chromium()
    except browser.BrowserUnavailable as error:
        if os.environ.get("BENCH_REQUIRE_LIVE") == "1":
            raise AssertionError(f"BENCH_REQUIRE_LIVE=1 but Chromium is unavailable: {error}") from error
        raise unittest.SkipTest(f"Chromium unavailable: {error}") from error


class ReportInBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        executable = _chromium_or_skip()
        cls.tmp = tempfile.TemporaryDirectory()
        base = Path(cls.tmp.name)
        newest = report_fixture.write_history(base / "bench-history")
        cls.ids = sorted(json.loads(newest.read_text())["results"])
        out = base / "out"
        with contextlib.redirect_stdout(io.StringIO()):
            status = bench_charts.main(
                ["--history-dir", str(base / "bench-history"), "--units", str(base / "units.toml"), "--out", str(out)]
            )
        assert status == 0
        cls.page_url = (out / "index.html").as_uri()
        cls.browser = browser.Chromium(executable, width=1280, height=800)
        cls.browser.open(cls.page_url)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.browser.close()
        cls.tmp.cleanup()

    def set_filter(self, text: str) -> None:
        self.browser.evaluate(
            "(function(){var f=document.getElementById('filter');f.value=" + json.dumps(text) + ";"
            "f.dispatchEvent(new Event('input'));return true;})()"
        )

    def test_1_no_console_error_and_nothing_fetched(self) -> None:
        self.assertEqual(self.browser.console_errors(), [])
        urls = self.browser.requested_urls()
        self.assertIn(self.page_url, urls)
        self.assertEqual([u for u in urls if u != self.page_url and not u.startswith("data:")], [])
        self.assertEqual(self.browser.evaluate("document.getElementById('count').textContent"), f"{len(self.ids)} ids")

    def test_2_every_group_section_is_present(self) -> None:
        groups = self.browser.evaluate(
            "[].slice.call(document.querySelectorAll('section.group')).map(function(s){return s.getAttribute('data-group');})"
        )
        self.assertEqual(groups, list(report_fixture.GROUPS))
        visible = dict(self.browser.evaluate(VISIBLE_ROWS))
        self.assertEqual(sorted(visible), self.ids)
        self.assertTrue(all(visible.values()))

    def test_3_filter_hides_the_ids_that_do_not_match(self) -> None:
        try:
            self.set_filter("crc32 4KiB")
            visible = dict(self.browser.evaluate(VISIBLE_ROWS))
            shown = sorted(i for i, v in visible.items() if v)
            self.assertEqual(shown, [i for i in self.ids if "crc32" in i and "4kib" in i.lower()])
            self.assertEqual(len(shown), 3)
            hidden_sections = self.browser.evaluate(
                "[].slice.call(document.querySelectorAll('section.group')).filter(function(s){"
                "return s.getClientRects().length===0;}).map(function(s){return s.getAttribute('data-group');})"
            )
            self.assertEqual(sorted(hidden_sections), sorted(g for g in report_fixture.GROUPS if g != "codec.crc32"))
            self.assertEqual(self.browser.evaluate("document.getElementById('count').textContent"), f"3 of {len(self.ids)} ids match")
        finally:
            self.set_filter("")
        self.assertTrue(all(dict(self.browser.evaluate(VISIBLE_ROWS)).values()))

    def test_4_log_bars_of_a_thousandfold_ratio_are_both_visible(self) -> None:
        widths = dict(
            self.browser.evaluate(
                "[].slice.call(document.querySelectorAll('#g-codec\\\\.crc32 [data-row]')).map(function(r){"
                "return [r.getAttribute('data-id'), r.querySelector('.b').getBoundingClientRect().width];})"
            )
        )
        best, worst = widths["codec.crc32/table-256/4KiB"], widths["codec.crc32/bitwise/4KiB"]
        self.assertGreater(best, 1.0)
        self.assertGreater(worst, best)
        self.assertLess(worst / best, 10.0)  # linear bars would be 1000x apart
        print(f"\n  1000x ratio in browser: best bar {best:.1f} px, 1000x bar {worst:.1f} px", end=" ")

    def test_5_screenshot_of_the_first_screen(self) -> None:
        self.browser.evaluate("window.scrollTo(0,0)")
        path = self.browser.screenshot(SCREENSHOT)
        self.assertEqual(path.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")
        self.assertGreater(path.stat().st_size, 10_000)
        print(f"\n  screenshot: {path.relative_to(REPO_ROOT)} ({path.stat().st_size // 1024} KiB)", end=" ")


if __name__ == "__main__":
    unittest.main()
