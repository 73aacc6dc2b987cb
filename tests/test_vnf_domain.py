"""The VNF guest's domain XML and QEMU command line (pure), the guest's argument packing, the telemetry relay's
host side against a fake guest, and the host audit reading the XML we generate."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.vnf.domain import (
    CTL_CHANNEL,
    TELEMETRY_CHANNEL,
    VmInterface,
    VmSpec,
    domain_xml,
    kernel_cmdline,
    qemu_argv,
)
from zeroloss.drivers.vnf.vm import GuestTelemetry
from zeroloss.host.domxml import parse_domain

ROOT = Path(__file__).resolve().parents[1]
R740 = ROOT / "tests" / "fixtures" / "host" / "r740xd"


def spec(**kw) -> VmSpec:
    base = dict(name="zl-vnf0", kernel="/g/vmlinuz", initrd="/g/initrd.gz", cmdline="console=ttyS0",
                interfaces=(VmInterface("/run/zl/v0.sock", "52:54:00:7a:00:00", queues=2, ring=1024),
                            VmInterface("/run/zl/v1.sock", "52:54:00:7a:00:01", queues=2, ring=1024)),
                vcpu_pins=(1, 0), emulator_cpus=(1,), cpu_flags=("-arch-capabilities",))
    base.update(kw)
    return VmSpec(**base)


def test_domain_xml_carries_what_the_audit_reads():
    dom = parse_domain(domain_xml(spec()), "gen.xml")
    assert dom.vcpupins == {0: (1,), 1: (0,)} and dom.emulatorpin == (1,)
    assert dom.hugepages and dom.hugepage_kb == 2048 and dom.memory_kb == 768 * 1024
    assert [(i.type, i.source, i.queues, i.rx_queue_size, i.tx_queue_size) for i in dom.interfaces] == [
        ("vhostuser", "/run/zl/v0.sock", 2, 1024, 1024), ("vhostuser", "/run/zl/v1.sock", 2, 1024, 1024)]
    root = ET.fromstring(domain_xml(spec()))
    assert root.get("type") == "kvm"
    assert root.find("memoryBacking/access").get("mode") == "shared"  # vhost-user maps the guest's memory
    assert root.find("cpu").get("mode") == "host-passthrough"
    assert root.find("cpu/feature").attrib == {"policy": "disable", "name": "arch-capabilities"}
    assert {c.find("target").get("name") for c in root.findall("devices/channel")} == {CTL_CHANNEL,
                                                                                       TELEMETRY_CHANNEL}
    assert [s.get("mode") for s in root.findall("devices/interface/source")] == ["server", "server"]


def test_tcg_domain_is_type_qemu_without_host_cpu_flags():
    root = ET.fromstring(domain_xml(spec(accel="tcg")))
    assert root.get("type") == "qemu" and root.find("cpu").get("mode") == "maximum"
    assert root.find("cpu/feature") is None
    argv = qemu_argv(spec(accel="tcg"))
    assert argv[argv.index("-accel") + 1] == "tcg,thread=multi" and argv[argv.index("-cpu") + 1] == "max"


def test_qemu_argv_matches_the_xml():
    argv = qemu_argv(spec())
    joined = " ".join(argv)
    assert argv[argv.index("-cpu") + 1] == "host,-arch-capabilities"
    assert argv[argv.index("-smp") + 1] == "2"
    assert "mem-path=/dev/hugepages,share=on,prealloc=on" in joined
    for k, sock in enumerate(("/run/zl/v0.sock", "/run/zl/v1.sock")):
        assert f"socket,id=vu{k},path={sock},server=on,wait=off" in joined
        assert f"vhost-user,id=net{k},chardev=vu{k},queues=2" in joined
    assert joined.count("rx_queue_size=1024,tx_queue_size=1024,mq=on,vectors=6") == 2
    assert f"name={CTL_CHANNEL}" in joined and f"name={TELEMETRY_CHANNEL}" in joined


@pytest.mark.parametrize("ring", [128, 2048, 4096])
def test_a_ring_qemu_cannot_have_is_one_line(ring):
    with pytest.raises(ZeroLossError) as e:
        spec(interfaces=(VmInterface("/s", "52:54:00:00:00:01", ring=ring),))
    assert "1024" in e.value.message and "\n" not in e.value.message


def test_kernel_cmdline_packs_testpmd_arguments_for_init():
    args = ["-l", "0-1", "--main-lcore", "0", "--", "-i", "--forward-mode=io", "--rxq=2"]
    line = kernel_cmdline(args, 176)
    assert line.startswith("console=ttyS0 ") and "hugepages=176" in line and " -- " not in line
    packed = line.split("zl.args=")[1]
    assert base64.b64decode(packed).decode().split("\n") == args


def test_guest_init_unpacks_the_arguments_as_testpmd_sees_them(tmp_path):
    """The exact extraction guest/init runs (sed + base64 -d, one argument per line), on a fake /proc/cmdline."""
    init = (ROOT / "guest" / "init").read_text()
    start = init.index("set -f")
    snippet = init[start:init.index("set +f", start) + len("set +f")].replace("/proc/cmdline", str(tmp_path / "c"))
    args = ["-l", "0-1", "--", "-i", "--eth-peer=0,52:54:00:00:00:01", "--txpkts=60"]
    (tmp_path / "c").write_text(kernel_cmdline(args, 64) + " quiet\n")
    out = subprocess.run(["sh", "-c", snippet + '\nfor a in "$@"; do echo "[$a]"; done'], capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == [f"[{a}]" for a in args]


class FakeGuest:
    """The host end of the telemetry channel as QEMU serves it, answered by a fake relay."""

    def __init__(self, path: Path, answer):
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(1)
        self.answer = answer
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        conn, _ = self.srv.accept()
        buf = b""
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                rid, _, cmd = line.decode().partition(" ")
                for reply in self.answer(rid, cmd):
                    conn.sendall(reply.encode() + b"\n")


def test_guest_telemetry_drops_late_replies_and_reports_errors(tmp_path):
    stats = {"ipackets": 5, "opackets": 7}

    def answer(rid, cmd):
        if cmd == "/ethdev/stats,1":
            yield f'{rid} {{"error": "testpmd telemetry not reachable"}}'
            return
        # a late answer to an earlier request, then this one
        yield f'{int(rid) - 1} {json.dumps({"/ethdev/stats": {"ipackets": -1}})}'
        yield f'{rid} {json.dumps({"/ethdev/stats": stats})}'

    FakeGuest(tmp_path / "tel.sock", answer)
    tel = GuestTelemetry(tmp_path / "tel.sock", timeout=2).connect()
    assert tel.ethdev_stats(0) == stats
    assert tel.ethdev_stats(0) == stats
    with pytest.raises(OSError, match="not reachable"):
        tel.ethdev_stats(1)


def test_guest_telemetry_times_out_on_a_paused_guest(tmp_path):
    FakeGuest(tmp_path / "tel.sock", lambda rid, cmd: iter(()))
    tel = GuestTelemetry(tmp_path / "tel.sock", timeout=0.3).connect()
    with pytest.raises(OSError):  # TimeoutError is an OSError: the bench leaves the VNF out of that reading
        tel.ethdev_stats(0)


def audit(xml: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zeroloss.cli", "host", "audit", "--root", str(R740),
                           "--ovs-state", "none", "--domain-xml", str(xml), "--json"], capture_output=True, text=True)


def guest_findings(r: subprocess.CompletedProcess) -> list[dict]:
    assert "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    found = doc["findings"] if isinstance(doc, dict) else doc
    return [f for f in found if "guest" in json.dumps(f) or "domain" in json.dumps(f)]


def test_audit_reads_the_bench_domain_and_names_what_a_2_core_bench_cannot_tune(tmp_path):
    """The bench's own guest (2 MiB pages, emulator beside a vCPU on 2 cores) is accepted and its compromises
    are findings."""
    xml = tmp_path / "bench.xml"
    xml.write_text(domain_xml(spec()))
    r = audit(xml)
    assert r.returncode in (0, 2), r.stderr
    rules = {f.get("rule") or f.get("id") for f in guest_findings(r)}
    assert {"vm-hugepages", "emulator-on-vcpu"} <= rules, rules


def test_audit_passes_the_domain_tuned_for_the_r740xd(tmp_path):
    """The same generator with the settings a tuned host gets (vCPUs on isolated cores of the NICs' node, emulator
    on housekeeping cores, 1 GB pages, 1024 rings, as many queue pairs as the DPDK ports' RX queues) passes every
    guest rule."""
    inv = json.loads(subprocess.run([sys.executable, "-m", "zeroloss.cli", "host", "inventory", "--root", str(R740),
                                     "--ovs-state", "none", "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    isolated = inv.get("isolated") or inv.get("cpus", {}).get("isolated")
    assert isolated, "the fixture has isolated CPUs"
    xml = tmp_path / "tuned.xml"
    tuned = spec(vcpu_pins=(10, 12, 14, 16), emulator_cpus=(0, 2), hugepage_kb=1048576, memory_mb=4096)
    xml.write_text(domain_xml(tuned))
    r = audit(xml)
    assert guest_findings(r) == [], guest_findings(r)
