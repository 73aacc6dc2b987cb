"""A hung component is a dead component (issue 28 Must 4), with real child processes: a process stopped by
SIGSTOP (state T) or held by a debugger (state t) is named by the same checks that name a dead one; a stop that
passes within the confirmation is not; a control request to a stopped server ends at once naming it, and one to a
server that does not answer ends after the timeout its message quotes; a stopped process is stopped at exit
without waiting for a timeout."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from zeroloss.drivers.dut.ovs import Ovs, OvsSettings
from zeroloss.drivers.dut.unixctl import Unixctl
from zeroloss.drivers.gen.client import ZlgenClient
from zeroloss.drivers.proc import KILLED_S, ComponentDied, ManagedProcess, check_alive, proc_state
from zeroloss.drivers.unixsock import UnixClient

# a line server standing for zlgen's control socket: each request line gets a reply with its id, after wait_s
SERVER = """
import json, os, signal, socket, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
srv = socket.socket(socket.AF_UNIX)
srv.bind(sys.argv[1]); srv.listen(4)
print("ready", flush=True)
while True:
    conn, _ = srv.accept()
    for line in conn.makefile():
        req = json.loads(line)
        time.sleep(req.get("wait_s", 0))  # as zlgen waits for the trial's end
        conn.sendall((json.dumps({"id": req["id"], "ok": True, "proto": 1, "trial": 1}) + "\\n").encode())
"""
# a process that acts on SIGTERM through a handler, as DPDK programs do (a stopped one runs it only after SIGCONT)
HANDLER = "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nprint('ready', " \
          "flush=True)\ntime.sleep(60)\n"


def started(tmp_path: Path, name: str, argv: list[str]) -> ManagedProcess:
    return ManagedProcess(name, argv, tmp_path / f"{name}.log").start()


def sigstop(p: ManagedProcess) -> None:
    """SIGSTOP, and wait until it took effect."""
    os.kill(p.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while proc_state(p.pid) != "T":
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.fixture
def sleeper(tmp_path):
    with ManagedProcess("sleeper", ["sleep", "60"], tmp_path / "sleeper.log") as p:
        yield p


def test_a_stopped_process_is_named_like_a_dead_one(sleeper):
    assert sleeper.died() is None
    sigstop(sleeper)
    why = sleeper.died()
    assert why is not None and why.startswith(f"sleeper (pid {sleeper.pid}) is stopped (SIGSTOP or a debugger): "
                                              f"state T; its log's last line: '(empty)'"), why
    with pytest.raises(ComponentDied, match=rf"sleeper \(pid {sleeper.pid}\) is stopped"):
        check_alive([sleeper])
    os.kill(sleeper.pid, signal.SIGCONT)
    assert sleeper.died() is None


def test_a_stop_that_passes_within_the_confirmation_is_not_a_fault(sleeper):
    """A debugger or profiler that stops the process for a moment (here: SIGCONT 30 ms after SIGSTOP)."""
    sigstop(sleeper)
    threading.Timer(0.03, os.kill, (sleeper.pid, signal.SIGCONT)).start()
    assert sleeper.stopped() is None
    assert sleeper.died() is None


def test_a_process_its_owner_holds_is_not_a_fault(sleeper):
    """TestPmd.pause freezes testpmd on purpose (the ledger's vnf-stop case): held, it is no fault."""
    sleeper.held = True
    sigstop(sleeper)
    assert sleeper.died() is None
    sleeper.held = False
    assert "is stopped" in (sleeper.died() or "")


def test_stop_of_a_stopped_process_lets_it_act_on_sigterm_at_once(tmp_path):
    """Without SIGCONT a stopped process keeps SIGTERM pending until the timeout's SIGKILL."""
    p = started(tmp_path, "handler", [sys.executable, "-c", HANDLER])
    p.wait_for_log("ready", 10)
    sigstop(p)
    t0 = time.monotonic()
    assert p.stop(timeout=10) == 0  # its handler ran: it exited, it was not killed
    assert time.monotonic() - t0 < 2


def test_a_process_held_by_a_debugger_is_named_and_killed_without_waiting(tmp_path, sleeper):
    gdb = shutil.which("gdb")
    if gdb is None:
        pytest.skip("gdb is not installed")
    dbg = subprocess.Popen([gdb, "-q", "-nx", "-p", str(sleeper.pid)], stdin=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while proc_state(sleeper.pid) != "t":
            if time.monotonic() > deadline or dbg.poll() is not None:
                pytest.skip("gdb cannot attach here (ptrace not allowed)")
            time.sleep(0.05)
        assert "is stopped (SIGSTOP or a debugger): state t" in (sleeper.died() or "")
        assert not sleeper.thaw()  # SIGCONT does not free it from the debugger
        pid, t0 = sleeper.pid, time.monotonic()
        sleeper.stop(timeout=10)  # SIGKILL once it stays stopped; the debugger, not we, reaps it
        assert time.monotonic() - t0 < KILLED_S + 1.5
        assert proc_state(pid) in ("Z", None)
    finally:
        dbg.kill()
        dbg.wait()


def zlgen_like(tmp_path: Path) -> tuple[ManagedProcess, Path]:
    sock = tmp_path / "ctl.sock"
    p = started(tmp_path, "server", [sys.executable, "-c", SERVER, str(sock)])
    p.wait_for_log("ready", 10)
    return p, sock


def test_a_request_to_a_stopped_zlgen_names_it_at_once(tmp_path):
    server, sock = zlgen_like(tmp_path)
    try:
        client = ZlgenClient(sock, timeout=30, guard=lambda: check_alive([server])).connect()
        assert client.status()["ok"]
        sigstop(server)
        t0 = time.monotonic()
        with pytest.raises(ComponentDied, match=rf"server \(pid {server.pid}\) is stopped"):
            client.status()
        assert time.monotonic() - t0 < 2  # one WATCH_S and the confirmation, not the 30 s timeout
        assert client.sock is None  # its reply is still due: the connection is never reused
    finally:
        server.stop()


def test_a_request_nobody_answers_ends_after_the_timeout_it_quotes(tmp_path):
    server, sock = zlgen_like(tmp_path)
    try:
        client = ZlgenClient(sock, timeout=2).connect()
        sigstop(server)  # no guard: only the timeout ends the wait
        t0 = time.monotonic()
        with pytest.raises(ComponentDied, match=r"zlgen did not answer 'status' in 2 s"):
            client.status()
        assert 1.9 < time.monotonic() - t0 < 2.5
    finally:
        server.stop()


def test_a_trial_request_is_bounded_by_the_trial_not_a_minute(tmp_path):
    """run_trial of duration_s: the result is due CONTROL_S after the trial's end, whatever the client's timeout."""
    server, sock = zlgen_like(tmp_path)
    try:
        client = ZlgenClient(sock, timeout=30).connect()
        client.request("hello")
        # the server answers start, then stops before the result
        threading.Timer(0.3, sigstop, (server,)).start()
        t0 = time.monotonic()
        with pytest.raises(ComponentDied, match="zlgen did not answer 'result' in 6 s"):
            client.run_trial(duration_s=0.5, drain_ms=100)
        assert 5.5 < time.monotonic() - t0 < 0.6 + 5 + 0.5
    finally:
        server.stop()


def test_a_socket_client_with_a_check_names_a_stopped_server(tmp_path):
    server, sock = zlgen_like(tmp_path)
    try:
        conn = UnixClient(sock, "the test server", "start it", timeout=30,
                          check=lambda: check_alive([server])).connect(5)
        sigstop(server)
        conn.send(b'{"id": 1}\n')
        t0 = time.monotonic()
        with pytest.raises(ComponentDied, match="is stopped"):
            conn.readline()
        assert time.monotonic() - t0 < 1
    finally:
        server.stop()


@pytest.fixture
def ovsdb(tmp_path):
    """A real ovsdb-server on a fresh database, as the bench's Ovs starts it (no vswitchd: that needs DPDK)."""
    if not shutil.which("ovsdb-server"):
        pytest.skip("Open vSwitch is not installed")
    ovs = Ovs(tmp_path / "ovs", OvsSettings(file_prefix="unused"))
    ovs.rundir.mkdir()
    subprocess.run(["ovsdb-tool", "create", str(ovs.db), "/usr/share/openvswitch/vswitch.ovsschema"], check=True)
    ovs.ovsdb = ManagedProcess("ovsdb-server", [
        "ovsdb-server", str(ovs.db), f"--remote=punix:{ovs.db_sock}", f"--unixctl={ovs.rundir / 'ovsdb.ctl'}",
        f"--log-file={ovs.rundir / 'ovsdb.log'}"], ovs.rundir / "ovsdb.out").start()
    ovs._wait_path(ovs.db_sock, ovs.ovsdb, 10)
    try:
        yield ovs
    finally:
        ovs.stop()


@pytest.mark.bench  # starts an ovsdb-server (OVS): a bench test (tests/tiers.py)
def test_ovs_vsctl_to_a_stopped_ovsdb_server_names_it_at_once(ovsdb):
    ovsdb.vsctl("init")
    sigstop(ovsdb.ovsdb)
    t0 = time.monotonic()
    with pytest.raises(ComponentDied, match=rf"ovsdb-server \(pid {ovsdb.ovsdb.pid}\) is stopped"):
        ovsdb.vsctl("list-br")
    assert time.monotonic() - t0 < 1.5


@pytest.mark.bench  # starts an ovsdb-server (OVS): a bench test (tests/tiers.py)
def test_unixctl_to_a_stopped_daemon_names_it_and_quotes_the_timeout_applied(ovsdb):
    proc = ovsdb.ovsdb
    ctl = ovsdb.rundir / "ovsdb.ctl"
    assert "ovsdb-server" in Unixctl(ctl, "ovsdb-server").call("version")
    sigstop(proc)
    t0 = time.monotonic()
    with pytest.raises(ComponentDied, match="is stopped"):
        Unixctl(ctl, "ovsdb-server", check=lambda: check_alive([proc])).call("version", timeout=30)
    assert time.monotonic() - t0 < 1.5
    t0 = time.monotonic()
    with pytest.raises(ComponentDied, match="ovsdb-server did not answer 'version' in 1 s"):
        Unixctl(ctl, "ovsdb-server").call("version", timeout=1)
    assert 0.9 < time.monotonic() - t0 < 1.5


@pytest.mark.bench  # starts an ovsdb-server (OVS): a bench test (tests/tiers.py)
def test_stopping_ovs_with_a_stopped_daemon_is_quick_and_leaves_nothing(ovsdb):
    proc = ovsdb.ovsdb
    pid = proc.pid
    sigstop(proc)
    t0 = time.monotonic()
    ovsdb.stop()
    assert time.monotonic() - t0 < 2
    assert proc_state(pid) is None and proc.proc.returncode is not None
