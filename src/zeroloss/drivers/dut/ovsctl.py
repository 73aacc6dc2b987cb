"""How zeroloss talks to its private OVS: ovs-vsctl, ovs-ofctl and ovs-appctl calls with a deadline, the daemons'
health asked while one waits (the base of drivers.dut.ovs.Ovs)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from zeroloss.core.errors import ZeroLossError

from ..proc import ComponentDied, ManagedProcess, check_alive
from .unixctl import Unixctl

CALL_S = 30.0   # how long a configuration call (ovs-vsctl, ovs-ofctl, ovs-appctl) may go unanswered
READ_S = 3.0    # the same for the readings around each trial: a daemon that does not answer is a fault
CHECK_S = 0.25  # how often a call that has not returned asks the daemons' health


def _short(arg: str) -> str:
    """An argument as an error message shows it: our private socket paths by their file name."""
    return arg.rsplit("/", 1)[-1] if arg.startswith(("/", "unix:/")) else arg


class OvsCtl:
    """The calls to ovsdb-server and ovs-vswitchd of one run directory; Ovs sets the state below."""

    rundir: Path
    flows: dict[str, list[str]]
    meters: dict[str, list[str]]
    db_sock: Path
    vswitchd_ctl: Path
    ovsdb: ManagedProcess | None
    vswitchd: ManagedProcess | None
    _unixctl: Unixctl | None

    def close_unixctl(self) -> None:
        """Closes the kept unixctl connection to ovs-vswitchd (a new one opens at the next command)."""
        if self._unixctl is not None:
            self._unixctl.close()
            self._unixctl = None

    def processes(self) -> list[ManagedProcess]:
        """ovsdb-server and ovs-vswitchd-dpdk as they run now (vswitchd is a new process after a restart)."""
        return [p for p in (self.ovsdb, self.vswitchd) if p is not None]

    def health(self) -> None:
        """Raises ComponentDied naming a daemon that is no longer running or is stopped."""
        check_alive(self.processes())

    def vsctl(self, *args: str, timeout: float = CALL_S) -> str:
        """An ovs-vsctl command to our database (--no-wait: never blocks on a vswitchd that is down or busy,
        BRIEF §7); ComponentDied when ovsdb-server does not answer within timeout."""
        return self._run(["ovs-vsctl", f"--db=unix:{self.db_sock}", "--no-wait", *args], timeout=timeout)

    def appctl(self, *args: str, timeout: float = CALL_S) -> str:
        """An ovs-appctl command to our vswitchd, through the OVS Python unixctl client."""
        if self._unixctl is None:
            who = f"{self.vswitchd.name} (pid {self.vswitchd.pid})" if self.vswitchd else "ovs-vswitchd"
            self._unixctl = Unixctl(self.vswitchd_ctl, who, check=self.health)
        return self._unixctl.call(*args, timeout=timeout)

    def ofctl(self, cmd: str, bridge: str, *args: str, version: str = "OpenFlow13", timeout: float = CALL_S) -> str:
        """An ovs-ofctl command to one of our bridges."""
        return self._run(["ovs-ofctl", "-O", version, "--names", cmd, f"unix:{self.rundir / (bridge + '.mgmt')}",
                          *args], timeout=timeout)

    def _run(self, argv: list[str], check: bool = True, timeout: float = CALL_S, guard: bool = True) -> str:
        """An OVS tool's output, the tool killed after timeout (ComponentDied naming the daemon that does not
        answer); with guard, the daemons' health is asked every CHECK_S while it runs."""
        try:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            raise ZeroLossError(f"cannot run {argv[0]}: {e.strerror}", "run 'make setup'") from e
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    out, err = p.communicate(timeout=max(0.0, min(CHECK_S, deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    if guard:
                        self.health()  # a stopped or dead daemon is named now, not after the timeout
                    if time.monotonic() >= deadline:
                        # name the daemon that does not answer, not only the tool that waited for it
                        daemon = self.ovsdb if argv[0] == "ovs-vsctl" else self.vswitchd
                        who = f"{daemon.name} (pid {daemon.pid})" if daemon and daemon.alive() else "OVS"
                        raise ComponentDied(f"{who} did not answer {' '.join(_short(a) for a in argv[:3])} in "
                                            f"{timeout:.0f} s (see {self.rundir})") from None
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        if check and p.returncode != 0:
            msg = (err.strip() or out.strip()).splitlines()
            what = next((ln for ln in msg if "server returned an error" not in ln), msg[-1] if msg else "")
            raise ZeroLossError(f"{' '.join(_short(a) for a in argv[:4])} failed: "
                                f"{what or 'exit ' + str(p.returncode)}")
        return out

    def _wait_path(self, path: Path, proc: ManagedProcess, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            if not proc.alive():
                raise ZeroLossError(f"{proc.name} exited before it was ready: {proc.reason()} (log: {proc.log_path})")
            if time.monotonic() > deadline:
                raise ZeroLossError(f"{proc.name} was not ready after {timeout:.0f} s (log: {proc.log_path})")
            time.sleep(0.05)
