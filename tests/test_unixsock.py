"""The one Unix-socket client (zeroloss.drivers.unixsock) against real AF_UNIX sockets in tmp: connect retry until the
server appears, per-call timeouts, refused and missing sockets as one-line errors, SOCK_SEQPACKET messages."""

import socket
import threading
import time

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.unixsock import PeerClosed, UnixClient

REMEDY = "start the server first"


def listener(path, kind=socket.SOCK_STREAM) -> socket.socket:
    """A real listening Unix socket at path."""
    srv = socket.socket(socket.AF_UNIX, kind)
    srv.bind(str(path))
    srv.listen(4)
    return srv


def client(path, kind=socket.SOCK_STREAM, timeout=2.0) -> UnixClient:
    return UnixClient(path, "the test server", REMEDY, kind=kind, timeout=timeout)


def test_connect_retries_until_the_server_appears(tmp_path):
    path = tmp_path / "late.sock"
    servers = []
    threading.Timer(0.4, lambda: servers.append(listener(path))).start()
    t0 = time.monotonic()
    c = client(path).connect(wait_s=5)
    assert c.connected and 0.3 < time.monotonic() - t0 < 3
    conn, _ = servers[0].accept()
    c.send(b"ping\n")
    assert conn.recv(16) == b"ping\n"
    c.close()
    c.close()  # twice is harmless
    assert not c.connected


def test_a_missing_socket_is_one_line_naming_it_and_the_fix_after_the_deadline(tmp_path):
    path = tmp_path / "nobody.sock"
    t0 = time.monotonic()
    with pytest.raises(ZeroLossError) as e:
        client(path).connect(wait_s=0.3)
    assert 0.3 <= time.monotonic() - t0 < 2
    assert str(e.value) == f"cannot reach the test server at {path}: No such file or directory: {REMEDY}"
    assert "\n" not in str(e.value)


def test_a_refused_connection_is_one_line(tmp_path):
    path = tmp_path / "stale.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))  # bound, never listening: what a dead server leaves behind
    with pytest.raises(ZeroLossError) as e:
        client(path).connect()
    assert str(e.value) == f"cannot reach the test server at {path}: Connection refused: {REMEDY}"
    srv.close()


def test_connect_gives_up_early_when_the_server_is_gone(tmp_path):
    t0 = time.monotonic()
    with pytest.raises(ZeroLossError, match="cannot reach"):
        client(tmp_path / "x.sock").connect(wait_s=30, alive=lambda: False)
    assert time.monotonic() - t0 < 1


def test_readline_splits_lines_and_times_out_on_silence(tmp_path):
    srv = listener(tmp_path / "s.sock")
    c = client(tmp_path / "s.sock", timeout=5).connect()
    conn, _ = srv.accept()
    conn.sendall(b"one\ntw")
    assert c.readline() == b"one"
    assert not c.wait_readable(0.05)
    conn.sendall(b"o\nthree\n")
    assert c.readline() == b"two"
    assert c.wait_readable(0)  # "three" is buffered: no need to ask the socket
    assert c.readline() == b"three"
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        c.readline(timeout=0.3)
    assert 0.25 < time.monotonic() - t0 < 2
    assert c.sock.gettimeout() == 5  # the per-call timeout does not stick
    conn.close()
    with pytest.raises(PeerClosed, match="closed the connection"):
        c.readline()


def test_seqpacket_keeps_message_boundaries(tmp_path):
    srv = listener(tmp_path / "t.sock", socket.SOCK_SEQPACKET)
    c = client(tmp_path / "t.sock", socket.SOCK_SEQPACKET).connect()
    conn, _ = srv.accept()
    conn.send(b'{"a": 1}')
    conn.send(b'{"b": 2}')
    assert c.recv_message() == b'{"a": 1}'
    assert c.recv_message() == b'{"b": 2}'
    c.send(b"/ethdev/stats,0")
    assert conn.recv(100) == b"/ethdev/stats,0"
    with pytest.raises(TimeoutError):
        c.recv_message(timeout=0.1)


def test_calls_without_a_connection_name_the_socket(tmp_path):
    c = client(tmp_path / "none.sock")
    with pytest.raises(ZeroLossError, match=f"not connected to the test server at {tmp_path}/none.sock"):
        c.send(b"x")
