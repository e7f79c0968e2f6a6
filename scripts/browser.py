#!/usr/bin/env python3
"""Headless Chromium for the scripts: install it, drive it, screenshot a page (entry point and module).

    python3 scripts/browser.py install
    python3 scripts/browser.py screenshot PAGE.html OUT.png [--width 1280] [--height 800]

Chromium is Debian's package (`apt-get install -y chromium`, system-wide; `install` runs it
when /usr/bin/chromium is missing and this is root, with `apt-get update` first). Chromium is
driven through the DevTools protocol over `--remote-debugging-pipe` (file descriptors 3 and 4,
one JSON message per NUL-terminated frame), so no WebSocket or extra package is needed.
Each session gets a fresh profile under a temporary directory and is killed by its own process
id when done. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import select
import signal
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)
CANDIDATES = ("chromium", "chromium-browser")
INSTALL_TIMEOUT = 900


class BrowserUnavailable(Exception):
    """Chromium is not installed and cannot be installed here; the message says why."""


class BrowserError(Exception):
    """Chromium failed while driven: a protocol error, a crash or a timeout."""


def find_chromium() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(
        ["apt-get", *args], capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env, check=False
    )


def ensure_chromium() -> str:
    """The Chromium executable, installed from Debian's packages on first use."""
    found = find_chromium()
    if found:
        return found
    if shutil.which("apt-get") is None:
        raise BrowserUnavailable("chromium is not installed and there is no apt-get to install it")
    if os.geteuid() != 0:
        raise BrowserUnavailable("chromium is not installed; `apt-get install -y chromium` needs root")
    try:
        attempt = _apt("install", "-y", "-q", "chromium")
        if attempt.returncode != 0:
            _apt("update", "-q")
            attempt = _apt("install", "-y", "-q", "chromium")
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BrowserUnavailable(f"apt-get install chromium failed: {error}") from error
    found = find_chromium()
    if attempt.returncode != 0 or not found:
        tail = (attempt.stderr or attempt.stdout).strip().splitlines()[-3:]
        raise BrowserUnavailable(f"apt-get install chromium failed: {' / '.join(tail)}")
    return found


class Chromium:
    """One headless Chromium process and a DevTools session on one page.

    Events are kept in `events` (method, params) in arrival order for the caller to inspect."""

    def __init__(self, executable: str, width: int = 1280, height: int = 800, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._next_id = 0
        self._buffer = b""
        self._profile = tempfile.mkdtemp(prefix="atbench-chromium-")
        to_child, self._to_browser = os.pipe()
        self._from_browser, from_child = os.pipe()

        def wire() -> None:  # runs in the child: the protocol pipe is fds 3 (in) and 4 (out)
            inbound, outbound = os.dup(to_child), os.dup(from_child)
            os.dup2(inbound, 3)
            os.dup2(outbound, 4)

        size = f"--window-size={width},{height}"
        command = [executable, *FLAGS, f"--user-data-dir={self._profile}", size, "about:blank"]
        self._stderr = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                pass_fds=(3, 4),
                start_new_session=True,
                preexec_fn=wire,  # noqa: PLW1509 - single-threaded callers; the fds must land on 3 and 4
            )
        finally:
            os.close(to_child)
            os.close(from_child)
        self.session = ""
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=None)["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=None)
        self.session = attached["sessionId"]
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self.call("Emulation.setDeviceMetricsOverride", metrics)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Ask Chromium to quit; past a few seconds, kill its process group (its own session)."""
        if self.process.poll() is None:
            self.timeout = 5.0
            try:
                self.call("Browser.close", session=None)
            except (BrowserError, OSError):
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._from_browser], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                self._stderr.seek(0)
                tail = self._stderr.read().decode(errors="replace").strip().splitlines()[-3:]
                raise BrowserError(f"Chromium closed its DevTools pipe (exit {self.process.poll()}): {' / '.join(tail)}")
            self._buffer += chunk
        frame, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(frame)

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool | None = True) -> dict[str, Any]:
        """Send one command (to the page's session unless session=None: the browser) and return its result."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is True and self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message', reply['error'])}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append((reply["method"], reply.get("params", {})))

    def wait_for(self, method: str) -> dict[str, Any]:
        """The first event named `method` (already received or arriving within the timeout)."""
        for name, params in self.events:
            if name == method:
                return params
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read_message(deadline)
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))
                if message["method"] == method:
                    return message.get("params", {})

    def open(self, url: str) -> None:
        """Navigate to `url` with console, log, network and page events recorded; waits for load."""
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        reply = self.call("Page.navigate", {"url": url})
        if reply.get("errorText"):
            raise BrowserError(f"navigating to {url}: {reply['errorText']}")
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page; a thrown exception is an error."""
        reply = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in reply:
            raise BrowserError(f"script failed: {reply['exceptionDetails'].get('text')} in {expression[:80]!r}")
        return reply.get("result", {}).get("value")

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        found = []
        for method, params in self.events:
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append("exception: " + str(details.get("exception", {}).get("description") or details.get("text")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append("log: " + str(params["entry"].get("text")))
        return found

    def requested_urls(self) -> list[str]:
        return [p.get("request", {}).get("url", "") for m, p in self.events if m == "Network.requestWillBeSent"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="browser.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="install Debian's chromium when it is missing")
    shot = sub.add_parser("screenshot", help="a PNG of a page's first screen")
    shot.add_argument("page", type=Path)
    shot.add_argument("out", type=Path)
    shot.add_argument("--width", type=int, default=1280)
    shot.add_argument("--height", type=int, default=800)
    args = parser.parse_args(argv)
    try:
        executable = ensure_chromium()
        if args.command == "install":
            print(f"chromium: {executable}")
            return 0
        with Chromium(executable, args.width, args.height) as browser:
            browser.open(args.page.resolve().as_uri())
            browser.screenshot(args.out)
            errors = browser.console_errors()
    except (BrowserUnavailable, BrowserError) as error:
        print(f"browser: error: {error}", file=sys.stderr)
        return 2
    for error in errors:
        print(f"browser: page error: {error}", file=sys.stderr)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
