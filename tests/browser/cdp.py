"""A minimal Chrome DevTools Protocol client for the HTML report tests, stdlib only.

Role: start headless Chromium with `--remote-debugging-pipe` (JSON messages ended by NUL, read by
Chromium from fd 3 and written to fd 4), open local files in fresh tabs, collect what a page logs
and requests, evaluate JavaScript, count DOM nodes (also with JavaScript off) and take screenshots.

Must not: use the network, a websocket library or any other new dependency; wait without a
timeout (every wait raises `CdpError` with the tail of Chromium's stderr); leave a Chromium
process or its temporary folder behind once `Browser` is closed. Linux only (fd passing, /proc).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # every host fails at once, not after a DNS timeout
]
# Chromium reads fd 3 and writes fd 4: a tiny Python step moves our pipe ends there, then execs
# it (the ends sit at fd 10 or above, so moving one cannot overwrite the other).
_MOVE_FDS = (
    "import os, sys; r, w = int(sys.argv[1]), int(sys.argv[2]); os.dup2(r, 3); os.dup2(w, 4); "
    "os.close(r); os.close(w); os.execvp(sys.argv[3], sys.argv[3:])"
)
_FIRST_FREE_FD = 10
_READ_CHUNK_BYTES = 1 << 20
_POLL_S = 0.05
_KILL_WAIT_S = 5.0
_IDLE_QUIET_S = 0.2  # a loaded page counts as idle after this long with no message and no request
_STDERR_TAIL_CHARS = 2000

Message = dict[str, Any]


class CdpError(RuntimeError):
    """Chromium failed, answered with an error, or did not answer in time."""


def find_chromium() -> str | None:
    """$LIBREYOLO_CHROMIUM, else chromium / chromium-browser / google-chrome on PATH."""
    override = os.environ.get("LIBREYOLO_CHROMIUM")
    if override:
        return shutil.which(override) or (override if Path(override).is_file() else None)
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found is not None:
            return found
    return None


class Browser:
    """One headless Chromium; a context manager that kills it and removes its profile on exit."""

    def __init__(self, executable: str | None = None, timeout_s: float = 30.0) -> None:
        exe = executable or find_chromium()
        if exe is None:
            raise CdpError("headless Chromium not found (set LIBREYOLO_CHROMIUM)")
        self.timeout_s = timeout_s
        self._folder = Path(tempfile.mkdtemp(prefix="libreyolo-chromium-"))
        self._stderr = (self._folder / "stderr.log").open("w+b")
        to_child_r, self._to_child = _pipe()
        self._from_child, from_child_w = _pipe()
        mover = [sys.executable, "-I", "-S", "-c", _MOVE_FDS, str(to_child_r), str(from_child_w)]
        argv = [exe, *_FLAGS, f"--user-data-dir={self._folder / 'profile'}", "about:blank"]
        # Crash reports and caches go under XDG folders: keep them in ours too.
        env = os.environ | {
            "XDG_CONFIG_HOME": str(self._folder / "config"),
            "XDG_CACHE_HOME": str(self._folder / "cache"),
        }
        try:
            self._proc = subprocess.Popen(
                [*mover, *argv],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                pass_fds=(to_child_r, from_child_w),
                env=env,
                start_new_session=True,  # one process group: closing kills every helper
            )
        except BaseException:
            os.close(self._to_child)
            os.close(self._from_child)
            self._cleanup_files()
            raise
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._next_id = 0
        self._buffer = b""
        self._responses: dict[int, Message] = {}
        self._pages: dict[str, Page] = {}
        self._closed = False
        try:
            self.call("Browser.getVersion")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(
        self, path: Path, *, javascript: bool = True, width: int = 1280, height: int = 900
    ) -> Page:
        """A new tab showing the file at `path`, once it has loaded and gone idle."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        page = Page(self, target, attached["sessionId"], width)
        self._pages[page.session_id] = page
        page._navigate(path.resolve().as_uri(), javascript=javascript, height=height)
        return page

    def call(
        self, method: str, params: Message | None = None, *, session_id: str | None = None
    ) -> Message:
        """Send one command and return its result; raise `CdpError` on an error or a timeout."""
        self._next_id += 1
        message: Message = {"id": self._next_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        self._send(message)
        msg_id = self._next_id
        self.wait_for(lambda: msg_id in self._responses, f"the answer to {method}")
        answer = self._responses.pop(msg_id)
        if "error" in answer:
            raise CdpError(f"{method} failed: {answer['error']}")
        result: Message = answer.get("result", {})
        return result

    def wait_for(self, done: Callable[[], bool], what: str, timeout_s: float | None = None) -> None:
        """Dispatch Chromium's messages until `done()` holds; raise `CdpError` after the timeout."""
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while not done():
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                raise CdpError(f"timed out waiting for {what}{self._stderr_tail()}")
            self.pump(min(left_s, _POLL_S))  # `done` may depend on time, as idleness does

    def pump(self, timeout_s: float) -> bool:
        """Read and dispatch what Chromium sent within `timeout_s`; False when nothing came."""
        if self._closed:
            raise CdpError("the browser is closed")
        ready, _, _ = select.select([self._from_child], [], [], max(timeout_s, 0.0))
        if not ready:
            return False
        chunk = os.read(self._from_child, _READ_CHUNK_BYTES)
        if not chunk:
            raise CdpError(f"chromium closed its DevTools pipe{self._stderr_tail()}")
        self._buffer += chunk
        *complete, self._buffer = self._buffer.split(b"\0")  # the last part may be partial
        for raw in complete:
            self._dispatch(json.loads(raw))
        return True

    def close(self) -> None:
        """Kill every Chromium process and remove its temporary folder; idempotent."""
        if self._closed:
            return
        self._closed = True
        for fd in (self._to_child, self._from_child):
            os.close(fd)
        try:
            _kill_all(self._proc, str(self._folder))
        finally:
            self._cleanup_files()

    def _send(self, message: Message) -> None:
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self._to_child, data) :]
        except BrokenPipeError as exc:
            raise CdpError(f"chromium is gone{self._stderr_tail()}") from exc

    def _dispatch(self, message: Message) -> None:
        if "id" in message:
            self._responses[message["id"]] = message
            return
        page = self._pages.get(message.get("sessionId", ""))
        if page is not None:
            page._on_event(message["method"], message.get("params", {}))

    def _forget(self, page: Page) -> None:
        self._pages.pop(page.session_id, None)

    def _stderr_tail(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - _STDERR_TAIL_CHARS))
        tail = self._stderr.read().decode(errors="replace").strip()
        return (
            f"; chromium stderr (tail):\n{tail}" if tail else "; chromium wrote nothing on stderr"
        )

    def _cleanup_files(self) -> None:
        self._stderr.close()
        shutil.rmtree(self._folder, ignore_errors=True)
        if self._folder.exists():
            raise CdpError(f"could not remove chromium's folder {self._folder}")


class Page:
    """One tab of a `Browser` showing a local file; what it logged and requested is kept."""

    def __init__(self, browser: Browser, target_id: str, session_id: str, width: int) -> None:
        self.browser = browser
        self.target_id = target_id
        self.session_id = session_id
        self.width = width
        self.console_errors: list[str] = []
        self.requests: list[str] = []
        self._pending: set[str] = set()
        self._loaded = False
        self._last_event_s = time.monotonic()
        self._closed = False

    def __enter__(self) -> Page:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def call(self, method: str, params: Message | None = None) -> Message:
        """One CDP command in this tab's session."""
        return self.browser.call(method, params, session_id=self.session_id)

    def evaluate(self, expression: str) -> object:
        """The JSON value of `expression` (promises awaited); raise `CdpError` if it throws."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise CdpError(f"evaluate({expression!r}) threw: {_exception_text(result)}")
        return result["result"].get("value")

    def count(self, selector: str) -> int:
        """How many elements match the CSS `selector`, via DOM.* so it works with JavaScript off."""
        root = self.call("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        found = self.call("DOM.querySelectorAll", {"nodeId": root, "selector": selector})
        return len(found["nodeIds"])

    def screenshot(self, path: Path, *, full_page: bool = True) -> None:
        """A PNG of the viewport, or of the whole page (all of its height) when `full_page`."""
        params: Message = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            clip = {
                "x": 0,
                "y": 0,
                "width": max(self.width, math.ceil(size["width"])),
                "height": math.ceil(size["height"]),
                "scale": 1,
            }
            params |= {"captureBeyondViewport": True, "clip": clip}
        data = self.call("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        """Close the tab; idempotent."""
        if self._closed or self.browser._closed:
            return
        self._closed = True
        self.browser.call("Target.closeTarget", {"targetId": self.target_id})
        self.browser._forget(self)

    def _navigate(self, url: str, *, javascript: bool, height: int) -> None:
        for domain in ("Page", "Runtime", "Log", "Network", "DOM"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        if not javascript:
            self.call("Emulation.setScriptExecutionDisabled", {"value": True})
        navigated = self.call("Page.navigate", {"url": url})
        if navigated.get("errorText"):
            raise CdpError(f"could not open {url}: {navigated['errorText']}")
        self.browser.wait_for(lambda: self._loaded, f"the load event of {url}")
        self.browser.wait_for(self._idle, f"{url} to go idle (requests: {self._pending})")

    def _idle(self) -> bool:
        return not self._pending and time.monotonic() - self._last_event_s >= _IDLE_QUIET_S

    def _on_event(self, method: str, params: Message) -> None:
        self._last_event_s = time.monotonic()
        if method == "Page.loadEventFired":
            self._loaded = True
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
            self._pending.add(params["requestId"])
        elif method in ("Network.loadingFinished", "Network.loadingFailed"):
            self._pending.discard(params["requestId"])
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            args = " ".join(_remote_text(arg) for arg in params.get("args", []))
            self.console_errors.append(f"console.{params['type']}: {args}")
        elif method == "Runtime.exceptionThrown":
            self.console_errors.append(f"uncaught: {_exception_text(params)}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            where = f" ({entry['url']})" if entry.get("url") else ""
            self.console_errors.append(f"{entry['source']}: {entry['text']}{where}")


def _pipe() -> tuple[int, int]:
    """A pipe whose two ends are at fd 10 or above (and not inherited unless passed)."""
    ends = os.pipe()
    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _FIRST_FREE_FD) for fd in ends)
    for fd in ends:
        os.close(fd)
    return moved[0], moved[1]


def _remote_text(obj: Message) -> str:
    if "value" in obj:
        return str(obj["value"])
    return str(obj.get("description", obj.get("type", "?")))


def _exception_text(holder: Message) -> str:
    details = holder["exceptionDetails"]
    exception = details.get("exception", {})
    return str(exception.get("description") or details.get("text", "?"))


def _kill_all(proc: subprocess.Popen[bytes], folder: str) -> None:
    """SIGKILL Chromium (its profile is thrown away, so no graceful 1.5 s exit is needed) and
    wait until none of its processes is alive; raise `CdpError` if one outlives the wait."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + _KILL_WAIT_S
    while alive := live_processes(proc.pid, folder):
        if time.monotonic() > deadline:
            raise CdpError(f"chromium processes {alive} survived SIGKILL")
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(_POLL_S)
    proc.wait()  # only now: the unreaped leader keeps its group id from being reused


def live_processes(group: int, folder: str) -> list[int]:
    """Running (not zombie) processes in Chromium's process group, or naming its folder, as the
    crash handlers do: they start their own sessions. Zombies are dead; PID 1 reaps orphans late."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _, pgrp = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            ours = int(pgrp) == group or folder.encode() in (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue  # gone meanwhile
        if ours and state != "Z":
            found.append(int(entry.name))
    return found
