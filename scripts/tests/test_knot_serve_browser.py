"""knot_serve_browser.py: screenshot names and the error verdict of a page's DevTools events."""

import unittest

import knot_serve_browser as ksb


class ShotNameTest(unittest.TestCase):
    def test_names_are_ordered_and_safe(self) -> None:
        self.assertEqual(ksb.shot_name(0, "/"), "00-root.png")
        self.assertEqual(ksb.shot_name(3, "/blob/main/src/a b.rs"), "03-blob_main_src_a_b_rs.png")
        self.assertEqual(ksb.shot_name(12, "/../x"), "12-___x.png")


class PageErrorsTest(unittest.TestCase):
    def test_console_failed_requests_and_error_statuses_count(self) -> None:
        events = [
            ("Network.responseReceived", {"response": {"status": 200, "url": "http://h/"}}),
            ("Network.responseReceived", {"response": {"status": 404, "url": "http://h/style.css"}}),
            ("Network.loadingFailed", {"errorText": "net::ERR_BLOCKED_BY_CLIENT"}),
            ("Network.loadingFailed", {"errorText": "net::ERR_ABORTED", "canceled": True}),
        ]
        errors = ksb.page_errors(events, ["console: boom"])
        self.assertEqual(
            errors,
            ["console: boom", "404 for http://h/style.css", "request failed: net::ERR_BLOCKED_BY_CLIENT"],
        )

    def test_clean_page_has_no_errors(self) -> None:
        events = [("Network.responseReceived", {"response": {"status": 200, "url": "http://h/"}})]
        self.assertEqual(ksb.page_errors(events, []), [])


if __name__ == "__main__":
    unittest.main()
