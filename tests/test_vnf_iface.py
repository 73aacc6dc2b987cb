"""The one VNF interface (zeroloss.drivers.dpdk.vnf.Vnf): both kinds implement it, port_stats keeps one DPDK telemetry
connection and drops it when the VNF stops answering, placement says what each kind runs on, and a VM whose QEMU
dies at once is a one-line error through the shared socket client."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.dpdk.eal import Eal
from zeroloss.drivers.dpdk.telemetry import Telemetry
from zeroloss.drivers.dpdk.testpmd import TestPmd, TestPmdConfig
from zeroloss.drivers.dpdk.vnf import Placement, Vnf
from zeroloss.drivers.proc import ComponentDied, ManagedProcess
from zeroloss.drivers.vnf.domain import VmInterface, VmSpec
from zeroloss.drivers.vnf.vm import GuestVm


class FakeDpdk:
    """The telemetry socket of a DPDK process (SOCK_SEQPACKET, greeting then one JSON reply per query); answers
    `connections` connections, then stops accepting."""

    def __init__(self, path: Path, stats: dict, answers: int):
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.srv.bind(str(path))
        self.srv.listen(4)
        self.stats, self.answers, self.accepted = stats, answers, 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            conn, _ = self.srv.accept()
            self.accepted += 1
            conn.send(json.dumps({"version": "DPDK 23.11", "pid": 1, "max_output_len": 16384}).encode())
            while self.answers > 0:
                cmd = conn.recv(1024).decode()
                if not cmd:
                    break
                self.answers -= 1
                port = int(cmd.split(",")[1])
                conn.send(json.dumps({"/ethdev/stats": {**self.stats, "port": port}}).encode())
            conn.close()


class ProcessVnf(Vnf):
    """A VNF whose process is `sleep` and whose telemetry is a fake DPDK socket: what the interface adds on top
    of telemetry() is what is under test."""

    def __init__(self, tmp: Path):
        self.tel_path = tmp / "tel.sock"
        self.proc = ManagedProcess("sleeper", ["sleep", "30"], tmp / "sleep.log")
        self.lines: list[str] = []

    def start(self):
        self.proc.start()
        return self

    def stop(self):
        self.close_stats()
        self.proc.stop()

    def command(self, line):
        self.lines.append(line)

    def pause(self):
        pass

    def resume(self):
        pass

    def telemetry(self, timeout=1.0):
        return Telemetry(self.tel_path, timeout=timeout).connect(wait_s=0)

    def placement(self):
        return Placement(kind="process", cpus=(0,))


def test_port_stats_keeps_one_connection_and_drops_it_when_the_vnf_stops_answering(tmp_path):
    fake = FakeDpdk(tmp_path / "tel.sock", {"ipackets": 5, "opackets": 7}, answers=4)
    with ProcessVnf(tmp_path) as vnf:
        assert vnf.port_stats() == [{"ipackets": 5, "opackets": 7, "port": 0}, {"ipackets": 5, "opackets": 7,
                                                                                "port": 1}]
        assert vnf.port_stats()[1]["port"] == 1
        assert fake.accepted == 1  # one connection for both readings
        with pytest.raises(OSError):  # the fake hangs up: the reading fails and the connection is dropped
            vnf.port_stats()
        assert vnf._stats is None
        vnf.set_forward_mode("rxonly")
        assert vnf.lines == ["stop", "set fwd rxonly", "start"]
        vnf.health()
    with pytest.raises(ComponentDied, match="sleeper"):
        vnf.health()


def test_both_kinds_are_vnfs_and_say_what_they_run_on(tmp_path):
    pmd = TestPmd(TestPmdConfig(eal=Eal(lcores="0-1,3", file_prefix="unused")), tmp_path / "t.log")
    vm = GuestVm(vm_spec(tmp_path, emulator="/bin/false"), tmp_path / "vm", "VNF 1", tmp_path / "vm.log")
    assert isinstance(pmd, Vnf) and isinstance(vm, Vnf)
    assert pmd.placement() == Placement(kind="process", cpus=(0, 1, 3))
    place = vm.placement()
    assert place.kind == "vm" and place.cpus == (0, 1) and place.boot_s is None
    assert place.domain_xml == vm.xml and "<vcpupin" in place.domain_xml


def test_a_vm_whose_qemu_exits_at_once_is_one_line(tmp_path):
    vm = GuestVm(vm_spec(tmp_path, emulator="/bin/false"), tmp_path / "vm", "VNF 1", tmp_path / "vm.log")
    with pytest.raises(ZeroLossError) as e:
        vm.start()
    assert str(e.value).startswith("VNF 1: QEMU did not start: ") and "\n" not in str(e.value)
    assert not vm.proc.alive() and vm.ctl is None and vm.qmp is None


def vm_spec(tmp: Path, emulator: str) -> VmSpec:
    return VmSpec(name="zl-test", kernel="/g/vmlinuz", initrd="/g/initrd.gz", cmdline="console=ttyS0",
                  interfaces=(VmInterface(str(tmp / "v0.sock"), "52:54:00:7a:00:00"),
                              VmInterface(str(tmp / "v1.sock"), "52:54:00:7a:00:01")),
                  vcpu_pins=(1, 0), emulator_cpus=(0,), console=str(tmp / "console.log"),
                  ctl_socket=str(tmp / "ctl.sock"), telemetry_socket=str(tmp / "tel.sock"),
                  qmp_socket=str(tmp / "qmp.sock"), emulator=emulator)
