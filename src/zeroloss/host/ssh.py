"""Reaching a lab host: OpenSSH itself (the user's ~/.ssh/config, keys, agent and ProxyJump apply), never a
password prompt (BatchMode), root through `sudo -n` when the login is not root.

Lost connections are noticed within ServerAliveInterval x ServerAliveCountMax seconds (6 s).
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass

from zeroloss.core.errors import ZeroLossError

ALIVE_S, ALIVE_COUNT = 2, 3
# the host's system Python, as Ansible's interpreter discovery finds it: not a `python3` that PATH may resolve to a
# user's shim (pyenv's shims run a rehash that waits on a lock), RHEL 8's platform-python where there is no python3
FIND_PYTHON = ('for p in /usr/bin/python3 /usr/libexec/platform-python /usr/local/bin/python3 python3; do '
               'if command -v "$p" >/dev/null 2>&1; then exec "$p" "$@"; fi; done; '
               'echo "python3: not found" >&2; exit 127')


def python_argv(*args: str) -> list[str]:
    """A remote argv running the host's system python3 with args (e.g. "-", "-u", "-c", CODE)."""
    return ["sh", "-c", FIND_PYTHON, "zl-python", *args]


@dataclass(frozen=True)
class SshTarget:
    """An `ssh` destination: a Host alias of the user's ssh config or [user@]host, with the ssh options
    the lab file gives (ssh_config: a config file instead of ~/.ssh/config; options: extra -o settings)."""

    target: str
    ssh_config: str | None = None
    options: tuple[str, ...] = ()
    sudo: str = "auto"  # auto: sudo -n unless the login is root; always; never

    def argv(self, remote: list[str] | None = None, tty: bool = False) -> list[str]:
        """The ssh command line that runs `remote` (an argv) on the host, as root when sudo allows."""
        out = ["ssh", "-T" if not tty else "-t", "-o", "BatchMode=yes", "-o", f"ServerAliveInterval={ALIVE_S}",
               "-o", f"ServerAliveCountMax={ALIVE_COUNT}", "-o", "ConnectTimeout=10"]
        if self.ssh_config:
            out += ["-F", self.ssh_config]
        for opt in self.options:
            out += ["-o", opt]
        out += ["--", self.target]  # ends ssh's options: a destination beginning with '-' stays a destination
        if remote is not None:
            out.append(self.wrap(remote))  # after '--' ssh reads no more options: the rest is the command
        return out

    def wrap(self, remote: list[str]) -> str:
        """The remote shell line: the command as root (sudo -n when needed and allowed)."""
        cmd = shlex.join(remote)
        if self.sudo == "never":
            return cmd
        if self.sudo == "always":
            return f"exec sudo -n {cmd}"
        return f'if [ "$(id -u)" = 0 ]; then exec {cmd}; else exec sudo -n {cmd}; fi'

    def run(self, remote: list[str], stdin: bytes = b"", timeout: float = 120) -> bytes:
        """Runs one command on the host over one login and returns its stdout; one-line errors."""
        try:
            r = subprocess.run(self.argv(remote), input=stdin, capture_output=True, timeout=timeout)
        except FileNotFoundError as e:
            raise ZeroLossError("cannot run ssh: OpenSSH's client is not installed", "run 'make setup'") from e
        except subprocess.TimeoutExpired as e:
            raise ZeroLossError(f"{self.target} did not finish `{shlex.join(remote)[:60]}` in {timeout:.0f} s") from e
        if r.returncode == 255:
            raise unreachable(self.target, r.stderr, self.ssh_config)
        if r.returncode != 0:
            why = last_line(r.stderr) or f"exit {r.returncode}"
            raise ZeroLossError(f"{self.target}: `{shlex.join(remote)[:60]}` failed: {why}", sudo_hint(r.stderr))
        return r.stdout


def last_line(err: bytes | str) -> str:
    text = err.decode(errors="replace") if isinstance(err, bytes) else err
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("Warning: Permanently")]
    return lines[-1] if lines else ""


def sudo_hint(err: bytes | str) -> str | None:
    text = err.decode(errors="replace") if isinstance(err, bytes) else err
    if "a password is required" in text or "sudo:" in text:
        return "the login is not root and sudo asks for a password: allow it NOPASSWD, or log in as root"
    return None


def unreachable(target: str, err: bytes | str, ssh_config: str | None = None) -> ZeroLossError:
    """The one-line error for an ssh that exited 255, its hint naming the ssh config file used."""
    return ZeroLossError(f"cannot reach {target} over SSH: {last_line(err) or 'ssh exited 255'}",
                         unreachable_hint(target, ssh_config))


def unreachable_hint(target: str, ssh_config: str | None = None) -> str:
    """What to try by hand: the same ssh login, with the same -F FILE."""
    config = f"-F {shlex.quote(ssh_config)} " if ssh_config else ""
    return f"check that `ssh {config}{shlex.quote(target)} true` works without a password prompt"


def check_destination(target: str, what: str) -> None:
    """Refuses an ssh destination ssh would read as an option (a leading '-') or that is empty."""
    if not target.strip() or target.startswith("-"):
        raise ZeroLossError(f"{what} {target!r} is not an ssh destination (it must not be empty or begin with '-')",
                            "give a Host of your ssh config, or [user@]host")
