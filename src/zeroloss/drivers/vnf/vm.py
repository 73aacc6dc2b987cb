"""The VNF as a QEMU/KVM virtual machine: the guest built by scripts/build-guest.sh, booted straight into
dpdk-testpmd, its virtio-net devices vhost-user ports of the bench's OVS.

QEMU is started directly from the command line its domain XML stands for (domain.qemu_argv), as a child of
zeroloss like every other process of the bench (killed with us, pid file, watched during trials); the domain
XML is written beside it and kept in the result file. Why not libvirt: docs/vnf.md.

Talking to the guest: QMP (pin the vCPU threads, pause/continue the guest, quit), the virtio-serial channel
org.zeroloss.ctl (testpmd's standard input: its commands) and org.zeroloss.telemetry (guest/agent.c relays
DPDK telemetry: the guest testpmd's ethdev counters for the loss ledger). The console is a file.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import write_text_atomic

from ..dpdk.telemetry import EthdevTelemetry, reply_value
from ..dpdk.vnf import Placement, Vnf
from ..proc import ManagedProcess
from ..unixsock import UnixClient
from .domain import VmSpec, domain_xml, qemu_argv

GUEST_DIR = Path(__file__).resolve().parents[4] / "guest" / "build"
KVM = Path("/dev/kvm")


def guest_files(guest_dir: Path = GUEST_DIR) -> tuple[Path, Path]:
    """(vmlinuz, initrd.gz) of the built guest; a one-line error when it was never built."""
    kernel, initrd = guest_dir / "vmlinuz", guest_dir / "initrd.gz"
    if not (kernel.is_file() and initrd.is_file()):
        raise ZeroLossError(f"the VNF guest is not built ({guest_dir} has no vmlinuz/initrd.gz)",
                            "run 'make setup' (it runs scripts/build-guest.sh), or use --vnf process")
    return kernel, initrd


def guest_manifest(guest_dir: Path = GUEST_DIR) -> dict:
    """What went into the built guest (kernel and DPDK package versions, modules), for the result file."""
    try:
        return json.loads((guest_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def qemu_binary() -> str:
    path = shutil.which("qemu-system-x86_64")
    if path is None:
        raise ZeroLossError("qemu-system-x86_64 is not installed", "run 'make setup' (Debian package qemu-system-x86), "
                                                                   "or use --vnf process")
    return path


def kvm_usable() -> str | None:
    """None when guests can run under KVM here, else why not."""
    try:
        fd = os.open(KVM, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return f"{KVM}: {e.strerror}"
    os.close(fd)
    return None if shutil.which("qemu-system-x86_64") else "qemu-system-x86_64 is not installed"


def hardware_virt() -> str | None:
    """None when this host's KVM runs guests on hardware virtualization (vmx/svm), else why it cannot boot a stock
    guest kernel in reasonable time. Some hosts expose /dev/kvm without it: KVM-PVM (a nested VM's pagetable-based
    KVM, /sys/module/kvm_pvm) runs a Debian cloud kernel so slowly that it had not left early memory set-up after 4
    minutes here, where QEMU's own emulator (TCG) boots the same guest to testpmd's prompt in about 15 s."""
    why = kvm_usable()
    if why:
        return why
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        flags = set()
    if not flags & {"vmx", "svm"}:
        pvm = " (KVM-PVM)" if Path("/sys/module/kvm_pvm").exists() else ""
        return f"/dev/kvm{pvm} without vmx/svm: a stock guest kernel takes minutes to boot under it"
    return None


def resolve_vnf(choice: str) -> str:
    """--vnf auto|vm|process -> vm or process: auto is vm where KVM runs guests on hardware virtualization."""
    if choice == "auto":
        return "process" if hardware_virt() else "vm"
    return choice


def resolve_accel(choice: str) -> tuple[str, str]:
    """vnf_accel auto|kvm|tcg -> (kvm or tcg, why): auto is kvm with hardware virtualization, else tcg."""
    if choice != "auto":
        return choice, f"vnf_accel={choice}"
    why = hardware_virt()
    return ("tcg", f"QEMU's emulator (TCG), not KVM: {why}") if why else ("kvm", "KVM on hardware virtualization")


class Qmp:
    """A QMP connection (QEMU's JSON monitor): commands in order, events skipped."""

    def __init__(self, path: Path, timeout: float = 5.0):
        self.conn = UnixClient(path, "QEMU's QMP socket", "see the VM's log (--keep-logs)", timeout=timeout)

    def connect(self, wait_s: float, alive: Callable[[], bool]) -> Qmp:
        """Connects while QEMU is alive, up to wait_s; reads the greeting and enters command mode."""
        self.conn.connect(wait_s, alive=alive)
        # QEMU greets only once its vhost-user netdevs are connected (it waits for OVS there): allow for it
        self.conn.readline(max(self.conn.timeout, wait_s))
        self.execute("qmp_capabilities")
        return self

    def execute(self, command: str, **arguments) -> object:
        """Runs one QMP command and returns its result; QEMU's refusal is a ZeroLossError."""
        msg = {"execute": command, **({"arguments": arguments} if arguments else {})}
        self.conn.send(json.dumps(msg).encode() + b"\n")
        while True:
            reply = json.loads(self.conn.readline())
            if "event" in reply:
                continue
            if "error" in reply:
                raise ZeroLossError(f"QEMU refused {command}: {reply['error'].get('desc', reply['error'])}")
            return reply.get("return")

    def close(self) -> None:
        """Closes the connection."""
        self.conn.close()


class GuestTelemetry(EthdevTelemetry):
    """The guest testpmd's DPDK telemetry through the relay on the org.zeroloss.telemetry channel: the same
    queries as dpdk.telemetry.Telemetry. A paused guest does not answer: the query times out (OSError), and a
    reply that comes late is told apart by its request id and dropped."""

    def __init__(self, path: Path, timeout: float = 1.0, check: Callable[[], None] | None = None):
        super().__init__(UnixClient(path, "the guest's telemetry channel", "is the VNF VM running? see its console",
                                    timeout=timeout, check=check))
        self.seq = 0

    def connect(self, wait_s: float = 0.0) -> Self:
        """Connects to the channel QEMU serves (it is there as long as QEMU runs: no wait by default)."""
        self.conn.connect(wait_s)
        return self

    def query(self, command: str) -> object:
        """Sends one command with a fresh request id and returns the value of the reply that carries it."""
        if not self.conn.connected:
            self.connect()
        self.seq += 1
        self.conn.send(f"{self.seq} {command}\n".encode())
        deadline = time.monotonic() + self.conn.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the guest did not answer {command}")
            line = self.conn.readline(left)
            rid, _, body = line.decode(errors="replace").partition(" ")
            if rid != str(self.seq):
                continue  # the late answer to a request given up on
            reply = json.loads(body)
            if "error" in reply:
                raise OSError(f"guest telemetry: {reply['error']}")
            return reply_value(reply, command)


class GuestVm(Vnf):
    """One VNF virtual machine: ``with GuestVm(spec, dir, name) as vm:`` boots it, destroys it on exit. As a VNF it
    is the VM kind (dpdk.vnf.Vnf): its commands go to the guest testpmd's prompt over org.zeroloss.ctl."""

    settle_s = 0.2

    def __init__(self, spec: VmSpec, run_dir: Path, label: str, log_path: Path, boot_timeout_s: float = 60.0):
        self.spec = spec
        self.dir = run_dir
        self.label = label
        self.boot_timeout_s = boot_timeout_s
        self.console = Path(spec.console)
        argv = ["taskset", "-c", ",".join(map(str, spec.emulator_cpus)), *qemu_argv(spec)]
        self.proc = ManagedProcess(f"{label} (qemu-system-x86_64)", argv, log_path)
        self.qmp: Qmp | None = None
        self.ctl: UnixClient | None = None
        self.boot_s: float | None = None
        self.vcpu_threads: dict[int, int] = {}
        self.paused = False

    @property
    def xml(self) -> str:
        return domain_xml(self.spec)

    def start(self) -> Self:
        """Writes the domain XML, starts QEMU, pins the vCPUs and waits for the guest testpmd's prompt."""
        self.dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.dir / "domain.xml", self.xml)
        started = time.monotonic()
        self.proc.start()
        try:
            try:
                self.qmp = Qmp(Path(self.spec.qmp_socket)).connect(30.0, self.proc.alive)
            except (OSError, ZeroLossError) as e:
                raise ZeroLossError(f"{self.label}: QEMU did not start: {self.proc.reason() or e} "
                                    f"(log: {self.proc.log_path})") from None
            self._pin()
            self.ctl = UnixClient(self.spec.ctl_socket, f"{self.label}'s control channel (org.zeroloss.ctl)",
                                  f"see {self.console}").connect()
            self._await_boot(started)
        except BaseException:
            self.stop()
            raise
        return self

    def _pin(self) -> None:
        """Each vCPU thread onto its host CPU (libvirt's <vcpupin>); the emulator threads stay where taskset
        put QEMU (<emulatorpin>)."""
        cpus = self.qmp.execute("query-cpus-fast") or []
        for c in cpus:
            tid, idx = int(c["thread-id"]), int(c["cpu-index"])
            self.vcpu_threads[idx] = tid
            os.sched_setaffinity(tid, {self.spec.vcpu_pins[idx]})

    def _await_boot(self, started: float) -> None:
        deadline = started + self.boot_timeout_s
        while True:
            text = self.console.read_text(errors="replace") if self.console.exists() else ""
            if "testpmd> " in text:
                self.boot_s = round(time.monotonic() - started, 2)
                if "Not all ports were started" in text or "Fail to configure port" in text:
                    raise ZeroLossError(f"{self.label}: the guest's testpmd could not start its ports: "
                                        f"{self.console_tail(3)}")
                return
            if not self.proc.alive():
                raise ZeroLossError(f"{self.label}: QEMU exited during boot ({self.proc.reason()}); console: "
                                    f"{self.console_tail(3)}")
            if "zl-guest: testpmd exited" in text:
                raise ZeroLossError(f"{self.label}: the guest's testpmd exited during start: {self.console_tail(4)}")
            if time.monotonic() > deadline:
                raise ZeroLossError(f"{self.label}: the guest did not reach the testpmd prompt within "
                                    f"{self.boot_timeout_s:.0f} s; console: {self.console_tail(3)}",
                                    f"see {self.console}; a slow host may need --set vnf_boot_timeout_s=120")
            time.sleep(0.1)

    def console_tail(self, lines: int) -> str:
        text = self.console.read_text(errors="replace") if self.console.exists() else ""
        tail = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
        return " | ".join(tail) or "(empty)"

    def command(self, line: str) -> None:
        """Types one command at the guest testpmd's prompt."""
        if self.ctl is None:
            raise ZeroLossError(f"{self.label} is not running")
        self.ctl.send(line.encode() + b"\n")

    def pause(self) -> None:
        """Stops the guest's vCPUs (QMP stop, as virsh suspend): frames wait in its virtio rings."""
        if self.qmp is not None and self.proc.alive():
            self.qmp.execute("stop")
            self.paused = True

    def resume(self) -> None:
        """Lets a paused guest run again (QMP cont)."""
        if self.qmp is not None and self.proc.alive() and self.paused:
            self.qmp.execute("cont")
            self.paused = False

    def telemetry(self, timeout: float = 1.0) -> GuestTelemetry:
        """A new connection to the guest testpmd's telemetry, through the relay; QEMU's health is checked while a
        reply is awaited."""
        return GuestTelemetry(Path(self.spec.telemetry_socket), timeout, self.health).connect()

    def placement(self) -> Placement:
        """A VM: its vCPUs' and emulator threads' host CPUs, its domain XML and boot time."""
        cpus = tuple(sorted({*self.spec.vcpu_pins, *self.spec.emulator_cpus}))
        return Placement(kind="vm", cpus=cpus, domain_xml=self.xml, boot_s=self.boot_s)

    def stop(self) -> None:
        """testpmd quits and the guest powers off; QMP quit, then kill, if it does not within seconds. A QEMU
        stopped by a signal is let run first; one held by a debugger is killed."""
        self.close_stats()
        if not self.proc.thaw():
            self.ctl = self._close(self.ctl)
            self.qmp = self._close(self.qmp)
        try:
            self.resume()
        except (ZeroLossError, OSError):
            pass
        if self.ctl is not None and self.proc.alive():
            try:
                self.command("quit")
                self.proc.proc.wait(5)
            except Exception:
                pass
        if self.qmp is not None and self.proc.alive():
            try:
                self.qmp.execute("quit")
                self.proc.proc.wait(3)
            except Exception:
                pass
        self.ctl = self._close(self.ctl)
        self.qmp = self._close(self.qmp)
        self.proc.stop()

    @staticmethod
    def _close(conn: UnixClient | Qmp | None) -> None:
        """Closes a connection to QEMU, if open; None, for the attribute that held it."""
        if conn is not None:
            conn.close()
        return None
