"""Open a local HTML file in headless Chromium over the DevTools pipe; report errors, values and a screenshot."""

import base64
import contextlib
import fcntl
import functools
import json
import math
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

last_pid: int | None = None  # PID, and process-group id, of the most recent browser, so tests can check it is gone

_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
          "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
          "--disable-extensions", "--disable-sync", "--disable-dev-shm-usage",
          "--webrtc-ip-handling-policy=disable_non_proxied_udp",  # WebRTC (STUN) would bypass the host resolver
          "--host-resolver-rules=MAP * ~NOTFOUND"]  # no host, not even an IP literal, resolves: requests fail locally


@dataclass
class Page:
    """What loading one page produced."""

    errors: list[str]
    values: dict[str, object]
    screenshot: Path | None


class _Cdp:
    """A DevTools connection over the pipe: NUL-terminated JSON messages both ways."""

    def __init__(self, rfd: int, wfd: int, timeout_s: float, on_event: Callable[[dict[str, Any]], None]) -> None:
        """Keep the pipe ends, the reply timeout and the handler for events."""
        self.rfd, self.wfd, self.timeout_s, self.on_event = rfd, wfd, timeout_s, on_event
        self.buf, self.last_id = b"", 0

    def _read(self, wait_s: float) -> dict[str, Any] | None:
        """Return the next message, or None if none is complete within wait_s seconds."""
        deadline = time.monotonic() + wait_s
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                return None
            if not (chunk := os.read(self.rfd, 1 << 20)):
                raise ConnectionError("chromium closed the DevTools pipe (it exited or crashed)")
            self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and return its result, handing events that arrive meanwhile to on_event."""
        self.last_id += 1
        msg = {"id": self.last_id, "method": method, "params": params} | ({"sessionId": session} if session else {})
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.wfd, data):]
        deadline = time.monotonic() + self.timeout_s
        while (reply := self._read(deadline - time.monotonic())) is None or reply.get("id") != self.last_id:
            if reply is None:
                raise TimeoutError(f"chromium sent no reply to {method} within {self.timeout_s:g} s")
            self.on_event(reply)
        if "error" in reply:
            raise RuntimeError(f"chromium refused {method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def pump(self, quiet_s: float, done: Callable[[], bool] = lambda: False, limit_s: float = 5.0) -> bool:
        """Handle events until done() holds, none comes for quiet_s seconds or limit_s have passed; return done()."""
        deadline = time.monotonic() + limit_s
        while not done() and time.monotonic() < deadline and (msg := self._read(quiet_s)) is not None:
            self.on_event(msg)
        return done()


def _wire_pipe(read_fd: int, write_fd: int) -> None:
    """In the child before exec, put the pipe ends on fds 3 and 4, via fds >= 10 so neither clobbers the other."""
    high_r, high_w = fcntl.fcntl(read_fd, fcntl.F_DUPFD, 10), fcntl.fcntl(write_fd, fcntl.F_DUPFD, 10)
    os.dup2(high_r, 3)
    os.dup2(high_w, 4)


def _survivors(pgid: int, mark: str) -> list[int]:
    """Return live (non-zombie) processes in session or process group pgid, or whose command line contains mark."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            stat, cmdline = (proc / "stat").read_text(), (proc / "cmdline").read_bytes()
            state, _, group, session = stat[stat.rindex(")") + 2:].split()[:4]
            if state != "Z" and (pgid in (int(group), int(session)) or mark.encode() in cmdline):
                found.append(int(proc.name))
    return found


def _wait(cond: Callable[[], object], wait_s: float) -> bool:
    """Poll cond until it holds or wait_s seconds have passed; return whether it held."""
    deadline = time.monotonic() + wait_s
    while not (held := cond()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(held)


def _stop(proc: subprocess.Popen[bytes], cmd_w: int, mark: str) -> None:
    """Close chromium gently, then by SIGTERM, then SIGKILL its group while the unreaped leader pins the group id."""
    exited = functools.partial(os.waitid, os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    with contextlib.suppress(OSError):
        os.set_blocking(cmd_w, False)
        os.write(cmd_w, json.dumps({"id": 1 << 30, "method": "Browser.close"}).encode() + b"\0")
    if not _wait(exited, 5):
        os.kill(proc.pid, signal.SIGTERM)
        _wait(exited, 5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _wait(lambda: not _survivors(proc.pid, mark), 5)  # children exit on their own (crashpad has its own session)


@contextlib.contextmanager
def _browser(binary: str, tmp: str) -> Iterator[tuple[int, int]]:
    """Run chromium with its DevTools pipe, yield our (read, write) ends, and always stop it afterwards."""
    global last_pid
    cmd_r, cmd_w = os.pipe()
    out_r, out_w = os.pipe()  # so fds 3 and 4 are open here, as pass_fds needs; _wire_pipe fills them in the child
    with open(cmd_w, "wb", buffering=0) as to_browser, open(out_r, "rb", buffering=0) as from_browser:
        try:
            # keep crash reports, caches and the singleton socket in tmp, not in ~ or /tmp where they could linger
            env = os.environ | {"XDG_CONFIG_HOME": f"{tmp}/config", "XDG_CACHE_HOME": f"{tmp}/cache", "TMPDIR": tmp}
            proc = subprocess.Popen([binary, *_FLAGS, f"--user-data-dir={tmp}/profile"], env=env, pass_fds=(3, 4),
                                    preexec_fn=functools.partial(_wire_pipe, cmd_r, out_w), start_new_session=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            for fd in (cmd_r, out_w):  # the browser's ends: once only it holds them, its exit shows here as EOF
                os.close(fd)
        last_pid = proc.pid
        try:
            yield from_browser.fileno(), to_browser.fileno()
        finally:
            _stop(proc, to_browser.fileno(), tmp)


def _one_line(details: dict[str, Any]) -> str:
    """Return the first line of an exception's description (its message), else the details' text."""
    return (details.get("exception", {}).get("description") or details.get("text", "")).strip().split("\n")[0]


def open_page(html: Path, evaluate: dict[str, str] | None = None, screenshot: Path | None = None,
              width: int = 1280, timeout_s: float = 60.0) -> Page:
    """Load html in a fresh headless Chromium and return its errors, the evaluated values and an optional screenshot."""
    binary = "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else shutil.which("chromium")
    if binary is None:
        raise FileNotFoundError("chromium is not installed (apt install chromium; make setup installs it)")
    page, loaded = Page(errors=[], values={}, screenshot=None), False

    def on_event(msg: dict[str, Any]) -> None:
        """Note the load event, and record each console error, uncaught exception and error-level log entry."""
        nonlocal loaded
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Page.loadEventFired":
            loaded = True
        elif method == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", a["type"]))) for a in p["args"])
            page.errors.append(f"console.{p['type']}: {args}".split("\n")[0])
        elif method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            page.errors.append(f"uncaught {_one_line(d)} ({d.get('url', '?')}:{d.get('lineNumber', -1) + 1})")
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            e = p["entry"]
            page.errors.append(f"{e['source']}: {e['text']}".split("\n")[0] + (f" ({e['url']})" if "url" in e else ""))

    with tempfile.TemporaryDirectory(prefix="zeroloss-chromium-", ignore_cleanup_errors=True) as tmp, \
            _browser(binary, tmp) as fds:
        cdp = _Cdp(*fds, timeout_s=timeout_s, on_event=on_event)
        target = cdp.call("Target.createTarget", url="about:blank")["targetId"]
        sid = cdp.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            cdp.call(f"{domain}.enable", sid)
        cdp.call("Emulation.setDeviceMetricsOverride", sid, width=width, height=800, deviceScaleFactor=1, mobile=False)
        loaded = False
        if error := cdp.call("Page.navigate", sid, url=html.resolve().as_uri()).get("errorText"):
            page.errors.append(f"navigation: {error} ({html})")
        if not cdp.pump(timeout_s, lambda: loaded, timeout_s):
            raise TimeoutError(f"chromium did not fire the load event of {html} within {timeout_s:g} s")
        cdp.pump(0.5)  # let late errors arrive (failed loads, timers): until 0.5 s pass quietly, at most 5 s
        for name, expression in (evaluate or {}).items():
            r = cdp.call("Runtime.evaluate", sid, expression=expression, returnByValue=True, awaitPromise=True)
            if "exceptionDetails" in r:
                page.errors.append(f"evaluate {name}: {_one_line(r['exceptionDetails'])}")
            page.values[name] = None if "exceptionDetails" in r else r["result"].get("value")
        if screenshot is not None:
            metrics = cdp.call("Page.getLayoutMetrics", sid)
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            clip = {"x": 0, "y": 0, "width": max(width, math.ceil(size["width"])),
                    "height": math.ceil(size["height"]), "scale": 1}
            shot = cdp.call("Page.captureScreenshot", sid, format="png", captureBeyondViewport=True, clip=clip)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            page.screenshot = screenshot
    return page
