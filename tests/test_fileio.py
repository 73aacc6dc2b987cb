"""zeroloss.core.fileio, the one module that writes files: atomic whole-file writes that a planted symlink cannot
redirect, 0600 by default, bounded reads, journal lines that survive a torn last line, one-line errors."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import pytest

from zeroloss.core import fileio
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import (
    append_line,
    open_log,
    read_json,
    read_lines,
    write_json_atomic,
    write_new,
    write_text_atomic,
)

REPO = Path(__file__).resolve().parents[1]


def one_line(e: pytest.ExceptionInfo) -> str:
    text = str(e.value)
    assert "\n" not in text and text
    return text


@pytest.fixture
def readonly(tmp_path):
    """A folder nobody may write into, root included (a read-only tmpfs for root, mode 0555 for others)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {r.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


WRITER = """
import sys
sys.path.insert(0, sys.argv[2])
from zeroloss.core.fileio import write_text_atomic
n = 0
while True:
    write_text_atomic(sys.argv[1], ("AB"[n % 2] * 4_000_000))
    n += 1
    if n == 2:
        print("writing", flush=True)
"""


def test_a_writer_killed_mid_write_leaves_the_old_or_the_new_file_whole(tmp_path):
    out = tmp_path / "r.json"
    for delay in (0.0, 0.05, 0.13, 0.31):
        p = subprocess.Popen([sys.executable, "-c", WRITER, str(out), str(REPO / "src")], stdout=subprocess.PIPE)
        assert p.stdout.readline() == b"writing\n"
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        data = out.read_bytes()
        assert data in (b"A" * 4_000_000, b"B" * 4_000_000)


def test_a_failed_write_leaves_the_old_content(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        write_text_atomic(disk / "r.json", "old")
        with pytest.raises(ZeroLossError) as e:
            write_text_atomic(disk / "r.json", "x" * 200_000)
        assert "No space left on device" in one_line(e)
        assert (disk / "r.json").read_text() == "old"
        assert [p.name for p in disk.iterdir()] == ["r.json"]
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_symlink_at_the_target_is_replaced_not_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root's")
    out = tmp_path / "out.json"
    out.symlink_to(secret)
    write_json_atomic(out, {"a": 1})
    assert secret.read_text() == "root's"
    assert not out.is_symlink() and json.loads(out.read_text()) == {"a": 1}


def test_a_symlink_at_any_predictable_temporary_name_cannot_redirect_the_write(tmp_path, monkeypatch):
    """The old names (FILE.tmp, .FILE.tmp) and even a name mkstemp was made to pick first: O_EXCL refuses the
    planted link and takes another name, the link's target is untouched."""
    secret = tmp_path / "secret"
    secret.write_text("root's")
    out = tmp_path / "out.json"
    planted = [tmp_path / "out.json.tmp", tmp_path / ".out.json.tmp", tmp_path / ".out.json.guessed.tmp"]
    for link in planted:
        link.symlink_to(secret)
    names = iter(["guessed", "guessed", "other"])
    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: names)
    write_text_atomic(out, "new")
    assert secret.read_text() == "root's"
    assert out.read_text() == "new" and not out.is_symlink()
    assert all(link.is_symlink() for link in planted)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["secret", "out.json", *(p.name for p in planted)])


def test_files_are_0600_unless_the_caller_says(tmp_path):
    old = os.umask(0)
    try:
        write_text_atomic(tmp_path / "a", "x")
        write_text_atomic(tmp_path / "b", b"x", mode=0o644)
        append_line(tmp_path / "c", "x")
    finally:
        os.umask(old)
    assert [oct((tmp_path / n).stat().st_mode & 0o777) for n in "abc"] == ["0o600", "0o644", "0o600"]


def test_a_write_into_a_read_only_folder_is_one_line(readonly):
    with pytest.raises(ZeroLossError) as e:
        write_json_atomic(readonly / "r.json", {})
    assert one_line(e).startswith(f"cannot write {readonly / 'r.json'}: Read-only file system")
    with pytest.raises(ZeroLossError) as e:
        append_line(readonly / "r.json.journal", "{}")
    assert one_line(e).startswith(f"cannot write {readonly / 'r.json.journal'}:")
    assert list(readonly.iterdir()) == []


def test_a_write_under_a_file_names_it(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ZeroLossError, match=r"cannot write .*/f/x/r\.json: .*/f is not a folder"):
        write_text_atomic(tmp_path / "f" / "x" / "r.json", "{}")


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(8 << 30)  # sparse: reading it whole would take 8 GiB of memory
    with pytest.raises(ZeroLossError) as e:
        read_json(big, "result file")
    assert one_line(e).startswith(f"result file {big} is {8 << 30} bytes, more than the {fileio.MAX_READ}")
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"a": "x" * 100}))
    with pytest.raises(ZeroLossError, match="more than the 50 zeroloss reads"):
        read_json(small, "result file", limit=50)
    assert read_json(small, "result file", limit=200) == {"a": "x" * 100}


def test_a_gzip_file_is_read_and_bounded_by_its_uncompressed_size(tmp_path):
    z = tmp_path / "r.json.gz"
    z.write_bytes(gzip.compress(json.dumps({"a": " " * 100_000}).encode()))
    assert read_json(z, "result file") == {"a": " " * 100_000}
    with pytest.raises(ZeroLossError) as e:
        read_json(z, "result file", limit=10_000)
    assert "over 10000 uncompressed" in one_line(e)
    z.write_bytes(gzip.compress(b"{}")[:-6])
    with pytest.raises(ZeroLossError) as e:
        read_json(z, "result file")
    assert "is a damaged gzip file" in one_line(e)


@pytest.mark.parametrize(("text", "fault"), [
    (b"{", "is not valid JSON (line 1)"),
    (b'"\xff"', "is not JSON text"),
    (b"[" * 100_000 + b"]" * 100_000, "is nested too deeply to be a zeroloss file"),
])
def test_a_bad_document_is_one_line(tmp_path, text, fault):
    p = tmp_path / "r.json"
    p.write_bytes(text)
    with pytest.raises(ZeroLossError) as e:
        read_json(p, "result file")
    assert one_line(e).startswith(f"result file {p} {fault}")
    with pytest.raises(ZeroLossError, match="cannot read result file .*: No such file"):
        read_json(tmp_path / "missing.json", "result file")


def test_journal_lines_survive_a_torn_last_line(tmp_path):
    j = tmp_path / "r.json.journal"
    assert read_lines(j, 1 << 20) == ([], False)
    for n in range(3):
        append_line(j, json.dumps({"seq": n}))
    with open(j, "ab") as f:
        f.write(b'{"seq": 3, "op": "tri')  # a writer killed in the middle of a line
    got = read_lines(j, 1 << 20)
    assert got.torn and len(got.lines) == 3
    assert [json.loads(x)["seq"] for x in got.lines] == [0, 1, 2]
    append_line(j, json.dumps({"seq": 3}))  # the next writer cuts the torn line first
    got = read_lines(j, 1 << 20)
    assert not got.torn and [json.loads(x)["seq"] for x in got.lines] == [0, 1, 2, 3]
    assert j.read_bytes().count(b"\n") == 4


def test_a_torn_first_line_leaves_an_empty_journal(tmp_path):
    j = tmp_path / "j"
    j.write_bytes(b'{"seq": 1')
    assert read_lines(j, 100) == ([], True)
    append_line(j, "{}")
    assert j.read_bytes() == b"{}\n"


def test_journal_appends_never_follow_a_symlink_and_reads_are_bounded(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root's\n")
    j = tmp_path / "r.json.journal"
    j.symlink_to(secret)
    with pytest.raises(ZeroLossError) as e:
        append_line(j, "{}")
    assert one_line(e).startswith(f"cannot write {j}:")
    assert secret.read_text() == "root's\n"
    with pytest.raises(ValueError, match="newline"):
        append_line(tmp_path / "k", "a\nb")
    k = tmp_path / "k"
    for _ in range(10):
        append_line(k, "x" * 20)
    with pytest.raises(ZeroLossError) as e:
        read_lines(k, 100)
    assert "more than the 100 zeroloss reads" in one_line(e)
    k.write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(ZeroLossError, match="line 2 is not UTF-8 text"):
        read_lines(k, 100)


def test_new_tree_files_and_logs_are_0600_and_never_written_through_a_link(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root's")
    write_new(tmp_path / "tree" / "sys" / "a", b"1\n")
    assert (tmp_path / "tree" / "sys" / "a").read_bytes() == b"1\n"
    assert oct((tmp_path / "tree" / "sys" / "a").stat().st_mode & 0o777) == "0o600"
    (tmp_path / "tree" / "link").symlink_to(secret)
    for target in (tmp_path / "tree" / "sys" / "a", tmp_path / "tree" / "link"):
        with pytest.raises(ZeroLossError) as e:
            write_new(target, b"x")
        assert one_line(e).startswith(f"cannot write {target}: File exists")
    log = tmp_path / "zlgen.log"
    log.symlink_to(secret)
    with pytest.raises(ZeroLossError, match="cannot write .*zlgen.log"):
        open_log(log)
    log.unlink()
    with open_log(log) as f:
        f.write(b"ready\n")
    assert log.read_bytes() == b"ready\n" and oct(log.stat().st_mode & 0o777) == "0o600"
    assert secret.read_text() == "root's"


def test_soak_file_is_written_atomically_0600_without_a_tmp_file(tmp_path):
    """zeroloss trial --interval -o FILE: the soak's file as written when its target cannot start (here: a lab
    target whose node is not there); a symlink planted at the old FILE.tmp is not followed."""
    from zeroloss.core.config import RunConfig
    from zeroloss.runs.soak import soak

    class Unreachable(types.SimpleNamespace):  # a target that fails to start, as a lab node nobody answers for
        def __enter__(self):
            raise ZeroLossError("lab: cannot reach the node")

        def __exit__(self, *exc):
            return None

    secret = tmp_path / "secret"
    secret.write_text("root's")
    out = tmp_path / "soak.json"
    (tmp_path / "soak.json.tmp").symlink_to(secret)
    with pytest.raises(ZeroLossError):
        soak(RunConfig(), Unreachable(), 64, ("pps", 1000.0), 1.0, 0.5, out, lambda row: None)
    doc = json.loads(out.read_text())
    assert doc["kind"] == "zeroloss-soak" and doc["state"] == "failed"
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    assert secret.read_text() == "root's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret", "soak.json", "soak.json.tmp"]
