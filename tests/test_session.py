"""The bench lock, result locks, stale sessions and kept logs (zeroloss.drivers.session), and writes that cannot be
redirected or left half done (write_text_atomic), without DPDK: sleep processes stand in for a dead run's
children."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers import session
from zeroloss.drivers.bench.workspace import Workspace
from zeroloss.results.resultfile import ResultFile, mark_interrupted, patch_state_in_place, write_text_atomic

REPO = Path(__file__).resolve().parents[1]


def mount_tmpfs(path: Path, options: str) -> None:
    """A small tmpfs of our own (a full or read-only disk on demand); skipped where mounting is not allowed
    (a container without CAP_SYS_ADMIN: there the bench's hugetlbfs would have been mounted by the host)."""
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROLOSS_RUNDIR", str(tmp_path / "run"))
    monkeypatch.setenv("ZEROLOSS_LOCKDIR", str(tmp_path / "lock"))
    monkeypatch.setattr(session, "DPDK_RUNTIME", tmp_path / "dpdk")
    (tmp_path / "dpdk").mkdir()
    return tmp_path


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def stale_session(run: Path, name: str, children: list[tuple[int, int]], result: Path | None = None) -> Path:
    """A session folder as a zeroloss killed with -9 leaves it: owner gone, pid files, sockets, logs."""
    root = run / name
    (root / "ovs").mkdir(parents=True)
    owner = dead_pid()
    (root / "owner.json").write_text(json.dumps({"pid": owner, "start": 1, "tag": f"zl{owner}{name}"}))
    for i, (pid, started) in enumerate(children):
        (root / ("ovs" if i else ".") / f"p{i}.log.pid").write_text(f"{pid} {started} proc{i}\n")
    (root / "zlgen-ctl.sock").write_text("")
    (root / "zlgen.log").write_text("zlgen: ready\n")
    return root


def test_a_stale_session_is_cleaned_only_of_its_own_processes(dirs):
    run = dirs / "run"
    ours = subprocess.Popen(["sleep", "60"])
    stranger = subprocess.Popen(["sleep", "60"])  # its pid file names another start time: a reused pid
    try:
        root = stale_session(run, "sabc", [(ours.pid, session.start_time(ours.pid)),
                                           (stranger.pid, session.start_time(stranger.pid) + 1)])
        owner = json.loads((root / "owner.json").read_text())
        runtime = dirs / "dpdk" / f"{owner['tag']}gen"
        runtime.mkdir()
        notes = session.reap(run)
        assert ours.wait(timeout=5) == -9
        assert stranger.poll() is None
        assert not runtime.exists()
        assert len(notes) == 1 and f"zeroloss pid {owner['pid']}, which is gone" in notes[0]
        assert "proc0" in notes[0] and "proc1" not in notes[0]
        # its logs stay (no longer a live session), its sockets and owner go
        assert (root / "zlgen.log").exists() and not (root / "zlgen-ctl.sock").exists()
        assert not (root / "owner.json").exists()
    finally:
        for p in (ours, stranger):
            p.kill()
            p.wait()


def test_a_live_session_is_left_alone(dirs):
    run = dirs / "run"
    root = run / "slive"
    root.mkdir(parents=True)
    session.write_owner(root, "zltag")
    assert session.reap(run) == []
    assert (root / "owner.json").exists()


def test_kept_logs_are_bounded_in_number_and_age(dirs):
    run = dirs / "run"
    now = time.time()
    for i in range(15):
        d = run / f"s{i:02d}"
        d.mkdir(parents=True)
        (d / "zlgen.log").write_text("x")
        os.utime(d, (now - i * 60, now - i * 60))
    old = run / "sold"
    old.mkdir()
    os.utime(old, (now - 8 * 86400, now - 8 * 86400))
    session.reap(run)
    left = sorted(d.name for d in run.iterdir())
    assert left == [f"s{i:02d}" for i in range(session.KEEP_SESSIONS)]


def test_a_result_left_running_by_a_dead_writer_is_marked_interrupted(dirs):
    out = dirs / "r.json"
    rf = ResultFile.create(out, {"frame_sizes": [64]}, {"hostname": "h"})
    script = (f"import sys; sys.path.insert(0, {str(REPO / 'src')!r}); "
              "from zeroloss.drivers.session import ResultLock; "
              f"ResultLock({str(out)!r}).__enter__(); import os; os._exit(0)")
    subprocess.run([sys.executable, "-c", script], check=True, env=os.environ)  # a writer that died holding it
    assert rf.run.state == "running"
    session.mark_results_with(mark_interrupted)  # as the CLI wires it (cli.main._wire)
    notes = session.reap(dirs / "run")
    assert json.loads(out.read_text())["state"] == "interrupted"
    assert notes == [f"{out} was left running by a zeroloss that is gone: marked interrupted; continue it with "
                     f"'zeroloss run --resume {out}'"]
    assert list((dirs / "lock" / "locks").iterdir()) == []


KILLED_WRITER = """
import sys
sys.path.insert(0, sys.argv[2])
from zeroloss.core.fileio import write_text_atomic
from zeroloss.drivers.session import ResultLock
ResultLock(sys.argv[1]).__enter__()
print("locked", flush=True)
while True:
    write_text_atomic(sys.argv[1], "x" * 20_000_000)
"""


def killed_mid_write(out: Path) -> Path:
    """A zeroloss writer of out killed by SIGKILL while its temporary file exists: the file it leaves behind."""
    for _ in range(20):
        p = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(out), str(REPO / "src")],
                             stdout=subprocess.PIPE, env=os.environ)
        assert p.stdout.readline() == b"locked\n"
        deadline = time.monotonic() + 10
        while not list(out.parent.glob(f".{out.name}.*.tmp")) and time.monotonic() < deadline:
            time.sleep(0.001)
        p.kill()
        p.wait()
        p.stdout.close()
        left = list(out.parent.glob(f".{out.name}.*.tmp"))
        if left:
            return left[0]
    raise AssertionError("the writer was never killed with its temporary file in place")


def others_beside(out: Path) -> list[str]:
    """Files like a killed writer's temporary file that are not ours to remove."""
    d = out.parent
    (d / f".{out.name}.zzzzzzzz.tmp").write_text("another user's")
    os.chown(d / f".{out.name}.zzzzzzzz.tmp", 1000, 1000)
    (d / f".other-{out.name}.abcdefgh.tmp").write_text("another result file's")
    (d / f".{out.name}.short.tmp").write_text("not a mkstemp name")
    (d / f"{out.name}.tmp").write_text("not a mkstemp name")
    (d / f".{out.name}.dirdirdi.tmp").mkdir()
    (d / "target").write_text("a symlink's target")
    (d / f".{out.name}.linklink.tmp").symlink_to(d / "target")
    return sorted(p.name for p in d.iterdir())


def test_the_temporary_file_of_a_killed_writer_is_removed_by_the_next_clean_up(dirs, monkeypatch):
    out = dirs / "results" / "r.json"
    out.parent.mkdir()
    left = killed_mid_write(out)
    others = others_beside(out)
    monkeypatch.setattr(session, "_result_marker", session._no_marker)  # the file's state is another test's
    notes = session.reap(dirs / "run")
    assert notes == [f"removed 1 temporary file(s) a zeroloss killed while writing {out} left beside it "
                     f"({left.name})"]
    assert sorted(p.name for p in out.parent.iterdir()) == [n for n in others if n != left.name]
    assert (out.parent / "target").read_text() == "a symlink's target"
    assert list((dirs / "lock" / "locks").iterdir()) == []


def test_the_next_writer_of_the_file_removes_the_temporary_file_a_killed_one_left(dirs, capsys):
    out = dirs / "r.json"
    left = killed_mid_write(out)
    others = others_beside(out)
    with session.ResultLock(out):  # a --resume of the same file: its lock is ours, the clean-up passes it by
        assert not left.exists()
        assert session.reap(dirs / "run") == []
    assert sorted(p.name for p in dirs.iterdir()) == sorted(n for n in others if n != left.name)
    assert capsys.readouterr().err == (f"zeroloss: removed 1 temporary file(s) a zeroloss killed while writing {out} "
                                       f"left beside it ({left.name})\n")


def fill(disk: Path) -> None:
    """Writes into disk until it has no space left."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.fixture
def full_disk(tmp_path):
    """A tiny tmpfs with no space left (unmounted after the test)."""
    disk = tmp_path / "full"
    disk.mkdir()
    mount_tmpfs(disk, "size=64k")
    try:
        (disk / "locks").mkdir()
        fill(disk)
        yield disk
    finally:  # lazy: a descriptor left open on it (the fault under test) must not leave it mounted
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def test_a_full_lock_folder_is_one_line_with_the_remedy(dirs, full_disk, monkeypatch):
    monkeypatch.setenv("ZEROLOSS_LOCKDIR", str(full_disk))
    for take in (session.BENCH.acquire, session.ResultLock(dirs / "r.json").__enter__, Workspace):
        with pytest.raises(ZeroLossError) as e:
            take()
        assert e.value.message.startswith(f"cannot write the lock {full_disk}/") and \
            e.value.message.endswith(": No space left on device"), e.value.message
        assert e.value.remedy == session.RUN_REMEDY and "\n" not in str(e.value)
    assert session.BENCH.depth == 0
    (full_disk / "filler").unlink()  # room again: nothing was left held
    with session.ResultLock(dirs / "r.json"), Workspace():
        pass


def test_a_full_run_folder_is_one_line_with_the_remedy(dirs, full_disk, monkeypatch):
    monkeypatch.setenv("ZEROLOSS_RUNDIR", str(full_disk))
    with pytest.raises(ZeroLossError) as e:
        Workspace()
    assert e.value.message.startswith(f"cannot write {full_disk}/s") and "No space left on device" in str(e.value)
    assert e.value.remedy == session.RUN_REMEDY and "\n" not in str(e.value)
    assert session.BENCH.depth == 0


def test_one_writer_per_result_file(dirs):
    out = dirs / "r.json"
    with session.ResultLock(out):
        script = (f"import sys; sys.path.insert(0, {str(REPO / 'src')!r}); "
                  "from zeroloss.drivers.session import ResultLock; "
                  f"ResultLock({str(out)!r}).__enter__()")
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ)
        assert r.returncode != 0 and f"{out} is being written by zeroloss pid {os.getpid()}" in r.stderr
    with session.ResultLock(out):  # released: taken again
        pass


def test_the_bench_lock_is_reentrant_in_a_process_and_exclusive_across(dirs):
    with Workspace() as a, Workspace() as b:
        assert a.root != b.root and (a.root / "owner.json").exists()
        script = (f"import sys; sys.path.insert(0, {str(REPO / 'src')!r}); "
                  "from zeroloss.drivers.bench.workspace import "
                  f"Workspace; Workspace()")
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ)
        assert f"the bench is in use by zeroloss pid {os.getpid()}" in r.stderr
    assert session.BENCH.depth == 0
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ)
    assert r.returncode == 0, r.stderr


def test_a_session_leaves_no_runtime_folder_and_keeps_logs_only_after_an_error(dirs):
    with Workspace() as ws:
        (session.DPDK_RUNTIME / ws.prefix("ovs")).mkdir()
        ws.log("zlgen").write_text("x")
    assert not ws.root.exists() and list(session.DPDK_RUNTIME.iterdir()) == []
    with pytest.raises(ZeroLossError), Workspace() as ws:
        ws.log("zlgen").write_text("x")
        (ws.root / "zlgen.log.pid").write_text("1 1 zlgen")
        raise ZeroLossError("boom")
    assert sorted(p.name for p in ws.root.iterdir()) == ["zlgen.log"]


# writes ---------------------------------------------------------------------------------------------------------

def test_a_planted_symlink_is_replaced_never_followed(tmp_path):
    """Another user's symlink at the output path (or at the old predictable <out>.tmp) must not make root
    overwrite the file it points to."""
    secret = tmp_path / "secret"
    secret.write_text("root's")
    secret.chmod(0o600)
    out = tmp_path / "report.html"
    for link in (out, tmp_path / "report.html.tmp"):
        link.symlink_to(secret)
        os.lchown(link, 1000, 1000)
    write_text_atomic(out, "<html>")
    assert secret.read_text() == "root's"
    assert not out.is_symlink() and out.read_text() == "<html>"
    assert oct(out.stat().st_mode & 0o777) == "0o600"


def test_resume_through_the_users_own_symlink_writes_its_target(tmp_path):
    real = tmp_path / "data" / "r.json"
    rf = ResultFile.create(real, {}, {"hostname": "h"})
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    again = ResultFile.load(link)
    again.set_state("interrupted")
    assert link.is_symlink() and json.loads(real.read_text())["state"] == "interrupted"
    assert rf.path == real
    os.lchown(link, 1000, 1000)
    with pytest.raises(ZeroLossError, match="symlink owned by another user"):
        ResultFile.load(link)


def test_a_failed_write_is_one_error_and_leaves_no_temporary_file(tmp_path):
    with pytest.raises(ZeroLossError, match=r"cannot write .*: .*passwd is not a folder"):
        write_text_atomic(Path("/etc/passwd/x.json"), "{}")
    disk = tmp_path / "disk"
    disk.mkdir()
    mount_tmpfs(disk, "size=64k")
    try:
        with pytest.raises(ZeroLossError, match="No space left on device"):
            write_text_atomic(disk / "big.json", "x" * 200_000)
        assert list(disk.iterdir()) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_state_patched_in_place_stays_json(tmp_path):
    out = tmp_path / "r.json"
    ResultFile.create(out, {}, {"hostname": "h"})
    assert patch_state_in_place(out, "running", "failed")
    assert json.loads(out.read_text())["state"] == "failed"
    assert not patch_state_in_place(out, "failed", "interrupted")  # longer: would need a new copy


def test_setup_links_entry_points_only_from_a_tree_others_cannot_write(tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from safe_path import unsafe_reason
    finally:
        sys.path.pop(0)
    assert unsafe_reason(REPO) is None or "uid" in unsafe_reason(REPO)
    base = tmp_path / "safe"
    base.mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    assert unsafe_reason(base) is None  # /tmp is world-writable but sticky: its entries cannot be replaced
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "checkout").mkdir()
    assert "shared is writable by other users" in unsafe_reason(shared / "checkout")
    os.chown(base, 1000, 1000)
    assert "belongs to uid 1000" in unsafe_reason(base)


@pytest.mark.parametrize("stored", [{"index": 0}, {"index": 0, "rate_pps": "x", "kind": "search"},
                                    {"index": 0, "rate_pps": 1000.0, "kind": "search", "outcome": {"directions": [7]}}])
def test_resuming_a_damaged_trial_is_one_line(stored):
    from zeroloss.core.config import RunConfig
    from zeroloss.core.search import Kind
    from zeroloss.core.stream import Stream
    from zeroloss.results.records import TrialEntry
    from zeroloss.results.resultfile import records
    from zeroloss.runs.trial import TrialRunner
    from zeroloss.targets.base import Probe, Target

    class NoGenerator:  # replay never reaches the generator; configure is all the runner asks of it up front
        def configure(self, streams):
            return len(streams)

    class Replay(Target):
        client = NoGenerator()

        def probe(self):
            return Probe([])

        def streams(self, frame, rate_pps):
            return [Stream(port=0, size=frame, rate_pps=rate_pps)]

        def placement(self):
            return {}

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    # a trial of the wrong shape is refused as the file is read, one of the right shape but not the trial the
    # search asks for when it is replayed: one line either way
    with pytest.raises(ZeroLossError, match=r"r.json: outcome.directions\[0\]: is not an object|cannot resume"):
        runner = TrialRunner(Replay(), RunConfig(), 64, [records(TrialEntry, stored, "r.json")])
        runner(1000.0, 1.0, Kind.SEARCH)


def _tap(name: str) -> None:
    r = subprocess.run(["ip", "tuntap", "add", "dev", name, "mode", "tap"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot make a tap here: {r.stderr.strip()}")


def test_a_stale_session_removes_the_taps_and_ovs_sockets_it_made_and_only_those(dirs):
    """kill -9 of zeroloss during PVP left OVS's netdev taps (br0, ovs-netdev) and its *.ctl sockets (issue 38,
    14): a tap the session recorded (name and ifindex) is deleted by the next clean-up; one of the same name made
    since by someone else, or never recorded, stays; its control sockets go, a plain file named *.ctl stays."""
    import socket

    tag = f"zt{os.getpid() % 100000}"
    ours, replaced, stranger = f"{tag}a", f"{tag}b", f"{tag}c"
    root = stale_session(dirs / "run", "staps", [])
    try:
        for name in (ours, replaced, stranger):
            _tap(name)
        assert session.record_tap(root / "ovs", ours) and session.record_tap(root / "ovs", replaced)
        assert not session.record_tap(root / "ovs", "lo")  # not a tap: never recorded
        subprocess.run(["ip", "link", "delete", replaced], check=True)
        _tap(replaced)  # the same name, another device: not the session's
        for name in ("ovs-vswitchd.123.ctl", "br0.mgmt"):
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(root / "ovs" / name))
            s.close()
        (root / "ovs" / "notes.ctl").write_text("a file, not a socket")
        notes = session.reap(dirs / "run")
        assert session.tap_index(ours) is None
        assert session.tap_index(replaced) is not None and session.tap_index(stranger) is not None
        assert f"tap {ours}" in notes[0] and replaced not in notes[0]
        assert not (root / "ovs" / "ovs-vswitchd.123.ctl").exists() and not (root / "ovs" / "br0.mgmt").exists()
        assert (root / "ovs" / "notes.ctl").exists() and not (root / "ovs" / session.TAPS).exists()
    finally:
        for name in (ours, replaced, stranger):
            subprocess.run(["ip", "link", "delete", name], capture_output=True)
