"""The headless-Chromium harness itself: errors, values, screenshots, no network, and no browser left behind."""

import os
import shutil
import socket
import struct
from pathlib import Path

import pytest

import browser

needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None,
                                    reason="chromium is not installed (apt install chromium; make setup installs it)")


def _proc(pid: int) -> tuple[list[str], bytes] | None:
    """Return the /proc stat fields after the command name, and the command line, of a live (non-zombie) process."""
    try:
        stat, cmdline = Path(f"/proc/{pid}/stat").read_text(), Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return None if fields[0] == "Z" else (fields, cmdline)


def _identity(fields: list[str], cmdline: bytes) -> str:
    """Name a process by its start time and program, which a reused PID does not repeat."""
    return f"{fields[19]} {cmdline.split(bytes(1))[0].decode(errors='replace')}"


def _browser_procs(pgid: int, mark: str) -> dict[int, str]:
    """Map each live process in session or process group pgid, or with mark in its command line, to its identity."""
    found = {}
    for pid in (int(name) for name in os.listdir("/proc") if name.isdigit()):
        if (p := _proc(pid)) and (pgid in (int(p[0][2]), int(p[0][3])) or mark.encode() in p[1]):
            found[pid] = _identity(*p)
    return found


@pytest.fixture
def chromium_procs(monkeypatch):
    """Around each browser's stop, list its processes before and those still running after; check at teardown."""
    calls: list[tuple[int, dict[int, str], list[str]]] = []
    real_stop = browser._stop

    def stop(proc, cmd_w, mark):
        """Snapshot what runs for this browser, stop it for real, then note which of those processes still run."""
        before = _browser_procs(proc.pid, mark)
        real_stop(proc, cmd_w, mark)
        calls.append((proc.pid, before, [f"{p}: {who}" for p, who in before.items()
                                         if (now := _proc(p)) and _identity(*now) == who]))

    monkeypatch.setattr(browser, "_stop", stop)
    yield calls
    assert calls and calls[-1][0] == browser.last_pid, "open_page did not start a browser"
    for pid, before, survivors in calls:
        # not vacuous: the scan saw this browser, its helpers (zygote, renderer...) and nothing of ours
        assert pid in before and len(before) >= 3 and os.getpid() not in before, before
        assert not survivors, f"still running when browser {pid} had been stopped: {survivors}"


def _png_size(png: bytes) -> tuple[int, int]:
    """Return (width, height) from a PNG's IHDR chunk, checking the signature first."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


@needs_chromium
def test_static_page_has_no_errors_and_a_full_page_screenshot(tmp_path, chromium_procs):
    html = tmp_path / "static.html"
    html.write_text("<!doctype html><title>t</title><svg width='200' height='100'><rect width='200' height='100'/>"
                    "</svg><table><tr><th>a</th><td>1</td></tr></table><div style='height: 2000px'></div>")
    page = browser.open_page(html, {"svgs": "document.querySelectorAll('svg').length"}, tmp_path / "shot.png")
    assert page.errors == []
    assert page.values == {"svgs": 1}
    assert page.screenshot == tmp_path / "shot.png"
    width, height = _png_size(page.screenshot.read_bytes())
    assert width == 1280 and height > 2000  # the whole page, not the 800 px viewport


@needs_chromium
def test_console_errors_and_exceptions_are_reported(tmp_path, chromium_procs):
    html = tmp_path / "bad.html"
    html.write_text("<!doctype html><script>console.error('boom'); throw new Error('bang');</script>")
    page = browser.open_page(html, {"missing": "noSuchName.x", "later": "Promise.resolve(6 * 7)"})
    assert len(page.errors) == 3, page.errors
    assert "console.error: boom" in page.errors[0]
    assert "Error: bang" in page.errors[1] and "bad.html:1" in page.errors[1]
    assert "evaluate missing: ReferenceError: noSuchName is not defined" in page.errors[2]
    assert page.values == {"missing": None, "later": 42}
    assert page.screenshot is None


@needs_chromium
def test_network_is_blocked_locally(tmp_path, chromium_procs):
    with socket.create_server(("127.0.0.1", 0)) as server:  # a reachable server: it must get no connection either
        port = server.getsockname()[1]
        html = tmp_path / "net.html"
        html.write_text(f"<!doctype html><img src='http://example.com/x.png'><img src='http://127.0.0.1:{port}/y.png'>")
        page = browser.open_page(html)
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()
    # one error per image, in either order; name resolution failed, by the resolver rule, before any packet was sent
    assert len(page.errors) == 2, page.errors
    assert all("net::ERR_NAME_NOT_RESOLVED" in e for e in page.errors)
    assert any("http://example.com/x.png" in e for e in page.errors)
    assert any(f"http://127.0.0.1:{port}/y.png" in e for e in page.errors)


@needs_chromium
def test_no_browser_process_survives_success_or_timeout(tmp_path, chromium_procs):
    (tmp_path / "ok.html").write_text("<!doctype html><p>ok</p>")
    (tmp_path / "hang.html").write_text("<!doctype html><script>while (true) {}</script>")
    assert browser.open_page(tmp_path / "ok.html").errors == []
    first = browser.last_pid
    with pytest.raises(TimeoutError, match="within 2 s"):
        browser.open_page(tmp_path / "hang.html", timeout_s=2)
    assert [pid for pid, _, _ in chromium_procs] == [first, browser.last_pid] and first != browser.last_pid
    # the chromium_procs fixture checks, for both calls, that nothing they started still runs


def test_missing_chromium_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(browser.os, "access", lambda *args: False)
    monkeypatch.setattr(browser.shutil, "which", lambda *args: None)
    with pytest.raises(FileNotFoundError, match=r"chromium is not installed \(apt install chromium; make setup"):
        browser.open_page(tmp_path / "any.html")
