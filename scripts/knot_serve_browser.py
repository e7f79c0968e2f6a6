#!/usr/bin/env python3
"""Drive headless Chromium through knot-serve's pages (issue 39, item 4).

    python3 scripts/knot_serve_browser.py --base http://127.0.0.1:PORT --out DIR PATH...

Loads each PATH (one per page kind), records console errors, failed requests and a screenshot
per page, then follows links the way a reader would: from the first tree page to a file
(`a[href^="/blob/"]`) and from that file to its commit (`a[href^="/commit/"]`). Writes
DIR/result.json ({"pages": [...], "follow": [...], "errors": [...]}) and exits 0 when there
were no errors, 1 when there were, 2 when Chromium is unavailable (the reason on stderr).
Chromium comes from scripts/browser.py (Debian's package, installed on first use).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser  # noqa: E402

FOLLOW = (("file", 'a[href^="/blob/"]'), ("commit", 'a[href^="/commit/"]'))


def shot_name(index: int, path: str) -> str:
    """A file name for the screenshot of `path` (the index keeps them ordered and unique)."""
    slug = "".join(c if c.isalnum() else "_" for c in path.strip("/"))[:40] or "root"
    return f"{index:02d}-{slug}.png"


def page_errors(events: list[tuple[str, dict[str, Any]]], console: list[str]) -> list[str]:
    """Console errors plus failed or non-2xx responses among the recorded DevTools events."""
    found = list(console)
    for method, params in events:
        if method == "Network.loadingFailed" and not params.get("canceled"):
            found.append(f"request failed: {params.get('errorText')}")
        elif method == "Network.responseReceived":
            status = params.get("response", {}).get("status", 0)
            if status >= 400:
                found.append(f"{status} for {params.get('response', {}).get('url')}")
    return found


def visit(chromium: browser.Chromium, url: str, out: Path) -> dict[str, Any]:
    chromium.events.clear()
    chromium.open(url)
    title = chromium.evaluate("document.title")
    chromium.screenshot(out)
    return {
        "url": url,
        "title": title,
        "screenshot": str(out),
        "errors": page_errors(chromium.events, chromium.console_errors()),
    }


def run(base: str, paths: list[str], out: Path, chromium: browser.Chromium) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"pages": [], "follow": [], "errors": []}
    for i, path in enumerate(paths):
        page = visit(chromium, base + path, out / shot_name(i, path))
        result["pages"].append(page)
        result["errors"] += [f"{path}: {e}" for e in page["errors"]]
    tree = next((p for p in paths if p.startswith("/tree/")), None)
    if tree is None:
        result["errors"].append("no tree page to follow links from")
        return result
    url = base + tree
    chromium.events.clear()
    chromium.open(url)
    result["follow"].append(url)
    for step, selector in FOLLOW:
        href = chromium.evaluate(f"(document.querySelector('{selector}') || {{}}).href || ''")
        if not href:
            result["errors"].append(f"no link {selector} (to a {step}) on {url}")
            return result
        page = visit(chromium, href, out / shot_name(len(result["pages"]), "follow-" + step))
        result["pages"].append(page)
        result["follow"].append(href)
        result["errors"] += [f"{href}: {e}" for e in page["errors"]]
        url = href
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="knot_serve_browser.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    try:
        executable = browser.ensure_chromium()
    except browser.BrowserUnavailable as error:
        print(f"knot_serve_browser: unavailable: {error}", file=sys.stderr)
        return 2
    try:
        with browser.Chromium(executable, 1200, 800) as chromium:
            result = run(args.base.rstrip("/"), args.paths, args.out, chromium)
    except browser.BrowserError as error:
        print(f"knot_serve_browser: error: {error}", file=sys.stderr)
        return 1
    (args.out / "result.json").write_text(json.dumps(result, indent=1))
    for e in result["errors"]:
        print(f"knot_serve_browser: {e}", file=sys.stderr)
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
