"""Open the built documentation as a person does: headless Chromium, the index and one API page.

Usage: ``python docs/check_site.py [BUILD_DIR]`` (default ``docs/_build/html``), after ``sphinx-build``.

For each page it loads the page in Debian's ``chromium`` through the Chrome DevTools Protocol, and fails (exit 1,
one line per problem) on a page that is missing or empty, a request that failed (a stylesheet or script missing),
a console error or an uncaught exception, or an internal link whose page or anchor does not exist.  It keeps a
full-page screenshot of each page in ``BUILD_DIR/../screenshots``.  It needs the ``docs`` extra (``websockets``)
and ``chromium`` on ``PATH`` (``apt-get install chromium``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlparse

import websockets

PAGES = ("index.html", "apidocs/rl_contracts/rl_contracts.logprobs.html")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
    "--window-size=1280,900",
    "--remote-debugging-port=0",
)


class _Anchors(HTMLParser):
    """The ids and names a page defines (the targets of ``#fragment`` links)."""

    def __init__(self) -> None:
        super().__init__()
        self.anchors: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.anchors.add(value)


def anchors(page: Path) -> set[str]:
    parser = _Anchors()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.anchors


class Browser:
    """One headless Chromium and one page target, driven over the DevTools protocol (flat sessions)."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if self.session is not None and not method.startswith("Target."):
            message["sessionId"] = self.session
        await self.socket.send(json.dumps(message))
        while True:
            reply = json.loads(await asyncio.wait_for(self.socket.recv(), timeout=60))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    async def wait_for(self, method: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(event.get("method") == method for event in self.events):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {method} within {timeout} s")
            self.events.append(json.loads(await asyncio.wait_for(self.socket.recv(), timeout=remaining)))


def problems_of(events: list[dict[str, Any]]) -> list[str]:
    """Console errors, uncaught exceptions and failed requests among the protocol's events."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append(f"uncaught exception: {params['exceptionDetails'].get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append(f"console error: {[arg.get('value') for arg in params.get('args', [])]}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            found.append(f"console error: {params['entry'].get('text')} ({params['entry'].get('url')})")
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            found.append(f"request failed: {params.get('errorText')}")
    return found


def link_problems(root: Path, page: Path, links: list[str]) -> list[str]:
    """Internal links (inside the build) whose file or anchor is missing."""
    found = []
    for link in links:
        url, fragment = urldefrag(link)
        parsed = urlparse(url)
        if parsed.scheme != "file":
            continue
        target = Path(unquote(parsed.path))
        if target.is_dir():
            target = target / "index.html"
        if root.resolve() not in target.resolve().parents:
            continue
        if not target.is_file():
            found.append(f"{page.relative_to(root)}: broken link to {target.relative_to(root)}")
        elif fragment and target.suffix == ".html" and unquote(fragment) not in anchors(target):
            found.append(f"{page.relative_to(root)}: no anchor #{fragment} in {target.relative_to(root)}")
    return found


async def visit(browser: Browser, root: Path, relative: str, shots: Path) -> list[str]:
    page = root / relative
    if not page.is_file():
        return [f"missing page: {relative}"]
    browser.events.clear()
    await browser.call("Page.navigate", url=page.resolve().as_uri())
    await browser.wait_for("Page.loadEventFired")
    await asyncio.sleep(0.5)  # late console messages of the page's scripts
    state = await browser.call(
        "Runtime.evaluate",
        expression="JSON.stringify({title: document.title, text: document.body.innerText.length,"
        " links: Array.from(document.querySelectorAll('a[href]'), a => a.href)})",
        returnByValue=True,
    )
    seen = json.loads(state["result"]["value"])
    found = [f"{relative}: {problem}" for problem in problems_of(browser.events)]
    if seen["text"] < 200:
        found.append(f"{relative}: the page shows almost nothing ({seen['text']} characters)")
    found += link_problems(root, page, seen["links"])
    shot = await browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    target = shots / (relative.replace("/", "_").removesuffix(".html") + ".png")
    target.write_bytes(base64.b64decode(shot["data"]))
    print(f"check_site: {relative}: {seen['title']!r}, {len(seen['links'])} links, screenshot {target}")
    return found


def start_chromium(profile: Path) -> subprocess.Popen[bytes]:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        raise SystemExit("check_site: chromium is not installed (apt-get install chromium)")
    return subprocess.Popen(
        [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def check(root: Path) -> list[str]:
    shots = root.parent / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        process = start_chromium(Path(profile))
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + 60
            while not port_file.is_file() or len(port_file.read_text().splitlines()) < 2:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit("check_site: chromium did not start")
                await asyncio.sleep(0.1)
            port, path = port_file.read_text().splitlines()[:2]
            async with websockets.connect(f"ws://127.0.0.1:{port}{path}", max_size=2**28) as socket:
                browser = Browser(socket)
                target = await browser.call("Target.createTarget", url="about:blank")
                attached = await browser.call(
                    "Target.attachToTarget", targetId=target["targetId"], flatten=True
                )
                browser.session = attached["sessionId"]
                for domain in ("Page", "Runtime", "Log", "Network"):
                    await browser.call(f"{domain}.enable")
                found = []
                for relative in PAGES:
                    found += await visit(browser, root, relative, shots)
                return found
        finally:
            process.terminate()
            process.wait(timeout=30)


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/_build/html").resolve()
    found = asyncio.run(check(root))
    for problem in found:
        print(f"check_site: {problem}")
    print(f"check_site: {len(PAGES)} pages, {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
