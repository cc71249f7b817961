"""A real headless Chromium, driven over the DevTools protocol on a pipe (--remote-debugging-pipe): no
driver, no library, no port. The browser reads commands from its fd 3 and writes answers and events
to its fd 4, each a JSON object ended by a NUL byte.

    with Browser() as page:              # None found: Browser.find() is None
        page.open(Path("p.html"))
        page.evaluate("document.title")
        page.hover(x, y); page.screenshot(Path("p.png"))

Every network request the page makes is kept (`requests`), and so is every console message and
security-policy report (`console`).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
         "--remote-debugging-pipe")


def high(fd: int) -> int:
    """`fd` moved above 10, so that putting the pipes at 3 and 4 in the child cannot close one of them."""
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class Browser:
    def __init__(self, timeout: float = 30.0):
        self.timeout = timeout
        self.requests: list[str] = []
        self.console: list[str] = []
        self.events: list[dict] = []
        self.next_id = 0

    @staticmethod
    def find() -> str | None:
        return next((path for name in NAMES if (path := shutil.which(name))), None)

    def __enter__(self) -> "Browser":
        executable = self.find()
        if executable is None:
            raise RuntimeError("no Chromium installed")
        self.profile = tempfile.TemporaryDirectory()
        command_read, self.command_write = (high(fd) for fd in os.pipe())
        self.answer_read, answer_write = (high(fd) for fd in os.pipe())

        def pipes_at_3_and_4():
            os.dup2(command_read, 3)
            os.dup2(answer_write, 4)

        self.process = subprocess.Popen([executable, *FLAGS, f"--user-data-dir={self.profile.name}", "about:blank"],
                                        close_fds=False, preexec_fn=pipes_at_3_and_4,  # Python's own fds are not inherited (PEP 446)
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(command_read)
        os.close(answer_write)
        self.buffer = b""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.send("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.command_write)
        os.close(self.answer_read)
        self.profile.cleanup()

    # --- the protocol ------------------------------------------------------------------------------

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.command_write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def call(self, method: str, params: dict | None = None) -> dict:
        """A command to the page."""
        return self.send(method, params, self.session)

    def read(self) -> dict:
        import select

        deadline = time.monotonic() + self.timeout
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.answer_read], [], [], left)[0]:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self.answer_read, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium went away")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        reply = json.loads(message)
        if "method" in reply:
            self.event(reply)
        return reply

    def event(self, message: dict) -> None:
        self.events.append(message)
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif message["method"] == "Runtime.consoleAPICalled":
            self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif message["method"] == "Log.entryAdded":
            self.console.append(params["entry"].get("text", ""))
        elif message["method"] == "Runtime.exceptionThrown":
            self.console.append("exception: " + params["exceptionDetails"].get("text", "") + " "
                                + str(params["exceptionDetails"].get("exception", {}).get("description", "")))

    def wait_for(self, method: str) -> dict:
        seen = len(self.events)
        while True:
            for message in self.events[seen:]:
                if message["method"] == method:
                    return message
            seen = len(self.events)
            self.read()

    # --- what a test does with a page ------------------------------------------------------------

    def viewport(self, width: int, height: int, mobile: bool = False) -> None:
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def open(self, path: Path) -> None:
        self.events.clear()
        self.call("Page.navigate", {"url": path.resolve().as_uri()})
        self.wait_for("Page.loadEventFired")

    def ready(self, timeout: float = 10.0) -> float:
        """Wait until the page says it is drawn (body[data-ready]); returns the seconds from the load event."""
        return self.evaluate(f"""new Promise((done, fail) => {{
            const start = performance.now();
            const look = () => document.body.dataset.ready === "1" ? done((performance.now() - start) / 1000)
                : performance.now() - start > {timeout * 1000} ? fail(new Error("not ready")) : setTimeout(look, 20);
            look();
        }})""")

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def hover(self, x: float, y: float) -> None:
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def tap(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def screenshot(self, path: Path, full: bool = True) -> None:
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": full})
        path.write_bytes(base64.b64decode(shot["data"]))
