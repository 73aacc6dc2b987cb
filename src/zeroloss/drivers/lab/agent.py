"""zeroloss's reader on a lab host: sent over the SSH session's stdin and run by the host's python3 (standard
library only, nothing installed on the host). It answers JSON requests, one per line, on stdin/stdout for as long
as the session lasts, so that every reading of a trial is one round trip on one login:

    {"id": 7, "op": "batch", "items": [{"op": "run", "argv": [...]}, {"op": "telemetry", ...}]}
    -> {"id": 7, "ok": true, "result": [...]}

Ops (all read-only: the agent changes nothing unless the request is a `run` of a changing command, which only
zeroloss's --allow-dut-changes sends):
- run {argv, env?, timeout?}: {rc, out, err} of a command.
- unixctl {path, cmd, args?}: an ovs-appctl command over the daemon's control socket (JSON-RPC), the connection
  kept open: no process per reading.
- telemetry {path, cmds}: DPDK telemetry queries (SOCK_SEQPACKET, kept open), {cmd: value} or {"error": text}.
- alive {pids}: {pid: bool}.
- sysfs {text, links, dirs}: files under /sys, symlinks' target names, directory entries (SR-IOV VFs).
- batch {items}: the results of several requests, run concurrently.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


class Fields:
    """A JSON object read once: its keys that the class names become attributes, the class's values the defaults of
    those it lacks."""

    def __init__(self, doc):
        for key, value in doc.items():
            if key in self.FIELDS:
                setattr(self, key, value)


def _fields(cls):
    cls.FIELDS = frozenset(k for k, v in vars(cls).items() if not k.startswith("_") and not callable(v))
    return cls


@_fields
class Request(Fields):
    """A request: its op and id, and what each op reads (run: argv, env, timeout; unixctl: path, cmd, args;
    telemetry: path, cmds; alive: pids; sysfs: text, links, dirs; batch: items). timeout None: the op's own."""

    op = None
    id = None
    argv = ()
    env = None
    timeout = None
    path = ""
    cmd = ""
    args = None
    cmds = ()
    pids = ()
    text = None
    links = None
    dirs = None
    items = ()

    def wait(self, default):
        return default if self.timeout is None else self.timeout


@_fields
class RpcReply(Fields):
    """A daemon's JSON-RPC reply on its control socket (ovs-appctl's protocol)."""

    error = None
    result = None


_socks = {}
_lock = threading.Lock()
_use = {}  # one request at a time per kept connection (a batch runs its items on several threads)


def _using(key):
    with _lock:
        return _use.setdefault(key, threading.Lock())


def _run(req):
    env = dict(os.environ)
    env.update(req.env or {})
    try:
        r = subprocess.run(req.argv, capture_output=True, timeout=req.wait(30), env=env)
    except FileNotFoundError:
        return {"rc": 127, "out": "", "err": f"{req.argv[0]}: command not found"}
    except subprocess.TimeoutExpired:
        return {"rc": 124, "out": "", "err": f"{req.argv[0]}: no answer in {req.wait(30)} s"}
    return {"rc": r.returncode, "out": r.stdout.decode(errors="replace"), "err": r.stderr.decode(errors="replace")}


def _conn(key, family, path, timeout):
    with _lock:
        s = _socks.get(key)
    if s is not None:
        return s, False
    s = socket.socket(socket.AF_UNIX, family)
    s.settimeout(timeout)
    s.connect(path)
    with _lock:
        _socks[key] = s
    return s, True


def _drop(key):
    with _lock:
        s = _socks.pop(key, None)
    if s is not None:
        s.close()


def _unixctl_once(req):
    key = ("unixctl", req.path)
    s, _ = _conn(key, socket.SOCK_STREAM, req.path, req.wait(10))
    msg = {"method": req.cmd, "params": list(req.args or []), "id": 0}
    s.sendall(json.dumps(msg).encode())
    buf = b""
    dec = json.JSONDecoder()
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("the daemon closed its control socket")
        buf += chunk
        try:
            doc, _ = dec.raw_decode(buf.decode())
            break
        except ValueError:
            continue
    reply = RpcReply(doc)
    if reply.error is not None:
        return {"rc": 2, "out": "", "err": str(reply.error).strip()}
    return {"rc": 0, "out": reply.result or "", "err": ""}


def _kept(kind, once, faults, failed):
    """A request on a kept connection, one at a time; when it fails (the daemon restarted, the connection timed
    out) one new connection is tried before the fault is reported as failed(text)."""
    def run(req):
        key = (kind, req.path)
        with _using(key):
            for attempt in (1, 2):
                try:
                    return once(req)
                except faults as e:
                    _drop(key)
                    if attempt == 2:
                        return failed(f"{req.path}: {getattr(e, 'strerror', None) or e}")
    return run


def _telemetry_once(req):
    key = ("telemetry", req.path)
    s, new = _conn(key, socket.SOCK_SEQPACKET, req.path, req.wait(2))
    if new:
        s.recv(65536)  # the greeting: version, pid, max_output_len
    out = {}
    for cmd in req.cmds:
        s.send(cmd.encode())
        data = s.recv(1 << 20)
        if not data:
            raise OSError("the process closed its telemetry socket")
        out[cmd] = json.loads(data.decode()).get(cmd.split(",", 1)[0])
    return out


_unixctl = _kept("unixctl", _unixctl_once, OSError, lambda text: {"rc": 1, "out": "", "err": text})
_telemetry = _kept("telemetry", _telemetry_once, (OSError, ValueError), lambda text: {"error": text})


def _alive(req):
    out = {}
    for pid in req.pids:
        try:
            os.kill(int(pid), 0)
            out[str(pid)] = True
        except ProcessLookupError:
            out[str(pid)] = False
        except PermissionError:
            out[str(pid)] = True
    return out


def _sysfs(req):
    """sysfs reads under /sys (SR-IOV: a VF's PF and index): file texts, symlink targets' last names, directory
    entries; None where missing. ZEROLOSS_TEST_SYSFS_ROOT in the session's environment (lab tests only, set by
    their sshd) reads a tree laid out as /sys under that directory instead."""
    root = os.environ.get("ZEROLOSS_TEST_SYSFS_ROOT", "")

    def inside(p):
        return os.path.normpath(p).startswith("/sys/")

    def text(p):
        try:
            with open(p, errors="replace") as f:
                return f.read().strip()
        except OSError:
            return None

    def link(p):
        try:
            return os.path.basename(os.readlink(p))
        except OSError:
            return None

    def names(p):
        try:
            return sorted(os.listdir(p))
        except OSError:
            return None
    return {key: {p: fn(root + os.path.normpath(p)) if inside(p) else None for p in paths or []}
            for key, fn, paths in (("text", text, req.text), ("links", link, req.links), ("dirs", names, req.dirs))}


_pool = ThreadPoolExecutor(max_workers=8)


def _batch(req):
    return list(_pool.map(lambda item: _one(Request(item)), req.items))


OPS = {"run": _run, "unixctl": _unixctl, "telemetry": _telemetry, "alive": _alive, "batch": _batch, "sysfs": _sysfs,
       "hello": lambda req: {"pid": os.getpid(), "uid": os.getuid(), "host": socket.gethostname(),
                             "python": sys.version.split()[0], "time": time.time()}}


def _one(req):
    op = OPS.get(req.op)
    if op is None:
        return {"error": f"unknown op {req.op!r}"}
    return op(req)


def main():
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        req = Request(json.loads(line))
        try:
            reply = {"id": req.id, "ok": True, "result": _one(req)}
        except Exception as e:  # noqa: BLE001 - reported to zeroloss, which names it; the agent keeps serving
            reply = {"id": req.id, "ok": False, "error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
