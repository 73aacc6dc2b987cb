"""A real OpenSSH server on 127.0.0.1 standing in for a lab host: its own keys, config and log in a work dir.

Clients reach it as lab1, lab2 or labhost through the ssh_config it writes (root, its own key), which checks the
server's host key against a real known_hosts holding it (StrictHostKeyChecking yes). drop_connections() kills the
per-connection sshd processes, as a lost network would, while the listener keeps accepting new logins.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"  # sshd re-executes itself for each connection: it must be started by absolute path
SSH_KEYGEN = "ssh-keygen"
PRIVSEP_DIR = Path("/run/sshd")
HOSTS = ("lab1", "lab2", "labhost")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> list[int]:
    """Direct children of pid that still run (not zombies), from every process's PPid in /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(pid) and not fields.get("State", "").strip().startswith("Z"):
            # a zombie is a connection that ended and waits for its parent's wait(): not a connection
            out.append(int(entry.name))
    return out


def descendants(pid: int) -> list[int]:
    """Every process below pid, parents before their children."""
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class SshServer:
    """sshd -D on 127.0.0.1:port, everything in workdir; ``with SshServer(dir) as s:`` stops it however it ends.

    Attributes once started: port, key (the client's private key), ssh_config (a client config naming
    lab1, lab2 and labhost), log (sshd's own log)."""

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.key = self.workdir / "client_ed25519"
        self.host_key = self.workdir / "host_ed25519"
        self.config = self.workdir / "sshd_config"
        self.ssh_config = self.workdir / "ssh_config"
        self.known_hosts = self.workdir / "known_hosts"
        self.log = self.workdir / "sshd.log"
        self.port = 0
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 10.0) -> SshServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        for path, comment in ((self.host_key, "zeroloss lab host"), (self.key, "zeroloss lab client")):
            if not path.exists():
                subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                               check=True, capture_output=True)
        (self.workdir / "authorized_keys").write_text(self.key.with_suffix(".pub").read_text())
        try:
            for _attempt in range(3):  # another process may take the free port before sshd binds it
                self.port = free_port()
                self._write_configs()
                if self._launch(timeout):
                    return self
            raise RuntimeError(f"sshd could not listen on 127.0.0.1: {self._log_tail()} (log: {self.log})")
        except BaseException:
            self.stop()
            raise

    def _write_configs(self) -> None:
        self.config.write_text("\n".join((
            f"ListenAddress 127.0.0.1:{self.port}",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.workdir / 'authorized_keys'}",
            f"PidFile {self.workdir / 'sshd.pid'}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "UseDNS no",
            "MaxSessions 100",
            "MaxStartups 100:30:200",
            "LogLevel VERBOSE",
            # bash run by sshd sources ~/.bashrc unless SHLVL says it is nested: root's here runs `pyenv init`,
            # slow, and a session killed by drop_connections() mid-rehash leaves pyenv's lock behind, which
            # stalls every later login by 60 s. A lab node's sessions get sshd's plain environment instead.
            "SetEnv SHLVL=1",
            "Subsystem sftp internal-sftp",
            "")))
        self.ssh_config.write_text("\n".join((
            f"Host {' '.join(HOSTS)}",
            "    HostName 127.0.0.1",
            f"    Port {self.port}",
            "    User root",
            f"    IdentityFile {self.key}",
            "    IdentitiesOnly yes",
            "    StrictHostKeyChecking yes",
            f"    UserKnownHostsFile {self.known_hosts}",
            "    GlobalKnownHostsFile /dev/null",
            "    UpdateHostKeys no",
            "    LogLevel ERROR",
            "")))
        self.known_hosts.write_text(self.known_hosts_line())

    def known_hosts_line(self, key: Path | None = None) -> str:
        """The known_hosts line of this server's address and port, with its host key (or another key's)."""
        pub = Path(key or self.host_key).with_suffix(".pub").read_text().split()
        return f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n"

    def _launch(self, timeout: float) -> bool:
        """Starts sshd; True once its port accepts, False when it exited because the port was taken."""
        with self.log.open("ab") as log:
            start = log.tell()
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if "Address already in use" in self.log.read_text(errors="replace")[start:]:
                    self.proc = None
                    return False
                raise RuntimeError(f"sshd exited with {self.proc.returncode}: {self._log_tail()} (log: {self.log})")
            if self._answers():
                return True
            time.sleep(0.05)
        raise RuntimeError(f"sshd did not accept on 127.0.0.1:{self.port} in {timeout:.0f} s (log: {self.log})")

    def _answers(self) -> bool:
        """True when an SSH server greets on the port (not merely something listening there)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                return conn.recv(4).startswith(b"SSH-")
        except OSError:
            return False

    def _log_tail(self) -> str:
        try:
            lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return "no log"
        return lines[-1] if lines else "empty log"

    def connections(self) -> list[int]:
        """PIDs of every process the listener forked for a connection (and theirs: sessions' commands)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        return descendants(self.proc.pid)

    def drop_connections(self) -> None:
        """Breaks every established session (their sshd processes die) while the listener keeps listening."""
        kill_all(self.connections())

    def stop(self) -> None:
        """Kills the listener and every connection of it; safe to call twice."""
        if self.proc is None:
            return
        pids = self.connections()
        kill_all([self.proc.pid, *pids])
        self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self) -> SshServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
