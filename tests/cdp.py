"""A small Chrome DevTools Protocol client for the page tests: the system's headless Chromium,
driven over its websocket (websocket-client from PyPI); no browser download.

    with Browser.launch() as b:
        b.open("file:///…/report.html")
        b.eval("document.title")
        b.screenshot()                      # PNG bytes
        b.console_errors, b.requests        # what the page logged as errors, every URL it asked for
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from typing import Any, Optional


def chromium() -> Optional[str]:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    def __init__(self, proc: subprocess.Popen, profile: str, ws: Any) -> None:
        self.proc, self.profile, self.ws = proc, profile, ws
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.console_errors: list[str] = []
        self.requests: list[str] = []

    @classmethod
    def launch(cls, width: int = 1400, height: int = 1000, timeout: float = 60.0) -> "Browser":
        import websocket  # websocket-client

        exe = chromium()
        if exe is None:
            raise FileNotFoundError("no chromium binary")
        profile = tempfile.mkdtemp(prefix="hlodump-cdp-")
        proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--metrics-recording-only", "--hide-scrollbars", "--mute-audio",
             f"--user-data-dir={profile}", "--remote-debugging-port=0", f"--window-size={width},{height}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.monotonic() + timeout
        assert proc.stderr is not None
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                if proc.poll() is not None:
                    break
                continue
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            proc.kill()
            raise CDPError("chromium did not start its DevTools endpoint")
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout))
        page = next(p for p in pages if p.get("type") == "page")
        ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True)
        b = cls(proc, profile, ws)
        for dom in ("Page", "Runtime", "Network", "Log"):
            b.send(f"{dom}.enable")
        b.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        return b

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.kill()
            self.proc.wait(30)
            shutil.rmtree(self.profile, ignore_errors=True)

    # -------------------------------------------------------------------- protocol
    def _note(self, ev: dict[str, Any]) -> None:
        self.events.append(ev)
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.console_errors.append(str(d.get("exception", {}).get("description") or d.get("text")))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            self.console_errors.append(p["entry"].get("text", ""))
        elif m == "Network.requestWillBeSent":
            self.requests.append(p.get("request", {}).get("url", ""))

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        me = self._id
        self.ws.send(json.dumps({"id": me, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == me:
                if "error" in msg:
                    raise CDPError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._note(msg)

    def wait_for(self, method: str, timeout: float = 60.0) -> dict[str, Any]:
        for ev in self.events:
            if ev.get("method") == method:
                self.events.remove(ev)
                return ev
        self.ws.settimeout(timeout)
        while True:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self._note(msg)
                if msg["method"] == method:
                    self.events.remove(msg)
                    return msg

    # -------------------------------------------------------------------- helpers
    def open(self, url: str, timeout: float = 60.0) -> float:
        """Navigate and wait for the load event; the seconds it took."""
        t0 = time.monotonic()
        self.events.clear()
        self.send("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired", timeout)
        return time.monotonic() - t0

    def eval(self, expr: str, await_promise: bool = False) -> Any:
        r = self.send("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=await_promise)
        if "exceptionDetails" in r:
            raise CDPError(f"{expr}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def wait_until(self, expr: str, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.05)
        raise CDPError(f"timed out waiting for {expr}")

    def mouse(self, kind: str, x: float, y: float) -> None:
        self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left" if kind != "mouseMoved" else "none",
                  clickCount=1 if kind != "mouseMoved" else 0)

    def click(self, x: float, y: float) -> None:
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y)

    def screenshot(self) -> bytes:
        return base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])


def outside_requests(urls: list[str]) -> list[str]:
    """Requests that would leave the machine (anything but the file itself, data: and blob:)."""
    return [u for u in urls if not u.startswith(("file:", "data:", "blob:", "about:"))]


def png_stats(data: bytes) -> tuple[int, int, float]:
    """(width, height, variance of grey levels 0..1) of a PNG, decoded with matplotlib."""
    import io

    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(io.BytesIO(data), format="png")
    grey = img[..., :3].mean(axis=2) if img.ndim == 3 else img
    return img.shape[1], img.shape[0], float(np.var(grey))


__all__ = ["Browser", "chromium", "outside_requests", "png_stats", "CDPError"]
